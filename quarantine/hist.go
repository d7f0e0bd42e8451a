package quarantine

import "math"

// Price histograms: numBins log-scale bins, two per octave. Bin 0 holds
// prices under 2^minExp (about 0.001, zero and negative prices included),
// bins 1 to numBins-2 split each octave from 2^minExp to 2^21 (about two
// million) at 1.5 × its start, and the last bin holds everything above. A
// tenfold jump moves a quantile by six or seven bins; the quantiles are
// interpolated within a bin on a log scale.
const (
	numBins = 64
	minExp  = -10
)

// priceBin returns the bin of a price, from its float64 exponent and top
// mantissa bit: no logarithm on the bid path.
func priceBin(p float64) int {
	if !(p >= 0x1p-10) { // also NaN
		return 0
	}
	bits := math.Float64bits(p)
	e := int(bits>>52&0x7ff) - 1023
	i := (e-minExp)*2 + int(bits>>51&1) + 1
	if i >= numBins {
		return numBins - 1
	}
	return i
}

// binLower is the lowest price of bin i (0 for bin 0); binLower(i+1) is
// the bin's upper bound.
func binLower(i int) float64 {
	if i <= 0 {
		return 0
	}
	e := (i-1)/2 + minExp
	return math.Ldexp(1+0.5*float64((i-1)%2), e)
}

// quantile returns the q-quantile (0 < q < 1) of a histogram, or 0 when it
// is empty.
func quantile[T uint32 | float32](h *[numBins]T, q float64) float64 {
	total := 0.0
	for _, c := range h {
		total += float64(c)
	}
	if total <= 0 {
		return 0
	}
	target := q * total
	cum := 0.0
	for i, c := range h {
		cf := float64(c)
		if cf > 0 && cum+cf >= target {
			frac := (target - cum) / cf
			lo, hi := binLower(i), binLower(i+1)
			if i == 0 {
				return hi * frac
			}
			return lo * math.Pow(hi/lo, frac)
		}
		cum += cf
	}
	return binLower(numBins)
}
