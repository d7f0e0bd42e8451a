package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hit lists are sorted by bid, response-level hits last, stably: as a
// stable sort by that key would sort them.
func TestHitSorterIsAStableSortByBid(t *testing.T) {
	var s hitSorter
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		bids := 1 + r.IntN(50)
		var h []Hit
		for g := range 1 + r.IntN(4) { // one run per gate, in bid order
			for i := range bids {
				if r.IntN(3) == 0 {
					h = append(h, Hit{Bid: i, Gate: string(rune('a' + g))})
				}
			}
			if r.IntN(2) == 0 {
				h = append(h, Hit{Bid: -1, Gate: string(rune('a' + g))})
			}
		}
		if round%7 == 0 {
			r.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		}
		for i := range h {
			h[i].Reason = string(rune('0' + i%10)) // tells equal keys apart
		}
		want := slices.Clone(h)
		slices.SortStableFunc(want, func(a, b Hit) int { return hitKey(a, bids) - hitKey(b, bids) })
		s.sort(h, bids)
		require.Equal(t, want, h)
	}
}

func hitKey(h Hit, bids int) int {
	if h.Bid < 0 {
		return bids
	}
	return h.Bid
}

// Two gates' warnings on every one of 1,000 bids: linear, and allocation
// free once the sorter's storage has grown.
func BenchmarkHitSorter(b *testing.B) {
	var src []Hit
	for g := range 2 {
		for i := range 1000 {
			src = append(src, Hit{Bid: i, Gate: string(rune('a' + g))})
		}
	}
	h := make([]Hit, len(src))
	var s hitSorter
	b.ReportAllocs()
	for b.Loop() {
		copy(h, src)
		s.sort(h, 1000)
	}
}
