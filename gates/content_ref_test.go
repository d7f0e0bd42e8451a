package gates

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// findBytewise is phraseSet.find as it was before the word-at-a-time scan:
// every byte tested against start, then skip. The differential tests hold
// find equal to it (and to the plain walk, refFind).
func findBytewise(ps *phraseSet, s []byte) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !ps.start[c] || c < 0x80 && ps.skip(s, i) {
			continue
		}
		if p := ps.matchAt(s, i); p >= 0 {
			return ps.reasons[p]
		}
	}
	return ""
}

// findAnchoredWordStep is phraseSet.findAnchored as it was before its word
// loop and the bytes it flags were split: each flagged byte tried in the
// loop, the last eight bytes masked inside it. The differential tests hold
// findAnchored equal to it on spaced sets.
func findAnchoredWordStep(ps *phraseSet, s []byte, from int) string {
	const below = bytesOnes * 0x21
	next := 0
	for i := from; i < len(s); i += 8 {
		m := ^uint64(0)
		if i > len(s)-8 {
			m <<= 8 * (i - (len(s) - 8))
			i = len(s) - 8
		}
		x := binary.LittleEndian.Uint64(s[i:])
		for m &= ((x - below) | x) & bytesHigh; m != 0; m &= m - 1 {
			p := i + bits.TrailingZeros64(m)>>3
			if p == 0 {
				continue
			}
			if c := s[p-1]; c < utf8.RuneSelf && !ps.anchorPrev[c] || !spaceAt(s, p) {
				continue
			}
			for j := max(p-ps.reach, next); j < p; j++ {
				if k := ps.tryAt(s, j); k >= 0 {
					return ps.reasons[k]
				}
			}
			next = p
		}
	}
	return ""
}
