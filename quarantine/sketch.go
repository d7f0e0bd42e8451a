package quarantine

import "sync/atomic"

// A sketch is a Bloom filter of sketchBits bits with two probes, over
// 64-bit hashes of crid and adomain values: the strings are never kept. Its
// words are atomics: the bid path probes and sets bits while the detector's
// goroutine merges and clears whole sketches. With n distinct values a
// probe of a value never added answers "seen" with probability about
// (1 - e^(-2n/4096))²: 2% at 300 values, 15% at 1,000. An overfull sketch
// only makes values look seen, so novelty reads low, never high.
const (
	sketchBits  = 4096
	sketchWords = sketchBits / 64
	sketchMask  = sketchBits - 1
)

type sketch [sketchWords]atomic.Uint64

// probes returns the two bit positions of a hash: its low and high halves.
func probes(h uint64) (a, b uint64) { return h & sketchMask, h >> 32 & sketchMask }

func (s *sketch) has(h uint64) bool {
	a, b := probes(h)
	return s[a>>6].Load()&(1<<(a&63)) != 0 && s[b>>6].Load()&(1<<(b&63)) != 0
}

// add sets the bits of h; a bit already set is not written again, so a
// value seen often costs loads only.
func (s *sketch) add(h uint64) {
	a, b := probes(h)
	for _, p := range [2]uint64{a, b} {
		w, bit := &s[p>>6], uint64(1)<<(p&63)
		if w.Load()&bit == 0 {
			w.Or(bit)
		}
	}
}

// merge adds every bit of o.
func (s *sketch) merge(o *sketch) {
	for i := range s {
		if v := o[i].Load(); v != 0 {
			s[i].Or(v)
		}
	}
}

func (s *sketch) clear() {
	for i := range s {
		s[i].Store(0)
	}
}
