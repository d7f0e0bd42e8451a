package quarantine

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// velocityOf is a seat's velocity value as of the last tick.
func velocityOf(t *testing.T, d *Detector, seat string) float64 {
	t.Helper()
	for _, s := range d.Status().Seats {
		if s.Seat == seat {
			require.Equal(t, "velocity", s.Signals[Velocity-1].Signal)
			return s.Signals[Velocity-1].Value
		}
	}
	t.Fatalf("seat %s not tracked", seat)
	return 0
}

// The velocity signal is the bid rate over exactly the window (the partial
// sub-bucket and the five before it) against the baseline's rate: a seat
// that goes from 4 to 42 bids a second reads 10.5 at every tick once the
// window holds only the new rate (not 9, as over one sub-bucket more), and
// is quarantined over a threshold of 10.
func TestVelocityOverExactlyItsWindow(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[3].rate = jumpAt(hour, 4, 42)
	s := newSim(t, set, seats...)
	s.run(hour, tick, nil)
	require.InDelta(t, 1, velocityOf(t, s.d, "s3"), 1e-6, "steady")
	s.run(set.Window, tick, nil)
	// From here the window holds only the new rate; the baseline stopped
	// learning when the signal went over (and only old sub-buckets left the
	// window before that).
	for range 25 {
		s.step(tick)
		require.InDelta(t, 10.5, velocityOf(t, s.d, "s3"), 1e-6, "at %v", s.elapsed())
	}
	s.untilQuarantined("s3", time.Minute, tick)
	require.Equal(t, "velocity", s.state("s3"))
}

// Any is false until a seat is quarantined, and false again once none is.
func TestAnyFalseWhenNoneQuarantined(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[0].reject = 0.9
	s := newSim(t, set)
	require.False(t, s.d.Any(), "a new detector")
	require.Empty(t, s.d.Quarantined("", "s0"))
	s.seats = seats
	s.run(10*time.Second, tick, nil)
	require.False(t, s.d.Any(), "seats tracked, none quarantined")
	s.untilQuarantined("s0", 3*time.Minute, tick)
	require.True(t, s.d.Any())
	require.NoError(t, s.d.Release("s0"))
	require.False(t, s.d.Any(), "released by an operator")
	require.Empty(t, s.d.Quarantined("", "s0"))

	set.Operator = []string{"s9"}
	require.NoError(t, s.d.Update(set))
	require.True(t, s.d.Any())
	set.Operator = nil
	require.NoError(t, s.d.Update(set))
	require.False(t, s.d.Any(), "the operator seat removed")
}

// measured returns a seat of a detector under set whose window holds w
// (its priced bids all at a price of 1) and whose baseline holds folds
// sub-buckets of bids bids (all priced, at 1, at one bid a second), seen
// at rotations window boundaries, measured over a whole window.
func measured(t *testing.T, set Settings, w counts, folds int, bids float64, rotations int) *Seat {
	t.Helper()
	d := New(Options{Now: func() time.Time { return epoch0 }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(set))
	s := &Seat{d: d, win: w, rotations: rotations}
	dt := new(detail)
	dt.ring[0][priceBin(1)] = w.priced
	dt.base[priceBin(1)] = float32(bids)
	s.det.Store(dt)
	s.base = baseline{folds: folds, bids: bids, priced: bids, rate: 1, rateW: 1}
	s.measure(&d.set, set.Window)
	return s
}

// The thresholds' boundaries: a signal is over only when its value is
// greater than the threshold (the price's lower side only when under
// priceDrop); a window is judged from exactly minSamples bids (priced bids
// for price); a baseline is warm from exactly ringSize folds and
// minSamples bids; novelty is judged from exactly noveltyRotations window
// boundaries, and only once the seat has its detail.
func TestThresholdBoundaries(t *testing.T) {
	set := defaultSettings() // minSamples 100; rejections 0.5, novelty 0.8; priceDrop 0.55 by default
	th := set.Thresholds
	min := uint32(set.MinSamples)
	warm := func(w counts) *Seat { return measured(t, set, w, ringSize, float64(min), noveltyRotations) }

	// Over is strict.
	require.False(t, warm(counts{bids: 100, rejected: 50}).over(int(Rejections-1), &th), "0.5 is not over 0.5")
	require.True(t, warm(counts{bids: 100, rejected: 51}).over(int(Rejections-1), &th))
	require.False(t, warm(counts{bids: 100, novel: 80}).over(int(Novelty-1), &th), "0.8 is not over 0.8")
	require.True(t, warm(counts{bids: 100, novel: 81}).over(int(Novelty-1), &th))
	s := warm(counts{bids: 100})
	s.value[Velocity-1] = th.Velocity
	require.False(t, s.over(int(Velocity-1), &th))
	s.value[Velocity-1] = th.Velocity * 1.0001
	require.True(t, s.over(int(Velocity-1), &th))

	// Price, both sides: over th.Price only above it, under priceDrop only
	// below it; the reason reads the lower side when the upper is not over.
	p := warm(priced(min))
	require.True(t, p.judged[Price-1])
	drop := p.d.set.PriceDrop
	p.value[Price-1], p.low = th.Price, drop
	require.False(t, p.over(int(Price-1), &th), "at both thresholds")
	p.value[Price-1] = th.Price * 1.0001
	require.True(t, p.over(int(Price-1), &th))
	p.value[Price-1], p.low = th.Price, drop*0.9999
	require.True(t, p.over(int(Price-1), &th))
	v, limit, under := p.reading(Price, &th)
	require.True(t, under, "the upper side at its threshold is not over: the lower side is the reason")
	require.Equal(t, drop*0.9999, v)
	require.Equal(t, drop, limit)

	// Judged from exactly minSamples bids in the window.
	require.True(t, warm(counts{bids: min, rejected: min}).judged[Rejections-1])
	require.False(t, warm(counts{bids: min - 1, rejected: min - 1}).judged[Rejections-1])
	require.True(t, warm(counts{bids: min}).judged[Velocity-1])
	require.False(t, warm(counts{bids: min - 1}).judged[Velocity-1])
	require.True(t, warm(counts{bids: min}).judged[Novelty-1])
	require.False(t, warm(counts{bids: min - 1}).judged[Novelty-1])

	// Price: minSamples priced bids in the window and in the baseline.
	require.False(t, warm(priced(min - 1)).judged[Price-1])
	require.False(t, warm(counts{bids: min, priced: min - 1}).judged[Price-1], "bids are not priced bids")
	require.InDelta(t, 1, warm(priced(min)).value[Price-1], 1e-9, "the same prices read 1")
	require.InDelta(t, 1, warm(priced(min)).low, 1e-9)
	lowBase := warm(priced(min))
	lowBase.base.priced = float64(min) - 0.5
	lowBase.measure(&lowBase.d.set, set.Window)
	require.False(t, lowBase.judged[Price-1], "a baseline under minSamples priced bids")

	// Warm: ringSize folds and minSamples bids in the baseline.
	require.True(t, measured(t, set, counts{bids: min}, ringSize, float64(min), 0).warm(set.MinSamples))
	require.False(t, measured(t, set, counts{bids: min}, ringSize-1, float64(min), 0).warm(set.MinSamples))
	require.False(t, measured(t, set, counts{bids: min}, ringSize, float64(min)-0.5, 0).warm(set.MinSamples))
	require.False(t, measured(t, set, priced(min), ringSize-1, float64(min), noveltyRotations).judged[Price-1])
	require.False(t, measured(t, set, counts{bids: min}, ringSize-1, float64(min), noveltyRotations).judged[Velocity-1])

	// Novelty: noveltyRotations window boundaries, and the seat's detail
	// (the sketches it is probed against).
	require.True(t, measured(t, set, counts{bids: min}, ringSize, float64(min), noveltyRotations).judged[Novelty-1])
	require.False(t, measured(t, set, counts{bids: min}, ringSize, float64(min), noveltyRotations-1).judged[Novelty-1])
	bare := measured(t, set, counts{bids: min}, ringSize, float64(min), noveltyRotations)
	bare.det.Store(nil)
	bare.measure(&bare.d.set, set.Window)
	require.False(t, bare.judged[Novelty-1], "no detail: nothing to probe against")

	// Velocity: the window's rate against the baseline's, floored at
	// minSamples per window.
	vel := measured(t, set, counts{bids: 600}, ringSize, float64(min), 0)
	vel.base.rate = 2
	vel.measure(&vel.d.set, set.Window)
	require.InDelta(t, 5, vel.value[Velocity-1], 1e-9, "600 bids a minute against 2 a second")
	require.Zero(t, (&baseline{}).perSecond(), "no fold yet: 0, not NaN")
	vel.base.rate = 1 // under the floor of 100 bids a minute
	vel.measure(&vel.d.set, set.Window)
	require.InDelta(t, 6, vel.value[Velocity-1], 1e-9)
}

// priced is a window of n bids, all priced.
func priced(n uint32) counts { return counts{bids: n, priced: n} }

// The dwell, ttl and calm boundaries: a signal over for exactly the dwell
// has dwelt; a seat is released at exactly ttl after its quarantine when
// calm 0 (and not a tick before).
func TestDwellAndTTLBoundaries(t *testing.T) {
	now := epoch0
	s := &Seat{}
	s.overSince[Price-1] = now.Add(-30 * time.Second)
	sig, ok := s.dwelt(now, 30*time.Second)
	require.True(t, ok, "over for exactly the dwell")
	require.Equal(t, Price, sig)
	_, ok = s.dwelt(now.Add(-time.Nanosecond), 30*time.Second)
	require.False(t, ok)
	// Ties go to the first in Measured order; the longest over wins.
	s.overSince[Rejections-1] = s.overSince[Price-1]
	sig, _ = s.dwelt(now, 30*time.Second)
	require.Equal(t, Rejections, sig)
	s.overSince[Velocity-1] = now.Add(-time.Minute)
	sig, _ = s.dwelt(now, 30*time.Second)
	require.Equal(t, Velocity, sig)

	set := defaultSettings()
	set.Calm = 0
	seats := steadySeats(4)
	seats[0].median = func(t time.Duration) float64 {
		if t >= hour && t < hour+2*time.Minute {
			return 10
		}
		return 1
	}
	sim := newSim(t, set, seats...)
	sim.run(hour, tick, nil)
	at := sim.untilQuarantined("s0", 2*time.Minute, tick)
	for sim.elapsed() < at+set.TTL-tick {
		sim.step(tick)
	}
	require.Equal(t, "price", sim.state("s0"), "a tick before ttl")
	sim.step(tick)
	require.Empty(t, sim.state("s0"), "released at exactly ttl")
}

// After ttl, a seat is released at exactly calm after every signal went
// under its threshold (not a tick later).
func TestReleaseAtExactlyCalm(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[0].median = func(t time.Duration) float64 {
		if t >= hour && t < hour+15*time.Minute { // past ttl
			return 10
		}
		return 1
	}
	s := newSim(t, set, seats...)
	s.run(hour, tick, nil)
	s.untilQuarantined("s0", 2*time.Minute, tick)
	seat := s.d.tab.lookup(s.d.keyHash("s0"))
	for seat.calmSince.IsZero() || s.now.Before(seat.calmSince.Add(set.Calm-tick)) {
		require.Less(t, s.elapsed(), hour+30*time.Minute, "never calm")
		s.step(tick)
		require.Equal(t, "price", s.state("s0"))
	}
	require.Equal(t, seat.calmSince.Add(set.Calm-tick), s.now)
	s.step(tick)
	require.Empty(t, s.state("s0"), "released at exactly calm")
}

// The settings' bounds: shares in (0, 1], priceDrop in [0, 1) (0: its
// default), ratios and window, baselineWindow and ttl > 0, dwell, calm and
// valveWindow >= 0, minSamples > 0, maxSeats >= 0, maxTTL 0 or >= ttl;
// each error names its key.
func TestSettingsBounds(t *testing.T) {
	f := func(want string, change func(s *Settings)) {
		t.Helper()
		set := defaultSettings()
		change(&set)
		errs := set.Validate()
		if want == "" {
			require.Empty(t, errs)
			return
		}
		require.Len(t, errs, 1)
		require.ErrorContains(t, errs[0], want)
	}
	f("", func(s *Settings) { s.Thresholds.Rejections, s.Thresholds.Novelty, s.MaxShare = 1, 1, 1 })
	f("quarantine.thresholds.rejections:", func(s *Settings) { s.Thresholds.Rejections = 0 })
	f("quarantine.thresholds.rejections:", func(s *Settings) { s.Thresholds.Rejections = 1.0001 })
	f("quarantine.thresholds.novelty:", func(s *Settings) { s.Thresholds.Novelty = 0 })
	f("quarantine.thresholds.novelty:", func(s *Settings) { s.Thresholds.Novelty = 1.0001 })
	f("quarantine.maxShare:", func(s *Settings) { s.MaxShare = 0 })
	f("quarantine.maxShare:", func(s *Settings) { s.MaxShare = 1.0001 })
	f("", func(s *Settings) { s.Thresholds.Price, s.Thresholds.Velocity = 1e-9, 1e-9 })
	f("quarantine.thresholds: price and velocity", func(s *Settings) { s.Thresholds.Price = 0 })
	f("quarantine.thresholds: price and velocity", func(s *Settings) { s.Thresholds.Velocity = 0 })
	f(`seat "a": quarantine.rejections:`, func(s *Settings) {
		o := s.Thresholds
		o.Rejections = 1.0001
		s.Overrides = map[string]Thresholds{"a": o}
	})
	f("", func(s *Settings) { s.MinSamples = 1 })
	f("quarantine.minSamples:", func(s *Settings) { s.MinSamples = 0 })
	f("", func(s *Settings) {
		s.Dwell, s.Calm, s.ValveWindow, s.Window, s.BaselineWindow, s.TTL = 0, 0, 0, 1, 1, 1
	})
	f("quarantine.window: must be > 0", func(s *Settings) { s.Window = 0 })
	f("quarantine.baselineWindow: must be > 0", func(s *Settings) { s.BaselineWindow = 0 })
	f("quarantine.ttl: must be > 0", func(s *Settings) { s.TTL = 0 })
	f("quarantine.dwell: must not be negative", func(s *Settings) { s.Dwell = -1 })
	f("quarantine.calm: must not be negative", func(s *Settings) { s.Calm = -1 })
	f("quarantine.valveWindow: must not be negative", func(s *Settings) { s.ValveWindow = -1 })
	f("", func(s *Settings) { s.PriceDrop = 0 })
	f("", func(s *Settings) { s.PriceDrop = 0.9999 })
	f("quarantine.priceDrop:", func(s *Settings) { s.PriceDrop = 1 })
	f("quarantine.priceDrop:", func(s *Settings) { s.PriceDrop = -0.0001 })
	f("", func(s *Settings) { s.MaxSeats = 0 })
	f("quarantine.maxSeats:", func(s *Settings) { s.MaxSeats = -1 })
	f("", func(s *Settings) { s.MaxTTL = 0 })
	f("", func(s *Settings) { s.MaxTTL = s.TTL })
	f("quarantine.maxTTL:", func(s *Settings) { s.MaxTTL = s.TTL - 1 })
	f("quarantine.maxTTL:", func(s *Settings) { s.MaxTTL = -1 })

	require.Equal(t, "operator", Operator.String())
	require.Equal(t, "unknown", Signal(len(signalNames)).String())
}

// A seat is active (the safety valve's denominator) from exactly
// minSamples bids in its window, and gets its detail (price histograms,
// novelty sketches) at the first tick after exactly minSamples bids (its
// priced and novel counts start there); a new seat's first tick reads a
// velocity of 0: its window covers no time yet, and a division by that
// zero would read +Inf (shown as the largest float64 by the status).
func TestActiveFromMinSamplesAndFirstTick(t *testing.T) {
	for _, n := range []int{99, 100} {
		d := New(Options{Now: func() time.Time { return epoch0 }, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, d.Update(defaultSettings()))
		s := d.Seat("", "a")
		for range n {
			s.Observe(&Bid{Price: 1, HasPrice: true})
		}
		d.Tick()
		require.Equal(t, n == 100, s.det.Load() != nil, "%d bids", n)
		st := d.Status()
		require.Equal(t, n/100, st.ActiveSeats, "%d bids", n)
		require.Zero(t, st.Seats[0].Signals[Velocity-1].Value)
		_, err := json.Marshal(st)
		require.NoError(t, err)
	}
}

// The safety valve looks back exactly valveWindow: a seat active (or over
// a threshold) at a tick counts in its denominator (numerator) until, not
// at, valveWindow after that tick.
func TestValveWindowBoundary(t *testing.T) {
	set := defaults()
	now := epoch0
	d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(set))
	s := d.Seat("", "a")
	for range set.MinSamples {
		s.Observe(&Bid{Price: 1, HasPrice: true, Rejected: true})
	}
	d.Tick()
	st := d.Status()
	require.True(t, st.Seats[0].Signals[Rejections-1].Over, "every bid rejected")
	require.Equal(t, []int{1, 1}, []int{st.ActiveSeats, st.ValveSeats})
	now = epoch0.Add(set.ValveWindow - time.Nanosecond)
	st = d.Status()
	require.Equal(t, []int{1, 1}, []int{st.ActiveSeats, st.ValveSeats}, "a nanosecond before valveWindow")
	now = epoch0.Add(set.ValveWindow)
	st = d.Status()
	require.Equal(t, []int{0, 0}, []int{st.ActiveSeats, st.ValveSeats}, "at valveWindow")
}

// When a shift begins, the valve undoes the detector's quarantines of the
// last valveWindow: one begun exactly valveWindow ago stays.
func TestValveUndoesQuarantinesWithinExactlyItsWindow(t *testing.T) {
	set := defaults()
	for _, ago := range []time.Duration{set.ValveWindow - time.Nanosecond, set.ValveWindow} {
		now := epoch0.Add(time.Hour)
		d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, d.Update(set))
		d.Seat("", "a").Observe(&Bid{})
		d.Tick()
		s := d.seats[0]
		s.signal, s.since, s.hold = Rejections, now.Add(-ago), set.TTL
		var kinds []EventKind
		d.refuse(nil, 1, 1, now, func(k EventKind, _ *Seat, _ Signal, _ string) { kinds = append(kinds, k) })
		if ago < set.ValveWindow {
			require.Equal(t, []EventKind{Released}, kinds, "quarantined %v ago", ago)
			require.Equal(t, None, s.signal)
		} else {
			require.Empty(t, kinds, "quarantined %v ago", ago)
			require.Equal(t, Rejections, s.signal)
		}
	}
}

// A quarantine is a flap (its hold doubled) only when it follows the last
// release by less than the last hold: exactly the hold later, the seat
// starts over at ttl.
func TestFlapWithinExactlyTheLastHold(t *testing.T) {
	set := defaults()
	now := epoch0.Add(time.Hour)
	d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(set))
	f := func(after, want time.Duration) {
		t.Helper()
		s := &Seat{d: d, key: "a", hold: set.TTL, released: now.Add(-after)}
		s.overSince[Rejections-1] = now.Add(-set.Dwell)
		s.value[Rejections-1] = 0.9
		d.quarantine(s, now, func(EventKind, *Seat, Signal, string) {})
		require.Equal(t, Rejections, s.signal)
		require.Equal(t, want, s.hold, "quarantined %v after the release", after)
	}
	f(set.TTL-time.Nanosecond, 2*set.TTL)
	f(set.TTL, set.TTL)
}

// The safety valve's loud line is logged at most once a minute: exactly a
// minute after the last one, not a tick later.
func TestValveLogOnceAMinute(t *testing.T) {
	seats := fleetSeats(10)
	for _, tr := range seats {
		tr.reject = 0.9
	}
	s := newSim(t, defaults(), seats...)
	var at []time.Duration
	s.run(6*time.Minute, tick, func() {
		if n := lines(s.log.String(), "quarantine refused by the safety valve"); n > len(at) {
			at = append(at, s.elapsed())
		}
	})
	require.Greater(t, len(at), 3)
	for i := 1; i < len(at); i++ {
		require.Equal(t, time.Minute, at[i]-at[i-1], "log %d", i)
	}
}

// Novelty reads the first maxDomains adomain entries of a bid: a new value
// in the last of them makes the bid novel, one past them does not.
func TestNoveltyReadsExactlyMaxDomains(t *testing.T) {
	d := New(Options{Now: func() time.Time { return epoch0 }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(defaults()))
	s := d.Seat("", "a")
	dt := new(detail)
	s.det.Store(dt)
	known := []string{"a.com", "b.com", "c.com", "d.com"}
	for _, a := range known {
		dt.seen[0].add(maphash.String(d.seed, a) ^ domainSalt)
	}
	require.Len(t, known, maxDomains)
	s.Observe(&Bid{ADomain: append(known[:maxDomains:maxDomains], "new.com")})
	require.Zero(t, s.pend.novel.Load(), "a new value past maxDomains entries")
	s.Observe(&Bid{ADomain: []string{"a.com", "b.com", "c.com", "new.com"}})
	require.Equal(t, uint32(1), s.pend.novel.Load(), "a new value in the last entry read")
}

// Eviction: with less than a sixteenth of maxSeats free, idle seats (no
// bid for two windows) are forgotten until exactly a sixteenth is free; a
// seat last seen exactly two windows ago is not idle yet.
func TestEvictionBoundaries(t *testing.T) {
	set := defaults()
	now := epoch0
	d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	set.MaxSeats = 32 // a sixteenth: 2 seats
	require.NoError(t, d.Update(set))
	for i := range 31 {
		d.Seat("", fmt.Sprintf("s%02d", i)).Observe(&Bid{})
	}
	d.Tick()
	require.Equal(t, 31, d.Status().TrackedSeats, "none idle")
	now = epoch0.Add(2 * set.Window)
	d.Tick()
	require.Equal(t, 31, d.Status().TrackedSeats, "seen exactly two windows ago: not idle")
	now = now.Add(time.Nanosecond)
	d.Tick()
	require.Equal(t, 30, d.Status().TrackedSeats, "one idle seat forgotten: a sixteenth free")
}

// The novelty sketch's seen generations age with the seat's activity: the
// newer one turns over after exactly a baseline window of folded
// sub-buckets (baselineWindow / sub of them), not one more.
func TestSeenGenerationsTurnOverAtExactlyABaselineWindow(t *testing.T) {
	set := defaults()
	set.BaselineWindow = time.Minute // 6 sub-buckets of 10s
	s := newSim(t, set, steadySeats(4)...)
	seenEvery := int(set.BaselineWindow / set.sub())
	turned, last, gen := 0, -1, 0
	s.run(10*time.Minute, tick, func() {
		seat := s.d.seats[0]
		if seat.det.Load() == nil || seat.seenNew == gen {
			return
		}
		if last >= 0 {
			require.Equal(t, seenEvery, seat.base.folds-last, "folds between two turnovers at %v", s.elapsed())
			turned++
		}
		last, gen = seat.base.folds, seat.seenNew
	})
	require.Greater(t, turned, 3)
}
