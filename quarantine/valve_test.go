package quarantine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// defaults are the package defaults with the detector on: the settings the
// scenarios of issue 26 are judged at.
func defaults() Settings {
	set := Defaults()
	set.Enabled, set.Version = true, "v1"
	return set
}

// fleetSeats are n seats at different rates (2 to 3.8 bids a second: 120
// to 230 bids a window), so their windows fill and their rejection rates
// wander differently.
func fleetSeats(n int) []*traffic {
	out := steadySeats(n)
	for i, tr := range out {
		r := 2 + 0.2*float64(i)
		tr.rate = func(time.Duration) float64 { return r }
	}
	return out
}

// rejectFrom sets, before every step, each seat's rejected share: bad
// from onset[i] (and until end, when end is not zero), 5% otherwise.
func rejectFrom(s *sim, seats []*traffic, onset []time.Duration, bad float64, end func(i int) time.Duration) func() {
	return func() {
		el := s.elapsed()
		for i, tr := range seats {
			tr.reject = 0.05
			if i < len(onset) && el >= onset[i] && (end == nil || end(i) == 0 || el < end(i)) {
				tr.reject = bad
			}
		}
	}
}

// A fleet-wide rejection problem near the threshold: 60% of every seat's
// bids are rejected from (nearly) the same moment, but the problem comes
// and goes on each seat with its own period (a flapping backend behind the
// exchange), so the seats cross the threshold at different moments and at
// most a few are over at any one tick. Judged within one tick, the valve
// lets them in one by one up to maxShare (13 quarantines in the hour,
// five at once, with ValveWindow 1ns); judged over the last valveWindow it
// is one shift: no seat is ever quarantined, each is refused once.
func TestValveFleetWideShiftQuarantinesNoSeat(t *testing.T) {
	seats := fleetSeats(10)
	s := newSim(t, defaults(), seats...)
	minOver, maxOver := 10, 0
	s.run(70*time.Minute, tick, func() {
		el := s.elapsed()
		for i, tr := range seats {
			tr.reject = 0.05
			on := 10*time.Minute + time.Duration(i)*3*time.Second
			if el >= on && (el-on)%(150*time.Second+time.Duration(i)*15*time.Second) < 90*time.Second {
				tr.reject = 0.6
			}
		}
		require.Zero(t, s.d.Count(), "nothing quarantined at %v", el)
		if el < 15*time.Minute {
			return
		}
		over := 0
		for _, seat := range s.d.seats {
			if !seat.overSince[Rejections-1].IsZero() {
				over++
			}
		}
		minOver, maxOver = min(minOver, over), max(maxOver, over)
	})
	t.Logf("seats over at one tick: %d to %d of 10", minOver, maxOver)
	require.LessOrEqual(t, minOver, 5, "at some ticks at most maxShare are over: a one-tick valve would let them in")
	require.Empty(t, s.eventsOf(Quarantined))
	refused := map[string]int{}
	for _, e := range s.eventsOf(Refused) {
		refused[e.Seat]++
		require.Contains(t, e.Reason, "in the last 5m0s")
	}
	require.Len(t, refused, 10)
	for seat, n := range refused {
		require.Equal(t, 1, n, "one refusal per seat and shift: %s", seat)
	}
	st := s.d.Status()
	require.True(t, st.Shift)
	require.Equal(t, 10, st.ValveSeats)
	require.Equal(t, 10, st.ActiveSeats)
}

// A shift rolled out over the fleet more slowly than the dwell: the first
// seats are quarantined before it is seen as a shift. When it is, their
// quarantines are undone (released with the valve's reason) and, like the
// refused seats, retried only after the shift ends.
func TestValveUndoesTheQuarantinesOfARollout(t *testing.T) {
	seats := fleetSeats(10)
	set := defaults()
	s := newSim(t, set, seats...)
	onset := make([]time.Duration, len(seats))
	for i := range onset {
		onset[i] = 10*time.Minute + time.Duration(i)*20*time.Second
	}
	s.run(40*time.Minute, tick, rejectFrom(s, seats, onset, 0.6, nil))
	q, rel := s.eventsOf(Quarantined), s.eventsOf(Released)
	require.NotEmpty(t, q, "the first seats go in before the shift is wide")
	require.Len(t, rel, len(q), "and come out when it is")
	for i, e := range rel {
		require.Equal(t, q[i].Seat, e.Seat)
		require.Regexp(t, `^safety valve: \d+ of 10 active seats .* in the last 5m0s; quarantined \S+ ago, part of the shift$`, e.Reason)
		require.Less(t, e.At.Sub(q[i].At), 2*time.Minute)
	}
	require.Zero(t, s.d.Count())
	require.Len(t, s.eventsOf(Refused), 10-len(q))
	for _, seat := range s.d.Status().Seats {
		require.Equal(t, "refused", seat.State, seat.Seat)
	}
}

// The same fleet with one bad seat: it alone is quarantined.
func TestValveSingleBadSeatStillQuarantined(t *testing.T) {
	seats := fleetSeats(10)
	s := newSim(t, defaults(), seats...)
	set := rejectFrom(s, seats[:1], []time.Duration{10 * time.Minute}, 0.6, nil)
	s.run(10*time.Minute, tick, set)
	at := s.untilQuarantined("s0", 3*time.Minute, tick)
	t.Logf("quarantined %v after its problem began", at-10*time.Minute)
	require.Equal(t, []string{"quarantined s0 rejections"}, s.kinds())
}

// A refused quarantine is retried only after the shift ends: the fleet's
// problem lasts twenty minutes, one seat's goes on. That seat is refused
// while the others were over in the last valveWindow, and quarantined a
// dwell after the shift ends, never before.
func TestValveRetriesOnlyAfterTheShiftEnds(t *testing.T) {
	seats := fleetSeats(10)
	set := defaults()
	s := newSim(t, set, seats...)
	onset := make([]time.Duration, len(seats))
	for i := range onset {
		onset[i] = 10 * time.Minute
	}
	fixed := 30 * time.Minute
	end := func(i int) time.Duration {
		if i == 3 {
			return 0
		}
		return fixed
	}
	s.run(fixed, tick, rejectFrom(s, seats, onset, 0.7, end))
	require.Zero(t, s.d.Count())
	require.Len(t, s.eventsOf(Refused), 10)
	at := s.untilQuarantined("s3", 10*time.Minute, tick)
	t.Logf("quarantined %v after the others recovered", at-fixed)
	// The others' windows clear within a window; they count for the
	// valve a valveWindow longer; then s3 dwells again.
	require.GreaterOrEqual(t, at-fixed, set.ValveWindow+set.Dwell)
	require.LessOrEqual(t, at-fixed, set.Window+set.ValveWindow+set.Dwell+5*time.Second)
	require.Equal(t, "rejections", s.state("s3"))
	require.Contains(t, s.log.String(), "the shift is over")
	require.Len(t, s.eventsOf(Quarantined), 1)
}

// A flapping seat is held with exponential backoff: each quarantine that
// follows a release by less than the last hold doubles the hold (ttl 10m:
// 20m, 40m, then maxTTL 1h here); a seat that stays out as long as its
// last hold starts over at ttl.
func TestFlappingSeatBackoff(t *testing.T) {
	set := defaults()
	set.MaxTTL = time.Hour
	seats := fleetSeats(4)
	s := newSim(t, set, seats...)
	var holds []string
	// Bad until quarantined, good until released, bad again at once.
	for range 5 {
		seats[0].reject = 0.9
		s.untilQuarantined("s0", 3*time.Minute, tick)
		seats[0].reject = 0.05
		holds = append(holds, s.d.Status().Seats[0].Hold)
		for end := s.now.Add(3 * time.Hour); s.state("s0") != "" && s.now.Before(end); {
			s.step(tick)
		}
		require.Empty(t, s.state("s0"), "released")
	}
	require.Equal(t, []string{"10m0s", "20m0s", "40m0s", "1h0m0s", "1h0m0s"}, holds)
	q := s.eventsOf(Quarantined)
	require.Regexp(t, `; held 20m0s: quarantined again 1m\d+s after its release$`, q[1].Reason)
	rel := s.eventsOf(Released)
	require.Contains(t, rel[2].Reason, "after a hold of 40m0s (ttl 10m0s doubled 2 times: flapping)")

	// Out for longer than its last hold: back to ttl.
	s.run(time.Hour+time.Minute, tick, nil)
	seats[0].reject = 0.9
	s.untilQuarantined("s0", 3*time.Minute, tick)
	require.Equal(t, "10m0s", s.d.Status().Seats[0].Hold)
	require.NotContains(t, s.eventsOf(Quarantined)[5].Reason, "held")
}

// Turning the detector off ends a shift with everything else it knew.
func TestValveShiftEndsWhenDisabled(t *testing.T) {
	seats := fleetSeats(10)
	for _, tr := range seats {
		tr.reject = 0.9
	}
	set := defaults()
	s := newSim(t, set, seats...)
	s.run(3*time.Minute, tick, nil)
	require.True(t, s.d.Status().Shift)
	set.Enabled = false
	require.NoError(t, s.d.Update(set))
	set.Enabled = true
	require.NoError(t, s.d.Update(set))
	require.False(t, s.d.Status().Shift)
}
