package quarantine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPriceBin(t *testing.T) {
	f := func(p float64, want int) {
		t.Helper()
		require.Equal(t, want, priceBin(p), "%v", p)
	}
	f(math.NaN(), 0)
	f(-1, 0)
	f(0, 0)
	f(0x1p-11, 0)
	f(0x1p-10, 1)
	f(1.49*0x1p-10, 1)
	f(1.5*0x1p-10, 2)
	f(1, 21)
	f(1.5, 22)
	f(1.99, 22)
	f(2, 23)
	f(0x1p21, numBins-1)
	f(1e300, numBins-1)
	f(math.Inf(1), numBins-1)
	for i := 1; i < numBins; i++ {
		require.Equal(t, i, priceBin(binLower(i)), "bin %d starts at its lower bound", i)
		require.Equal(t, i-1, priceBin(math.Nextafter(binLower(i), 0)), "bin %d ends below bin %d", i-1, i)
	}
	prev := 0
	for p := 1e-4; p < 1e7; p *= 1.01 {
		b := priceBin(p)
		require.GreaterOrEqual(t, b, prev, "monotonic")
		prev = b
	}
}

// Quantiles of a log-normal sample land within a bin's width of the truth,
// and a tenfold shift moves them tenfold.
func TestQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h, h10 [numBins]uint32
	var base [numBins]float32
	for range 100000 {
		p := 2 * math.Exp(0.3*rng.NormFloat64())
		h[priceBin(p)]++
		h10[priceBin(10*p)]++
		base[priceBin(p)] += 0.5
	}
	within := func(got, want float64) {
		t.Helper()
		require.InDelta(t, 1, got/want, 0.15, "got %v want %v", got, want)
	}
	within(quantile(&h, 0.5), 2)
	within(quantile(&h, 0.95), 2*math.Exp(0.3*1.645))
	within(quantile(&base, 0.5), 2)
	within(quantile(&h10, 0.5)/quantile(&h, 0.5), 10)
	within(quantile(&h10, 0.95)/quantile(&h, 0.95), 10)
	var empty [numBins]uint32
	require.Zero(t, quantile(&empty, 0.5))

	// A quantile on a bin's last bid is that bin's upper bound, not the
	// lower bound of the next bin holding a bid; bin 0 starts at 0.
	var gap [numBins]uint32
	gap[5], gap[9] = 1, 1
	require.InDelta(t, binLower(6), quantile(&gap, 0.5), 1e-15)
	require.Zero(t, binLower(0))
}

// A value never added is "seen" only as often as the Bloom filter's false
// positive rate says: about 2% with 300 values in the sketch.
func TestSketchFalsePositives(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var s sketch
	for range 300 {
		h := rng.Uint64()
		s.add(h)
		require.True(t, s.has(h))
	}
	fp := 0
	for range 100000 {
		if s.has(rng.Uint64()) {
			fp++
		}
	}
	require.Less(t, fp, 4000)
	var o sketch
	o.merge(&s)
	require.Equal(t, s[3].Load(), o[3].Load())
	o.clear()
	require.Zero(t, o[3].Load())
}
