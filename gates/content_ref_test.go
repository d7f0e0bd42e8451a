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

// findAnchoredPrevAnchors is phraseSet.findAnchored as it was before it
// read each flagged byte's byte before from the word: when the set's
// anchorPrev bytes fold into three classes, the bytes before a word were
// tested eight at once (prevAnchors) and the bytes left tried by
// tryAnchors. The differential tests hold findAnchored equal to it.
// folded and words are foldAnchors(ps).
func findAnchoredPrevAnchors(ps *phraseSet, s []byte, from int, folded [3]uint64, words bool) string {
	const below = bytesOnes * 0x21
	next := 0
	last := len(s) - 8
	i := from
	for ; i <= last; i += 8 {
		x := binary.LittleEndian.Uint64(s[i : i+8])
		m := ((x - below) | x) & bytesHigh
		if m != 0 && words {
			y := x << 8
			if i > 0 {
				y |= uint64(s[i-1])
			}
			m &= prevAnchors(&folded, y)
		}
		if m != 0 {
			if r := tryAnchors(ps, s, i, m, &next); r != "" {
				return r
			}
		}
	}
	if i < len(s) {
		x := binary.LittleEndian.Uint64(s[last:])
		if m := ((x - below) | x) & bytesHigh & (^uint64(0) << (8 * (i - last))); m != 0 {
			return tryAnchors(ps, s, last, m, &next)
		}
	}
	return ""
}

// foldAnchors returns the classes under c|0x20 of the ASCII bytes
// ps.anchorPrev holds, or false when they are more than three.
func foldAnchors(ps *phraseSet) (folded [3]uint64, ok bool) {
	var seen [utf8.RuneSelf]bool
	n := 0
	for c := range utf8.RuneSelf {
		if !ps.anchorPrev[c] {
			continue
		}
		if f := byte(c) | 0x20; !seen[f] {
			if n == len(folded) {
				return [3]uint64{}, false
			}
			seen[f] = true
			folded[n] = bytesOnes * uint64(f)
			n++
		}
	}
	return folded, true
}

// prevAnchors returns, in the high bit of each byte, the bytes of y whose
// c|0x20 is in folded, or outside ASCII (the short zero test: it may flag
// more, never fewer).
func prevAnchors(folded *[3]uint64, y uint64) uint64 {
	lower := y | 0x2020202020202020
	a, b, c := lower^folded[0], lower^folded[1], lower^folded[2]
	zero := (a-bytesOnes)&^a | (b-bytesOnes)&^b | (c-bytesOnes)&^c
	return (zero | y) & bytesHigh
}

// tryAnchors tries, for each byte m flags in the word at s[i] that is an
// anchor, the places up to reach bytes before it (and from *next on).
func tryAnchors(ps *phraseSet, s []byte, i int, m uint64, next *int) string {
	for ; m != 0; m &= m - 1 {
		p := i + bits.TrailingZeros64(m)>>3
		if p == 0 {
			continue
		}
		if c := s[p-1]; c < utf8.RuneSelf && !ps.anchorPrev[c] || !spaceAt(s, p) {
			continue
		}
		for j := max(p-ps.reach, *next); j < p; j++ {
			if k := ps.tryAt(s, j); k >= 0 {
				return ps.reasons[k]
			}
		}
		*next = p
	}
	return ""
}
