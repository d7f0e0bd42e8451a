package quarantine

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	tick = time.Second
	hour = time.Hour
)

func jumpAt(at time.Duration, before, after float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t >= at {
			return after
		}
		return before
	}
}

// Steady traffic (noisy prices, 5% rejected, a fixed creative set) for six
// hours: no seat is ever over a threshold, nothing happens.
func TestSteadyTrafficNeverQuarantines(t *testing.T) {
	s := newSim(t, defaultSettings(), steadySeats(6)...)
	s.run(6*hour, tick, nil)
	require.Empty(t, s.kinds())
	st := s.d.Status()
	require.Equal(t, 6, st.ActiveSeats)
	for _, seat := range st.Seats {
		require.Equal(t, "normal", seat.State, seat.Seat)
		for _, sig := range seat.Signals {
			require.True(t, sig.Judged, "%s %s", seat.Seat, sig.Signal)
			require.False(t, sig.Over, "%s %s", seat.Seat, sig.Signal)
		}
	}
}

// A decimal-point bug: one seat's prices jump tenfold. It is quarantined
// for price once the signal has been over for the dwell, not before; the
// other seats are untouched.
func TestTenfoldPriceStepQuarantinesWithinTheDwell(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[1].median = jumpAt(2*hour, 1, 10)
	s := newSim(t, set, seats...)
	s.run(2*hour, tick, nil)
	require.Empty(t, s.kinds())
	at := s.untilQuarantined("s1", 5*time.Minute, tick)
	delay := at - 2*hour
	require.GreaterOrEqual(t, delay, set.Dwell, "the dwell holds")
	require.LessOrEqual(t, delay, set.Dwell+5*time.Second, "detected within a few seconds of the step, quarantined after the dwell")
	require.Equal(t, "price", s.state("s1"))
	require.Equal(t, []string{"quarantined s1 price"}, s.kinds())
	require.Regexp(t, `^\d+(\.\d+)? over threshold 5 for 30s$`, s.events[0].Reason)
	for _, seat := range []string{"s0", "s2", "s3"} {
		require.Empty(t, s.state(seat), seat)
	}
	require.Contains(t, s.log.String(), `msg="seat quarantined" seat=s1 signal=price`)
}

// Prices that double every two hours (sixteenfold over eight) and a rate
// that quadruples: the baseline follows, nothing is quarantined.
func TestSlowDriftDoesNotQuarantine(t *testing.T) {
	seats := steadySeats(4)
	seats[0].median = func(t time.Duration) float64 { return math.Pow(2, t.Hours()/2) }
	seats[0].rate = func(t time.Duration) float64 { return 4 * math.Pow(2, t.Hours()/4) }
	seats[2].median = func(t time.Duration) float64 { return 3 / math.Pow(2, t.Hours()/2) }
	s := newSim(t, defaultSettings(), seats...)
	peak := 0.0
	s.run(8*hour, tick, func() {
		if s.now.Second() != 0 {
			return
		}
		if st := s.d.Status(); st.Seats[0].Signals[1].Judged {
			peak = math.Max(peak, st.Seats[0].Signals[1].Value)
		}
	})
	require.Empty(t, s.kinds())
	t.Logf("peak price signal of the drifting seat: %.2f", peak)
	require.Less(t, peak, 2.0, "a drift reads as a small ratio")
}

// A hijacked seat: nine bids in ten come from advertisers and creatives the
// seat never sent. Quarantined for novelty after the dwell.
func TestNewAdvertiserBurstQuarantines(t *testing.T) {
	seats := steadySeats(4)
	seats[2].fresh = jumpAt(90*time.Minute, 0, 0.9)
	s := newSim(t, defaultSettings(), seats...)
	s.run(90*time.Minute, tick, nil)
	require.Empty(t, s.kinds())
	at := s.untilQuarantined("s2", 5*time.Minute, tick)
	// The share of novel bids in the window passes 0.8 once 0.8/0.9 of the
	// window is new bids (53 s), then the dwell.
	require.GreaterOrEqual(t, at-90*time.Minute, 30*time.Second)
	require.LessOrEqual(t, at-90*time.Minute, 90*time.Second)
	require.Equal(t, "novelty", s.state("s2"))
	require.Equal(t, []string{"quarantined s2 novelty"}, s.kinds())
}

// Traffic that rises and falls ninefold over a day (and a seat that is off
// at night): the baseline follows the slope, so no velocity alarm, for two
// days.
func TestDiurnalRateDoesNotQuarantine(t *testing.T) {
	day := 24 * hour
	wave := func(t time.Duration) float64 { // 0.4 to 3.6 bids a second
		return 2 * (1 + 0.8*math.Sin(2*math.Pi*float64(t)/float64(day)))
	}
	seats := steadySeats(3)
	seats[0].rate = wave
	seats[1].rate = func(t time.Duration) float64 { return wave(t + 6*hour) }
	seats[2].rate = func(t time.Duration) float64 { // off from 22:00 to 06:00
		if h := math.Mod(t.Hours(), 24); h < 6 || h >= 22 {
			return 0
		}
		return 3
	}
	set := defaultSettings()
	set.MinSamples = 20 // judged at the trough too
	s := newSim(t, set, seats...)
	s.run(2*day, 10*time.Second, nil)
	require.Empty(t, s.kinds())
}

// A rejection rate over the threshold needs no baseline: judged once the
// window holds minSamples bids.
func TestRejectionRateQuarantines(t *testing.T) {
	seats := steadySeats(3)
	seats[0].reject = 0.7
	s := newSim(t, defaultSettings(), seats...)
	at := s.untilQuarantined("s0", 3*time.Minute, tick)
	require.Less(t, at, 2*time.Minute, "before any baseline is warm")
	require.Equal(t, "rejections", s.state("s0"))
}

// A bot: twenty times the seat's usual rate.
func TestVelocityQuarantines(t *testing.T) {
	seats := steadySeats(4)
	seats[3].rate = jumpAt(hour, 4, 80)
	s := newSim(t, defaultSettings(), seats...)
	s.run(hour, tick, nil)
	s.untilQuarantined("s3", 2*time.Minute, tick)
	require.Equal(t, "velocity", s.state("s3"))
}

// Release needs ttl and then calm: every signal under its threshold for
// the calm period. A seat that keeps flapping stays quarantined; one that
// recovers is released at ttl + calm at the earliest, never before ttl.
func TestReleaseAfterTTLAndCalm(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	var fixedAt time.Duration
	seats[0].median = func(t time.Duration) float64 {
		switch {
		case t < hour:
			return 1
		case fixedAt > 0 && t >= fixedAt:
			return 1
		case t < hour+15*time.Minute:
			return 10
		case int(t.Minutes())%2 == 0: // flapping: bad every other minute
			return 10
		}
		return 1
	}
	s := newSim(t, set, seats...)
	s.run(hour, tick, nil)
	at := s.untilQuarantined("s0", 2*time.Minute, tick)
	s.run(30*time.Minute, tick, func() { require.Equal(t, "price", s.state("s0"), "flapping: never calm") })
	fixedAt = s.elapsed()
	var released time.Duration
	s.run(10*time.Minute, tick, func() {
		if released == 0 && s.state("s0") == "" {
			released = s.elapsed()
		}
	})
	require.NotZero(t, released)
	require.Greater(t, released, at+set.TTL)
	require.GreaterOrEqual(t, released-fixedAt, set.Calm, "the calm period holds")
	require.LessOrEqual(t, released-fixedAt, set.Calm+set.Window, "the window must empty of bad prices first")
	rel := s.eventsOf(Released)
	require.Len(t, rel, 1)
	require.Equal(t, "every signal under its threshold for 2m0s after ttl 10m0s", rel[0].Reason)
}

// With calm 0 and a seat that recovers at once, the release comes at ttl,
// not before.
func TestReleaseNeverBeforeTTL(t *testing.T) {
	set := defaultSettings()
	set.Calm = 0
	seats := steadySeats(4)
	seats[0].median = func(t time.Duration) float64 {
		if t >= hour && t < hour+2*time.Minute {
			return 10
		}
		return 1
	}
	s := newSim(t, set, seats...)
	s.run(hour, tick, nil)
	at := s.untilQuarantined("s0", 2*time.Minute, tick)
	s.run(set.TTL-2*tick, tick, func() { require.Equal(t, "price", s.state("s0")) })
	s.run(5*tick, tick, nil)
	require.Empty(t, s.state("s0"), "released at ttl (quarantined at %v)", at)
}

// The safety valve: when most seats shift at once, none is quarantined; the
// refusals are events (metered) once per seat and one loud line a minute.
func TestSafetyValveHoldsWhenMostSeatsShift(t *testing.T) {
	seats := steadySeats(10)
	for _, tr := range seats[:8] {
		tr.median = jumpAt(hour, 1, 10)
	}
	s := newSim(t, defaultSettings(), seats...)
	s.run(hour, tick, nil)
	s.run(5*time.Minute, tick, func() { require.Zero(t, s.d.Count(), "nothing quarantined") })
	require.Empty(t, s.eventsOf(Quarantined))
	refused := s.eventsOf(Refused)
	require.Len(t, refused, 8, "one refusal per seat")
	require.Contains(t, refused[0].Reason, "safety valve: 8 of 10 active seats quarantined or over a threshold, over maxShare 0.5")
	n := lines(s.log.String(), "quarantine refused by the safety valve")
	require.GreaterOrEqual(t, n, 4)
	require.LessOrEqual(t, n, 6, "rate-limited to one line a minute")
	for _, seat := range s.d.Status().Seats[:8] {
		require.Equal(t, "refused", seat.State, seat.Seat)
	}
}

// The valve caps what is quarantined at any moment: three seats go bad and
// are quarantined; five more, later than valveWindow, would bring it to
// eight of ten, so they are refused and the three stay.
func TestSafetyValveCapsTheShare(t *testing.T) {
	seats := steadySeats(10)
	for i, tr := range seats[:8] {
		at := hour
		if i >= 3 {
			at = hour + 10*time.Minute
		}
		tr.median = jumpAt(at, 1, 10)
	}
	s := newSim(t, defaultSettings(), seats...)
	s.run(hour+15*time.Minute, tick, func() { require.LessOrEqual(t, s.d.Count(), 5, "never more than maxShare") })
	require.Len(t, s.eventsOf(Quarantined), 3)
	require.Len(t, s.eventsOf(Refused), 5)
	require.Equal(t, 3, s.d.Count())
}

// One seat of one is a fleet-wide shift under maxShare 0.5; maxShare 1
// lets a single-seat deployment quarantine.
func TestSafetyValveSingleSeat(t *testing.T) {
	one := func(share float64) *sim {
		set := defaultSettings()
		set.MaxShare = share
		seats := steadySeats(1)
		seats[0].median = jumpAt(hour, 1, 10)
		s := newSim(t, set, seats...)
		s.run(hour+2*time.Minute, tick, nil)
		return s
	}
	require.Equal(t, []string{"refused s0 price"}, one(0.5).kinds())
	require.Equal(t, []string{"quarantined s0 price"}, one(1).kinds())
}

// A restart starts clean: a new detector knows no quarantine and says so.
func TestRestartStartsClean(t *testing.T) {
	seats := steadySeats(4)
	seats[0].median = jumpAt(hour, 1, 10)
	s := newSim(t, defaultSettings(), seats...)
	s.run(hour, tick, nil)
	s.untilQuarantined("s0", 2*time.Minute, tick)

	restarted := newSim(t, defaultSettings(), seats...)
	restarted.now = s.now
	require.Empty(t, restarted.state("s0"))
	require.Zero(t, restarted.d.Count())
	require.Empty(t, restarted.d.Status().Seats)
	require.Contains(t, restarted.log.String(), "quarantine detector starting clean: no seat state survives a restart")
	restarted.run(time.Minute, tick, nil)
	require.Empty(t, restarted.state("s0"), "the 10x prices are its baseline now: learned from scratch")
}

// quarantine.seats: bare entries apply on every upstream, qualified ones to
// that upstream; the detector never releases them; removing one from the
// config releases it; they apply with the detector off too.
func TestOperatorSeats(t *testing.T) {
	set := defaultSettings()
	set.Enabled = false
	set.Operator = []string{"s1", "dsp-a/s2"}
	s := newSim(t, set)
	require.Equal(t, []string{"quarantined dsp-a/s2 operator", "quarantined s1 operator"}, s.kinds())
	require.Contains(t, s.log.String(), "quarantine detector off")
	d := s.d
	require.True(t, d.Any())
	require.Equal(t, 2, d.Count())
	require.Equal(t, "operator", d.Quarantined("", "s1"))
	require.Equal(t, "operator", d.Quarantined("dsp-b", "s1"))
	require.Equal(t, "operator", d.Quarantined("dsp-a", "s2"))
	require.Empty(t, d.Quarantined("dsp-b", "s2"))
	require.Empty(t, d.Quarantined("", "s2"))
	require.Nil(t, d.Seat("dsp-a", "s3"), "no detector: nothing tracked")
	require.ErrorIs(t, d.Release("s1"), ErrOperatorSeat)
	require.ErrorIs(t, d.Release("s9"), ErrNotQuarantined)

	set.Operator = []string{"dsp-a/s2"}
	require.NoError(t, d.Update(set))
	require.Empty(t, d.Quarantined("", "s1"))
	require.Equal(t, "released s1 operator", s.kinds()[2])
	require.Equal(t, "removed from quarantine.seats", s.events[2].Reason)
	require.Equal(t, 1, d.Count())
}

// An operator seat under traffic stays quarantined whatever its signals:
// the detector never releases it.
func TestOperatorSeatNeverReleasedByTheDetector(t *testing.T) {
	set := defaultSettings()
	set.Operator = []string{"s0"}
	s := newSim(t, set, steadySeats(3)...)
	s.run(time.Hour, tick, func() { require.Equal(t, "operator", s.state("s0")) })
	require.Equal(t, []string{"quarantined s0 operator"}, s.kinds())
	st := s.d.Status().Seats[0]
	require.Equal(t, "s0", st.Seat)
	require.Equal(t, "quarantined", st.State)
	require.Equal(t, "operator", st.Signal)
	require.Len(t, st.Signals, 4, "a tracked operator seat shows its signals")
	require.Nil(t, st.Since)
}

// seats.<key>.quarantine: a seat whose price threshold is 20 takes a
// tenfold jump; another with the global 5 does not.
func TestPerSeatThresholdOverride(t *testing.T) {
	set := defaultSettings()
	set.Overrides = map[string]Thresholds{"s0": {Rejections: 0.5, Price: 20, Novelty: 0.8, Velocity: 10}}
	seats := steadySeats(6)
	seats[0].median = jumpAt(hour, 1, 10)
	seats[1].median = jumpAt(hour, 1, 10)
	s := newSim(t, set, seats...)
	s.run(hour+3*time.Minute, tick, nil)
	require.Equal(t, []string{"quarantined s1 price"}, s.kinds())
}

// A seat policy keyed "<upstream>/<seat>" tracks that upstream's seat
// apart; the same seat from another upstream is the bare seat.
func TestQualifiedSeatKeys(t *testing.T) {
	set := defaultSettings()
	set.Qualified = []string{"dsp-a/s1"}
	s := newSim(t, set)
	a, b, bare := s.d.Seat("dsp-a", "s1"), s.d.Seat("dsp-b", "s1"), s.d.Seat("", "s1")
	require.NotSame(t, a, b)
	require.Same(t, b, bare)
	s.d.Tick()
	require.Equal(t, "dsp-a/s1", a.key)
	require.Equal(t, "s1", b.key)
	require.Equal(t, s.d.keyHash("dsp-a/s1"), s.d.pairHash("dsp-a", "s1"), "a split write hashes as the joined key")
	require.Same(t, a, s.d.Seat("dsp-a", "s1"), "found in the index after the tick")
}

// The seat table is bounded: a full table takes no new seat until the next
// tick evicts the least recently seen one; a quarantined seat is never
// evicted.
func TestSeatTableEvictsLeastRecentlySeen(t *testing.T) {
	set := defaultSettings()
	set.Operator = nil
	seats := steadySeats(4)
	seats[0].reject = 0.9 // quarantined for rejections, then the least recently seen
	s := newSimMax(t, set, 4, seats...)
	s.untilQuarantined("s0", 3*time.Minute, tick)
	s.seats = seats[1:] // s0 goes quiet
	s.run(time.Minute, tick, nil)
	s.seats = append(s.seats[:0:0], seats[2], seats[3]) // s1 goes quiet later
	s.run(time.Minute, tick, nil)
	require.Nil(t, s.d.Seat("", "new"), "full")
	s.d.Tick()
	st := s.d.Status()
	var keys []string
	for _, seat := range st.Seats {
		keys = append(keys, seat.Seat)
	}
	require.Equal(t, []string{"s0", "s2", "s3"}, keys, "s1 evicted, the quarantined s0 kept")
	require.NotNil(t, s.d.Seat("", "new"))
	require.Contains(t, s.log.String(), "quarantine seat table full")
}

// Turning the detector off releases what it quarantined and forgets every
// seat; a new window length empties the windows and keeps going.
func TestUpdateDisableAndWindowChange(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[0].reject = 0.9
	s := newSim(t, set, seats...)
	s.untilQuarantined("s0", 3*time.Minute, tick)

	set.Window = 2 * time.Minute
	require.NoError(t, s.d.Update(set))
	s.run(time.Minute, tick, nil)
	require.Equal(t, "rejections", s.state("s0"))

	set.Enabled = false
	require.NoError(t, s.d.Update(set))
	require.Empty(t, s.state("s0"))
	require.Zero(t, s.d.Count())
	require.Equal(t, "released s0 rejections", s.kinds()[len(s.kinds())-1])
	require.Empty(t, s.d.Status().Seats)
	require.Nil(t, s.d.Seat("", "s1"))

	set.Window = 0
	require.ErrorContains(t, s.d.Update(set), "quarantine.window")
}

func TestOperatorReleaseForgetsTheBaseline(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[0].median = jumpAt(hour, 1, 10) // a legitimate new price level
	s := newSim(t, set, seats...)
	s.run(hour, tick, nil)
	s.untilQuarantined("s0", 2*time.Minute, tick)
	s.run(20*time.Minute, tick, func() { require.Equal(t, "price", s.state("s0"), "never calm against the old baseline") })
	require.NoError(t, s.d.Release("s0"))
	require.ErrorIs(t, s.d.Release("s0"), ErrNotQuarantined)
	require.Empty(t, s.state("s0"))
	rel := s.eventsOf(Released)
	require.Len(t, rel, 1)
	require.Equal(t, "released by an operator", rel[0].Reason)
	require.Equal(t, "v1", rel[0].Version)
	s.run(hour, tick, nil)
	require.Len(t, s.eventsOf(Quarantined), 1, "the new level is the new baseline")
	require.True(t, strings.HasPrefix(s.log.String(), "time="))
}

// A seat both quarantined by the detector and listed in quarantine.seats
// counts once; the operator listing wins while it lasts.
func TestOperatorListingOfAQuarantinedSeatCountsOnce(t *testing.T) {
	set := defaultSettings()
	seats := steadySeats(4)
	seats[0].reject = 0.9
	s := newSim(t, set, seats...)
	s.untilQuarantined("s0", 3*time.Minute, tick)
	require.Equal(t, 1, s.d.Count())
	set.Operator = []string{"s0"}
	require.NoError(t, s.d.Update(set))
	require.Equal(t, 1, s.d.Count())
	require.Equal(t, "operator", s.state("s0"))
	set.Operator = nil
	require.NoError(t, s.d.Update(set))
	require.Equal(t, "rejections", s.state("s0"), "the detector's quarantine stands")
	require.Equal(t, 1, s.d.Count())
}
