package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// countDist is a distribution of non-negative counts: -bids and
// -seats-per-response. The zero value is "per imp" for -bids (one bid per
// imp the bidder can bid on) and "all" for -seats-per-response.
type countDist struct {
	kind   string  // "" (the flag's default meaning), fixed, uniform, geo
	lo, hi int     // fixed: lo; uniform: lo..hi inclusive
	mean   float64 // geo: the mean of a geometric distribution on 1, 2, ...
}

// maxCount bounds every drawn count: a response of more bids than that is
// past any exchange's limit (bidguard's limits.maxBids defaults to 1,000).
const maxCount = 100_000

// parseCountDist reads N, A-B (uniform, inclusive) or geo:MEAN (geometric
// on 1, 2, ... with that mean, so 1 is the most likely count). def is the
// word that selects the zero value ("imps", "all").
func parseCountDist(s, def string) (countDist, error) {
	bad := func(why string) (countDist, error) {
		return countDist{}, fmt.Errorf("%q: %s (want %s, N, A-B or geo:MEAN)", s, why, def)
	}
	switch {
	case s == "" || s == def:
		return countDist{}, nil
	case strings.HasPrefix(s, "geo:"):
		m, err := strconv.ParseFloat(strings.TrimPrefix(s, "geo:"), 64)
		if err != nil || !(m >= 1) || m > maxCount {
			return bad(fmt.Sprintf("MEAN must be in [1, %d]", maxCount))
		}
		return countDist{kind: "geo", mean: m}, nil
	}
	lo, hi, err := parseRange(s)
	if err != nil {
		return bad(err.Error())
	}
	if lo < 1 || hi > maxCount {
		return bad(fmt.Sprintf("counts must be in 1..%d", maxCount))
	}
	if lo == hi {
		return countDist{kind: "fixed", lo: lo, hi: lo}, nil
	}
	return countDist{kind: "uniform", lo: lo, hi: hi}, nil
}

// draw returns a count; def when d is the zero value.
func (d countDist) draw(rng *rand.Rand, def int) int {
	switch d.kind {
	case "fixed":
		return d.lo
	case "uniform":
		return d.lo + rng.IntN(d.hi-d.lo+1)
	case "geo":
		// Inverse transform: P(K > k) = (1-p)^k with p = 1/mean.
		if d.mean == 1 {
			return 1
		}
		u := 1 - rng.Float64() // (0, 1]
		k := 1 + int(math.Floor(math.Log(u)/math.Log1p(-1/d.mean)))
		return min(k, maxCount)
	}
	return def
}

// priceNoise spreads valid bids' prices: a lognormal factor around median
// times the bid's reference price (the imp's floor, or the per-second floor
// times the duration when higher; 1 when the imp has neither), so the
// median valid price is median × reference and ln(price/reference) has
// standard deviation sigma. sigma 0 gives every bid median × reference.
type priceNoise struct {
	median, sigma float64
	seed          uint64
}

func newPriceNoise(median, sigma float64, seed uint64) (priceNoise, error) {
	switch {
	case !(median >= 1) || median > maxValidMultiple:
		return priceNoise{}, fmt.Errorf("-price-median must be in [1, %d] (a multiple of the floor that bidSanity accepts)", maxValidMultiple)
	case !(sigma >= 0) || sigma > 3:
		return priceNoise{}, errors.New("-price-sigma must be in [0, 3]")
	}
	return priceNoise{median: median, sigma: sigma, seed: seed}, nil
}

// maxValidMultiple is bidSanity's default maxFloorMultiple: a valid bid's
// price stays at or under this multiple of its imp's floor.
const maxValidMultiple = 50

// factor returns the multiple of the reference price for the bid with
// serial number n: a pure function of (seed, n), so a run's prices do not
// depend on which connection got which bid. rng is scratch state (its
// source is reseeded).
func (pn priceNoise) factor(src *rand.PCG, rng *rand.Rand, n uint64) float64 {
	if pn.sigma == 0 {
		return pn.median
	}
	src.Seed(pn.seed, n)
	return pn.median * math.Exp(pn.sigma*rng.NormFloat64())
}

// validPrice returns price clamped into [ref, maxValidMultiple × floor]
// (the upper bound only when the imp has a floor) and rounded to whole
// micro-units upward (the unit bidguard compares prices in), so that a
// valid bid never fails floor, the per-second floor or bidSanity.
func validPrice(price, ref, floor float64) float64 {
	lo := math.Ceil(ref*1e6-1e-6) / 1e6
	p := math.Max(math.Round(price*1e6)/1e6, lo)
	if floor > 0 {
		p = math.Min(p, math.Floor(floor*maxValidMultiple*1e6+1e-6)/1e6)
	}
	return p
}

// seatNamer writes seat names: "seat-" and the seat's number (1-based),
// zero-padded to at least five digits (seat-00001), so names sort in seat
// order and `loadtest seats` writes the same names.
type seatNamer struct{ width int }

func newSeatNamer(seats int) seatNamer {
	return seatNamer{width: max(5, len(strconv.Itoa(seats)))}
}

func (sn seatNamer) append(dst []byte, n int) []byte {
	dst = append(dst, "seat-"...)
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for range sn.width - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// parseSeatName returns N of "seat-N" (leading zeros allowed).
func parseSeatName(s string) (int, bool) {
	digits, ok := strings.CutPrefix(s, "seat-")
	if !ok || digits == "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || strings.HasPrefix(digits, "+") {
		return 0, false
	}
	return n, true
}
