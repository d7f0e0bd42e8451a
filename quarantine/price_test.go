package quarantine

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stepAt is a seat whose median price is 1.5 until at, then 1.5 × factor.
func stepAt(at time.Duration, factor float64) func(time.Duration) float64 {
	return jumpAt(at, 1.5, 1.5*factor)
}

// priceStep runs four seats at the defaults for two hours, then moves
// seat s1's prices by factor and returns how long it took to quarantine it
// (failing after limit), and the reason.
func priceStep(t *testing.T, set Settings, factor float64, limit time.Duration) (time.Duration, string) {
	t.Helper()
	seats := steadySeats(4)
	seats[1].median = stepAt(2*hour, factor)
	s := newSim(t, set, seats...)
	s.run(2*hour, tick, nil)
	require.Empty(t, s.kinds())
	at := s.untilQuarantined("s1", limit, tick) - 2*hour
	require.Equal(t, "price", s.state("s1"))
	require.Equal(t, []string{"quarantined s1 price"}, s.kinds())
	return at, s.events[0].Reason
}

// A sustained 2× move, up or down, is caught within two minutes at the
// defaults (window 1m, dwell 30s, price 1.8, priceDrop 0.55).
func TestPriceDoublingCaughtWithinTwoMinutes(t *testing.T) {
	up, reason := priceStep(t, defaults(), 2, 2*time.Minute)
	t.Logf("2x up: quarantined %v after the step (%s)", up, reason)
	require.Regexp(t, `^\d\.\d+ over threshold 1\.8 for 30s$`, reason)
	require.GreaterOrEqual(t, up, 30*time.Second, "the dwell holds")

	down, reason := priceStep(t, defaults(), 0.5, 2*time.Minute)
	t.Logf("2x down: quarantined %v after the step (%s)", down, reason)
	require.Regexp(t, `^0\.\d+ under threshold 0\.55 for 30s$`, reason)
	require.GreaterOrEqual(t, down, 30*time.Second)
}

// A tenfold move either way is caught faster: the p95 (or p5) moves with
// the first few bids.
func TestPriceTenfoldCaught(t *testing.T) {
	up, reason := priceStep(t, defaults(), 10, 2*time.Minute)
	t.Logf("10x up: %v (%s)", up, reason)
	require.Less(t, up, 45*time.Second)
	down, reason := priceStep(t, defaults(), 0.1, 2*time.Minute)
	t.Logf("10x down: %v (%s)", down, reason)
	require.Less(t, down, 45*time.Second)
	require.Contains(t, reason, "under threshold 0.55")
}

// Lognormal noise (σ 0.3) around a constant for an hour, after the
// baseline is warm, at the defaults: the price signal stays well inside
// both thresholds and nothing is flagged.
func TestPriceNoiseNotFlagged(t *testing.T) {
	seats := steadySeats(6)
	s := newSim(t, defaults(), seats...)
	s.run(time.Hour, tick, nil)
	hi, lo := 0.0, math.Inf(1)
	s.run(time.Hour, tick, func() {
		for _, seat := range s.d.seats {
			require.True(t, seat.judged[Price-1], seat.key)
			require.Zero(t, seat.overSince[Price-1], seat.key)
			hi, lo = max(hi, seat.value[Price-1]), min(lo, seat.low)
		}
	})
	t.Logf("over an hour of noise: price signal in [%.2f, %.2f]", lo, hi)
	require.Less(t, hi, 1.5)
	require.Greater(t, lo, 0.7)
	require.Empty(t, s.kinds())
}

// The baseline does not absorb a shift during the dwell: with a dwell
// half the baseline window, a doubling stays over its threshold for the
// whole dwell because the baseline learns nothing while it is over.
func TestPriceBaselineFrozenDuringTheDwell(t *testing.T) {
	set := defaults()
	set.BaselineWindow, set.Dwell = 10*time.Minute, 5*time.Minute
	up, _ := priceStep(t, set, 2, 7*time.Minute)
	require.GreaterOrEqual(t, up, set.Dwell)
	down, _ := priceStep(t, set, 0.5, 7*time.Minute)
	require.GreaterOrEqual(t, down, set.Dwell)
}

// Prices under the lowest bin (zero included) read as equal on both
// sides, never as a drop.
func TestPriceZeroPricesAreNoDrop(t *testing.T) {
	seats := steadySeats(4)
	seats[0].median = func(time.Duration) float64 { return 0.0001 }
	s := newSim(t, defaults(), seats...)
	s.run(2*hour, tick, nil)
	require.Empty(t, s.kinds())
	require.InDelta(t, 1, s.d.seats[0].low, 1e-9)
}

// A slow drift either way (prices doubling, or halving, every two hours
// for eight hours) is followed by the baseline at the defaults: neither
// side of the price signal comes near its threshold.
func TestPriceSlowDriftNotFlaggedAtTheDefaults(t *testing.T) {
	seats := steadySeats(4)
	seats[0].median = func(t time.Duration) float64 { return math.Pow(2, t.Hours()/2) }
	seats[2].median = func(t time.Duration) float64 { return 3 / math.Pow(2, t.Hours()/2) }
	s := newSim(t, defaults(), seats...)
	hi, lo := 0.0, math.Inf(1)
	s.run(8*hour, tick, func() {
		for _, seat := range s.d.seats {
			if seat.judged[Price-1] {
				hi, lo = max(hi, seat.value[Price-1]), min(lo, seat.low)
			}
		}
	})
	t.Logf("drifting seats: price signal in [%.2f, %.2f]", lo, hi)
	require.Empty(t, s.kinds())
	require.Less(t, hi, 1.6)
	require.Greater(t, lo, 0.62)
}
