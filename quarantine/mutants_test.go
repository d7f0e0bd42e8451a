package quarantine

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The novelty sketches rotate at window boundaries, not at every tick: a
// seat ticked every second for five windows has seen at most five
// rotations (counting toward noveltyRotations), and the bid path's
// generation flipped as often.
func TestNoveltyRotatesAtWindowBoundariesOnly(t *testing.T) {
	set := defaults()
	s := newSim(t, set, steadySeats(1)...)
	flips, gen := 0, s.d.gen.Load()
	s.run(5*set.Window, tick, func() {
		if g := s.d.gen.Load(); g != gen {
			flips, gen = flips+1, g
		}
	})
	seat := s.d.seats[0]
	require.NotNil(t, seat.det.Load(), "the seat has its detail")
	require.LessOrEqual(t, seat.rotations, 5)
	require.GreaterOrEqual(t, seat.rotations, 3)
	require.LessOrEqual(t, flips, 5)
	require.GreaterOrEqual(t, flips, 4)
}

// The "seat table full" warning is logged when seats were turned away and
// seats are forgotten for it; not when idle seats are forgotten with no
// seat turned away, nor when a raised maxSeats made room (nothing is
// forgotten).
func TestSeatTableFullWarning(t *testing.T) {
	const warning = "quarantine seat table full"
	setup := func() (*Detector, *strings.Builder, *time.Time, Settings) {
		now := epoch0
		var out strings.Builder
		d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&out, nil))})
		set := defaults()
		set.MaxSeats = 32 // a sixteenth: 2 seats
		require.NoError(t, d.Update(set))
		return d, &out, &now, set
	}

	// Full: a new seat is turned away; at the tick a sixteenth goes, with
	// the warning.
	d, out, _, _ := setup()
	for i := range 32 {
		seat := d.Seat("", fmt.Sprintf("s%02d", i))
		require.NotNil(t, seat, "seat %d", i)
		seat.Observe(&Bid{})
	}
	require.Nil(t, d.Seat("", "late"))
	d.Tick()
	require.Equal(t, 30, d.Status().TrackedSeats)
	require.Contains(t, out.String(), warning)

	// Idle seats forgotten, none turned away: no warning.
	d, out, now, set := setup()
	for i := range 31 {
		d.Seat("", fmt.Sprintf("s%02d", i)).Observe(&Bid{})
	}
	d.Tick()
	*now = now.Add(2*set.Window + time.Nanosecond)
	d.Tick()
	require.Equal(t, 30, d.Status().TrackedSeats, "an idle seat forgotten")
	require.NotContains(t, out.String(), warning)

	// Seats turned away, then maxSeats raised before the tick to 34, which
	// leaves exactly a sixteenth (2) free: nothing forgotten, no warning.
	d, out, _, set = setup()
	for i := range 32 {
		d.Seat("", fmt.Sprintf("s%02d", i)).Observe(&Bid{})
	}
	require.Nil(t, d.Seat("", "late"))
	set.MaxSeats = 34
	require.NoError(t, d.Update(set))
	d.Tick()
	require.Equal(t, 32, d.Status().TrackedSeats)
	require.NotContains(t, out.String(), warning)
}

// The baseline's priced bids decay as its bids do: a seat whose bids stop
// carrying a price loses its priced baseline (price is judged only on
// minSamples priced bids in the baseline), it does not grow.
func TestBaselinePricedBidsDecay(t *testing.T) {
	const alpha = 0.5
	var b baseline
	b.fold(&counts{bids: 100, priced: 100}, alpha, 10*time.Second)
	for range 3 {
		b.fold(&counts{bids: 100}, alpha, 10*time.Second)
	}
	require.InDelta(t, 12.5, b.priced, 1e-9)
	require.InDelta(t, 100+50+25+12.5, b.bids, 1e-9)
}

// The seat list stays sorted by key when seats created at different ticks
// are merged into it (the events of a tick and the choice among equally
// idle seats follow that order).
func TestSeatListSortedAcrossTicks(t *testing.T) {
	now := epoch0
	d := New(Options{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.Update(defaults()))
	for _, batch := range [][]string{{"d", "b"}, {"e", "a", "c"}, {"ba", "f"}} {
		for _, k := range batch {
			d.Seat("", k).Observe(&Bid{})
		}
		now = now.Add(time.Second)
		d.Tick()
	}
	var keys []string
	for _, s := range d.seats {
		keys = append(keys, s.key)
	}
	require.Equal(t, []string{"a", "b", "ba", "c", "d", "e", "f"}, keys)
}
