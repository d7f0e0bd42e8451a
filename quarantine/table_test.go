package quarantine

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// What a tracked seat weighs, measured over 10,000 seats (the table's map
// and list entries and the key included): a seat that has sent fewer than
// minSamples bids has no price histograms or sketches yet; one that has
// sent that many has its 4 KiB detail. The package doc states both.
func TestBytesPerTrackedSeat(t *testing.T) {
	const n = 10000
	measure := func(bidsPerSeat int) uint64 {
		now := epoch0
		d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, d.Update(defaults()))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("seat-%05d", i)
		}
		before := heapAlloc()
		b := Bid{Price: 1.5, HasPrice: true, CRID: "cr-1", ADomain: []string{"brand.com"}}
		for _, k := range keys {
			seat := d.Seat("", k)
			for range bidsPerSeat {
				seat.Observe(&b)
			}
		}
		for range 2 {
			now = now.Add(10 * time.Second)
			d.Tick()
		}
		require.Len(t, d.seats, n)
		per := (heapAlloc() - before) / n
		runtime.KeepAlive(d)
		return per
	}
	light, full := measure(1), measure(100)
	t.Logf("bytes per tracked seat: %d before its first minSamples bids, %d after", light, full)
	require.Less(t, light, uint64(800))
	require.Less(t, full, uint64(5000))
}

// Churn: 50 regular seats bid all the time while a thousand new seats
// arrive every ten seconds, each bidding twice in its first half minute
// and never again: 60,000 distinct seats over ten simulated minutes, at
// the default maxSeats (20,000). The table fills to within a sixteenth of
// maxSeats, then stays flat, in seats and in bytes: idle seats are evicted
// first, so no bid is ever turned away and no regular seat is forgotten.
func TestSeatTableChurnStaysFlat(t *testing.T) {
	now := epoch0
	d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(defaults()))
	b := Bid{Price: 1.5, HasPrice: true, CRID: "cr-1", ADomain: []string{"brand.com"}}
	turned := 0
	bid := func(key string, n int) {
		seat := d.Seat("", key)
		if seat == nil {
			turned++
			return
		}
		for range n {
			seat.Observe(&b)
		}
	}
	const ticks, perTick = 60, 1000
	regular := make([]string, 50)
	for r := range regular {
		regular[r] = fmt.Sprintf("regular-%02d", r)
	}
	churn := make([]string, ticks*perTick)
	for i := range churn {
		churn[i] = fmt.Sprintf("churn-%06d", i)
	}
	var sizes []int
	var heap []uint64
	for tk := range ticks {
		for _, k := range regular {
			bid(k, 20)
		}
		for i := range perTick {
			bid(churn[tk*perTick+i], 1)
			if tk >= 3 {
				bid(churn[(tk-3)*perTick+i], 1)
			}
		}
		now = now.Add(10 * time.Second)
		d.Tick()
		sizes = append(sizes, len(d.seats))
		require.LessOrEqual(t, len(d.seats), DefaultMaxSeats)
		if tk == 29 || tk == 59 {
			heap = append(heap, heapAlloc())
		}
	}
	require.Zero(t, turned, "no bid turned away")
	var minutes []int
	for i := 5; i < len(sizes); i += 6 {
		minutes = append(minutes, sizes[i])
	}
	t.Logf("tracked seats every minute: %v", minutes)
	t.Logf("live heap at 5 and 10 minutes: %d and %d bytes", heap[0], heap[1])
	plateau := sizes[30:]
	lo, hi := plateau[0], plateau[0]
	for _, n := range plateau {
		lo, hi = min(lo, n), max(hi, n)
	}
	require.GreaterOrEqual(t, lo, DefaultMaxSeats-DefaultMaxSeats/16-perTick, "the table is used")
	require.LessOrEqual(t, hi, DefaultMaxSeats-DefaultMaxSeats/16, "and kept a sixteenth free")
	require.InEpsilon(t, float64(heap[0]), float64(heap[1]), 0.1, "flat in bytes too")
	st := d.Status()
	require.Equal(t, DefaultMaxSeats, st.MaxSeats)
	tracked := map[string]bool{}
	for _, s := range d.seats {
		tracked[s.key] = true
	}
	for r := range 50 {
		require.True(t, tracked[fmt.Sprintf("regular-%02d", r)], "regular-%02d evicted", r)
	}
}

// A lower maxSeats takes effect at the next tick: the least recently seen
// seats go, never a quarantined one.
func TestMaxSeatsLowered(t *testing.T) {
	set := defaults()
	seats := fleetSeats(8)
	seats[0].reject = 0.9
	s := newSim(t, set, seats...)
	s.untilQuarantined("s0", 3*time.Minute, tick)
	s.seats = seats[4:] // s1 to s3 go quiet
	s.run(time.Minute, tick, nil)
	set.MaxSeats = 5
	require.NoError(t, s.d.Update(set))
	s.d.Tick()
	var keys []string
	for _, seat := range s.d.Status().Seats {
		keys = append(keys, seat.Seat)
	}
	require.Equal(t, []string{"s0", "s4", "s5", "s6", "s7"}, keys)
	require.Nil(t, s.d.Seat("", "new"), "full")
}

// The new settings: zero is the default, a negative or out-of-range value
// is an error naming its key, and every error of one value shows at once.
func TestSettingsDefaultsAndValidation(t *testing.T) {
	set := defaults()
	set.ValveWindow, set.MaxTTL, set.PriceDrop, set.MaxSeats = 0, 0, 0, 0
	s := newSim(t, set)
	st := s.d.Status()
	require.Equal(t, "5m0s", st.ValveWindow)
	require.Equal(t, "2h0m0s", st.MaxTTL)
	require.Equal(t, 0.55, st.PriceDrop)
	require.Equal(t, 20000, st.MaxSeats)

	set.TTL = 3 * time.Hour
	require.NoError(t, s.d.Update(set))
	require.Equal(t, "3h0m0s", s.d.Status().MaxTTL, "maxTTL is never under ttl")

	bad := defaults()
	bad.ValveWindow, bad.MaxTTL, bad.PriceDrop, bad.MaxSeats = -time.Second, time.Minute, 1, -1
	err := errors.Join(bad.Validate()...)
	require.ErrorContains(t, err, "quarantine.valveWindow: must not be negative")
	require.ErrorContains(t, err, "quarantine.maxTTL: must be >= ttl (10m0s")
	require.ErrorContains(t, err, "quarantine.priceDrop: must be in (0, 1)")
	require.ErrorContains(t, err, "quarantine.maxSeats: must be >= 0")
	require.ErrorContains(t, s.d.Update(bad), "quarantine.priceDrop")
	bad.PriceDrop = -0.1
	require.ErrorContains(t, errors.Join(bad.Validate()...), "quarantine.priceDrop: must be in (0, 1)")
	def := Defaults()
	require.Empty(t, def.Validate())
}
