package gates

// The refusal phrases of content as a phraseSet: a byte trie over their
// normalised form, walked from the places of the text its prefilters
// cannot rule out (content.go tells which).

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
)

// phraseSet finds phrases in text on word boundaries, case-insensitively,
// reading ’ as ' and whitespace runs as one space. It is immutable after
// construction and safe for concurrent use.
type phraseSet struct {
	nodes   []trieNode
	reasons []string // per phrase: "refusal phrase detected: <phrase>"
	// startsWord/endsWord: the phrase begins/ends with a word character, so a
	// word boundary is required there.
	startsWord, endsWord []bool
	start                [256]bool // bytes that may begin a match
	// The ASCII prefilter (skip): for a lower-case ASCII first byte c,
	// wordStart[c] tells that every phrase beginning with c needs a word
	// boundary before it, single[c] that one phrase is c alone, and
	// second[c] holds (as a bit set) the ASCII bytes that may follow c in a
	// phrase, white space read as ' '. follows[c] is the same for c of
	// any case and the text's byte after it: the ASCII bytes d such that
	// c d may begin a phrase (all of them when c alone is one).
	wordStart, single [utf8.RuneSelf]bool
	second, follows   [utf8.RuneSelf][2]uint64
	// The word-at-a-time scan (find, for a set not spaced): when the ASCII
	// bytes that may begin a match fall into at most len(folded) classes
	// under c|0x20, eight bytes are tested at once for one of them or a
	// UTF-8 lead byte. folded holds each class's byte in every byte,
	// unused slots 0 (no byte ORed with 0x20 is 0). afterLetter: every such
	// ASCII byte needs a word boundary before it (wordStart), so no ASCII
	// byte right after an ASCII letter begins a match.
	wordScan, afterLetter bool
	folded                [3]uint64
	// spaced: every phrase holds a space, so text without white space
	// (ASCII, or a rune outside ASCII) holds none of them.
	spaced bool
	// The anchored scan (spaced sets): a match begins at most reach bytes
	// before the white space its phrase's first space reads (utf8.UTFMax
	// per rune before that space), right after a rune that ends the part
	// before the space: an ASCII byte anchorPrev holds, or a byte outside
	// ASCII.
	reach      int
	anchorPrev [utf8.RuneSelf]bool
	// anchorAfter is anchorPrev over every byte, true outside ASCII: the
	// bytes after which findAnchored tries a byte of white space.
	anchorAfter [256]bool
	// minLen is the fewest runes of a phrase: a match spans at least one
	// byte of text per rune of its phrase (a text rune or white space run
	// reads as one phrase rune).
	minLen int
}

type trieNode struct {
	edges []trieEdge
	// phrase is the lowest index of a phrase ending here, or -1.
	phrase int
}

type trieEdge struct {
	b  byte
	to int32
}

func newPhraseSet(list []string) phraseSet {
	ps := phraseSet{nodes: []trieNode{{phrase: -1}}, minLen: math.MaxInt, spaced: true}
	for c := range ps.wordStart {
		ps.wordStart[c] = true
	}
	for i, p := range list {
		norm := normalisePhrase(p)
		first, _ := utf8.DecodeRuneInString(norm)
		last, _ := utf8.DecodeLastRuneInString(norm)
		ps.reasons = append(ps.reasons, "refusal phrase detected: "+p)
		ps.startsWord = append(ps.startsWord, isWordRune(first))
		ps.endsWord = append(ps.endsWord, isWordRune(last))
		n := 0
		for j := 0; j < len(norm); j++ {
			n = ps.child(n, norm[j], true)
		}
		ps.addPrefilter(norm, isWordRune(first))
		ps.minLen = min(ps.minLen, utf8.RuneCountInString(norm))
		ps.spaced = ps.spaced && strings.Contains(norm, " ")
		ps.addAnchor(norm)
		if ps.nodes[n].phrase < 0 {
			ps.nodes[n].phrase = i
		}
	}
	for _, e := range ps.nodes[0].edges {
		ps.start[e.b] = true
		if e.b < utf8.RuneSelf {
			ps.start[unicode.ToUpper(rune(e.b))&0x7f] = true
		}
	}
	// Any non-ASCII rune may fold to a phrase's first byte (K, ’, ...).
	for c := 0xc0; c < 0x100; c++ {
		ps.start[c] = true
	}
	for c := range ps.anchorAfter {
		ps.anchorAfter[c] = c >= utf8.RuneSelf || ps.anchorPrev[c]
	}
	ps.wordScan = ps.foldStarts()
	ps.fillFollows()
	return ps
}

// addAnchor records the part of the normalised phrase norm before its first
// space (none: nothing, the set is not spaced) in reach and anchorPrev.
func (ps *phraseSet) addAnchor(norm string) {
	sp := strings.IndexByte(norm, ' ')
	if sp <= 0 {
		return
	}
	ps.reach = max(ps.reach, utf8.UTFMax*utf8.RuneCountInString(norm[:sp]))
	if c := norm[sp-1]; c < utf8.RuneSelf {
		// The text's byte reads as c: c itself or, for a letter, its
		// upper case (matchAt lower-cases ASCII A-Z alone).
		ps.anchorPrev[c] = true
		if c >= 'a' && c <= 'z' {
			ps.anchorPrev[c-'a'+'A'] = true
		}
	}
}

// fillFollows fills follows from single and second.
func (ps *phraseSet) fillFollows() {
	for c := range utf8.RuneSelf {
		lc := lowerASCII(byte(c))
		for d := range utf8.RuneSelf {
			ld := lowerASCII(byte(d))
			if d == ' ' || d >= '\t' && d <= '\r' {
				ld = ' '
			}
			if ps.single[lc] || ps.second[lc][ld>>6]&(1<<(ld&63)) != 0 {
				ps.follows[c][d>>6] |= 1 << (d & 63)
			}
		}
	}
}

// foldStarts fills folded and afterLetter from start and wordStart, and
// reports whether the first bytes fit in folded.
func (ps *phraseSet) foldStarts() bool {
	var seen [256]bool
	n := 0
	ps.afterLetter = true
	for c := 0; c < utf8.RuneSelf; c++ {
		if !ps.start[c] {
			continue
		}
		ps.afterLetter = ps.afterLetter && ps.wordStart[lowerASCII(byte(c))]
		if f := byte(c) | 0x20; !seen[f] {
			if n == len(ps.folded) {
				return false
			}
			seen[f] = true
			ps.folded[n] = bytesOnes * uint64(f)
			n++
		}
	}
	return true
}

const (
	bytesOnes = 0x0101010101010101
	bytesLow7 = 0x7f7f7f7f7f7f7f7f
	bytesHigh = 0x8080808080808080
)

// candidates returns, in the high bit of each byte, the bytes of x (eight
// bytes of text, little-endian) that may begin a match as far as folded
// tells: a byte c with c|0x20 in folded, or a UTF-8 lead byte (0xc0 and
// up, the non-ASCII bytes start holds). Every byte start holds is among
// them; find checks each with tryAt. The test for a zero byte is the short
// one ("Bit Twiddling Hacks", haszero): it may also flag the byte after a
// flagged one, never miss one.
func (ps *phraseSet) candidates(x uint64) uint64 {
	lower := x | 0x2020202020202020
	a, b, c := lower^ps.folded[0], lower^ps.folded[1], lower^ps.folded[2]
	zero := (a-bytesOnes)&^a | (b-bytesOnes)&^b | (c-bytesOnes)&^c
	return (zero | x&(x<<1)) & bytesHigh // x&(x<<1): bits 7 and 6 set, a lead byte
}

// asciiLetters returns the high bit of each byte of x that is an ASCII
// letter.
func asciiLetters(x uint64) uint64 { return asciiBetween(x|0x2020202020202020, 'a', 'z') }

// asciiBetween returns the high bit of each byte of x in lo..hi, both
// ASCII.
func asciiBetween(x uint64, lo, hi byte) uint64 {
	v := x & bytesLow7
	ge := v + bytesOnes*uint64(0x80-lo) // high bit set where v >= lo
	gt := v + bytesOnes*uint64(0x7f-hi) // high bit set where v > hi
	return ge &^ gt &^ x & bytesHigh
}

// addPrefilter records the normalised phrase norm in the ASCII prefilter
// (wordStart starts true for every byte and only ever clears).
func (ps *phraseSet) addPrefilter(norm string, startsWord bool) {
	c := norm[0]
	if c >= utf8.RuneSelf {
		return // found by the full walk only
	}
	if !startsWord {
		ps.wordStart[c] = false
	}
	if len(norm) == 1 {
		ps.single[c] = true
		return
	}
	if d := norm[1]; d < utf8.RuneSelf {
		ps.second[c][d>>6] |= 1 << (d & 63)
	}
}

// skip reports whether no phrase can match at s[i], an ASCII byte that
// may begin one, judging from the bytes around it alone: a word character
// before it when every phrase beginning with it needs a boundary there, or
// an ASCII byte after it that no such phrase has second (follows). It never
// skips a position where matchAt would find a phrase; anything non-ASCII
// next to s[i] is left to matchAt.
func (ps *phraseSet) skip(s []byte, i int) bool {
	c := lowerASCII(s[i])
	if ps.wordStart[c] && i > 0 && s[i-1] < utf8.RuneSelf && asciiWord[s[i-1]] {
		return true
	}
	if ps.single[c] {
		return false
	}
	if i+1 == len(s) {
		return true
	}
	d := s[i+1]
	return d < utf8.RuneSelf && ps.follows[s[i]][d>>6]&(1<<(d&63)) == 0
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiWord tells the ASCII word characters: isWordRune on ASCII.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = isWordRune(rune(c))
	}
	return t
}()

func (ps *phraseSet) child(n int, b byte, add bool) int {
	for _, e := range ps.nodes[n].edges {
		if e.b == b {
			return int(e.to)
		}
	}
	if !add {
		return -1
	}
	ps.nodes = append(ps.nodes, trieNode{phrase: -1})
	to := len(ps.nodes) - 1
	ps.nodes[n].edges = append(ps.nodes[n].edges, trieEdge{b: b, to: int32(to)})
	return to
}

// normalisePhrase lower-cases p, reads ’ as ', collapses whitespace runs to
// one space and trims it.
func normalisePhrase(p string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(p) {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case r == '’':
			r = '\''
		default:
			r = unicode.ToLower(r)
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func wordBefore(s []byte, i int) bool {
	if i <= 0 {
		return false
	}
	if c := s[i-1]; c < utf8.RuneSelf {
		return isWordRune(rune(c))
	}
	r, _ := utf8.DecodeLastRune(s[:i])
	return isWordRune(r)
}

func wordAfter(s []byte, i int) bool {
	if i >= len(s) {
		return false
	}
	if c := s[i]; c < utf8.RuneSelf {
		return isWordRune(rune(c))
	}
	r, _ := utf8.DecodeRune(s[i:])
	return isWordRune(r)
}

// find returns the reason of the first phrase found in s (leftmost; at one
// position, the first listed), or "".
func (ps *phraseSet) find(s []byte) string {
	if len(s) < ps.minLen {
		return ""
	}
	if ps.spaced {
		if len(s) >= 8 {
			return ps.findAnchored(s, 0)
		}
		if !shortMaybeSpace(s) {
			return ""
		}
	}
	if !ps.wordScan || len(s) < 8 {
		for i := range s {
			if p := ps.tryAt(s, i); p >= 0 {
				return ps.reasons[p]
			}
		}
		return ""
	}
	// Eight bytes at a time; the last eight overlap the ones before, their
	// bytes already tested masked off. letters holds the ASCII letters of
	// the eight bytes before (in the last eight, the first untested byte
	// follows one of their own).
	var letters uint64
	for i := 0; i < len(s); i += 8 {
		m := ^uint64(0)
		if i > len(s)-8 {
			m <<= 8 * (i - (len(s) - 8))
			i = len(s) - 8
		}
		x := binary.LittleEndian.Uint64(s[i:])
		m &= ps.candidates(x)
		if ps.afterLetter {
			l := asciiLetters(x)
			before := letters>>56 | l<<8
			letters = l
			m &^= before &^ x // ASCII candidates only, as skip
		}
		for ; m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			if j+1 < len(s) { // skip's test of the byte after, inline
				if c, d := s[j], s[j+1]; c|d < utf8.RuneSelf && ps.follows[c][d>>6]&(1<<(d&63)) == 0 {
					continue
				}
			}
			if p := ps.tryAt(s, j); p >= 0 {
				return ps.reasons[p]
			}
		}
	}
	return ""
}

// findAnchored is find for a spaced set on s of eight bytes and more, from
// s[from] (none of the bytes before it white space): the places a match may begin are tried
// only before an anchor, a rune of white space right after a rune that may
// end a phrase's part before its first space, and at most reach bytes
// before it. Every match has its anchor (the white space its first space
// reads, with no white space between the two: the part before the space
// holds none), so the leftmost match is the first found trying the places
// before each anchor in turn, from the last anchor on: a match that begins
// before an anchor has its own anchor before it.
func (ps *phraseSet) findAnchored(s []byte, from int) string {
	next := 0 // the places before next have been tried or cannot begin a match
	for p := ps.anchorFrom(s, from); p >= 0; p = ps.anchorFrom(s, p+1) {
		if r := ps.tryAnchor(s, p, &next); r != "" {
			return r
		}
	}
	return ""
}

// anchorFrom returns the first place p from i on (in s of eight bytes and
// more) that may be an anchor, or -1: a byte up to ' ' or outside ASCII
// right after a byte anchorAfter holds (at p == 0, after none: 0).
//
// A byte up to ' ' or outside ASCII: a byte below 0x21 leaves the high bit
// set in its lane of x-0x21 (the borrow of a lane below only reaches lanes
// above one that is below 0x21 itself, "Bit Twiddling Hacks", hasless), a
// byte outside ASCII has it set in x. Sixteen bytes are tested at once,
// then each word of them that holds a flagged byte (a word in two, in
// markup) a byte at a time, the byte before each read from the word
// shifted up one byte with the byte before it below. The loop calls
// nothing, so that what it holds stays in registers; below and high are
// variables for the same reason.
func (ps *phraseSet) anchorFrom(s []byte, i int) int {
	below, high := wordsBelowSpace, wordsHigh
	var prev uint64 // s[i-1], 0 at the start of s
	if i > 0 {
		prev = uint64(s[i-1])
	}
	t := s[i:]
	for ; len(t) >= 16; t = t[16:] {
		x, y := binary.LittleEndian.Uint64(t), binary.LittleEndian.Uint64(t[8:])
		if mx, my := ((x-below)|x)&high, ((y-below)|y)&high; mx|my != 0 {
			if k := ps.anchorIn(mx, x<<8|prev); k >= 0 {
				return len(s) - len(t) + k
			}
			if k := ps.anchorIn(my, y<<8|x>>56); k >= 0 {
				return len(s) - len(t) + 8 + k
			}
		}
		prev = y >> 56
	}
	if len(t) >= 8 {
		x := binary.LittleEndian.Uint64(t)
		if k := ps.anchorIn(((x-below)|x)&high, x<<8|prev); k >= 0 {
			return len(s) - len(t) + k
		}
		t = t[8:]
	}
	if len(t) == 0 {
		return -1
	}
	// The last eight bytes of s, those tested above masked off.
	last := len(s) - 8
	x := binary.LittleEndian.Uint64(s[last:])
	y := x << 8
	if last > 0 {
		y |= uint64(s[last-1])
	}
	if k := ps.anchorIn(((x-below)|x)&high&(^uint64(0)<<(8*(8-len(t)))), y); k >= 0 {
		return last + k
	}
	return -1
}

// The constants of anchorFrom's word test, as variables.
var wordsBelowSpace, wordsHigh uint64 = bytesOnes * 0x21, bytesHigh

// anchorIn returns the place in a word of the first byte m flags (in the
// high bit of each byte) whose byte before, in y (the word shifted up one
// byte, the byte before it below), anchorAfter holds; -1 when none does.
func (ps *phraseSet) anchorIn(m, y uint64) int {
	for ; m != 0; m &= m - 1 {
		sh := uint(bits.TrailingZeros64(m)) &^ 7
		if ps.anchorAfter[byte(y>>sh)] {
			return int(sh >> 3)
		}
	}
	return -1
}

// tryAnchor is findAnchored at s[p], a byte flagged after a byte that may
// end a phrase's part before its first space: when a rune of white space
// begins there (an anchor), the places up to reach bytes before it (and
// from *next on) are tried. It returns the reason of the phrase found, or
// "".
func (ps *phraseSet) tryAnchor(s []byte, p int, next *int) string {
	if p == 0 || !spaceAt(s, p) {
		return ""
	}
	for j := max(p-ps.reach, *next); j < p; j++ {
		if k := ps.tryAt(s, j); k >= 0 {
			return ps.reasons[k]
		}
	}
	*next = p
	return ""
}

// spaceAt reports whether a rune of white space, as matchAt reads it,
// begins at s[p].
func spaceAt(s []byte, p int) bool {
	switch c := s[p]; {
	case c < utf8.RuneSelf:
		return c == ' ' || c >= '\t' && c <= '\r'
	case c < 0xc0: // a continuation byte reads as utf8.RuneError
		return false
	}
	r, _ := utf8.DecodeRune(s[p:])
	return unicode.IsSpace(r)
}

// shortMaybeSpace reports whether s, of fewer than eight bytes, holds a
// byte up to ' ' or outside ASCII, where white space may begin.
func shortMaybeSpace(s []byte) bool {
	for _, c := range s {
		if c <= ' ' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// tryAt returns the lowest phrase index that matches at s[i], or -1.
func (ps *phraseSet) tryAt(s []byte, i int) int {
	c := s[i]
	if !ps.start[c] || c < utf8.RuneSelf && ps.skip(s, i) {
		return -1
	}
	return ps.matchAt(s, i)
}

// matchAt walks the trie from s[i], normalising the text as it goes, and
// returns the lowest phrase index that matches there with its boundaries.
func (ps *phraseSet) matchAt(s []byte, i int) int {
	prevWord := wordBefore(s, i)
	n, best := 0, -1
	var tmp [utf8.UTFMax]byte
	for i < len(s) {
		c := s[i]
		var bs []byte
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i = skipWhitespace(s, i)
			tmp[0], bs = ' ', tmp[:1]
		case c < utf8.RuneSelf:
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			tmp[0], bs = c, tmp[:1]
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			switch {
			case unicode.IsSpace(r):
				i = skipWhitespace(s, i)
				tmp[0], bs = ' ', tmp[:1]
			case r == '’':
				tmp[0], bs = '\'', tmp[:1]
				i += size
			default:
				bs = tmp[:utf8.EncodeRune(tmp[:], unicode.ToLower(r))]
				i += size
			}
		}
		for _, b := range bs {
			if n = ps.child(n, b, false); n < 0 {
				return best
			}
		}
		if p := ps.nodes[n].phrase; p >= 0 && (best < 0 || p < best) &&
			!(ps.startsWord[p] && prevWord) && !(ps.endsWord[p] && wordAfter(s, i)) {
			best = p
		}
	}
	return best
}

// skipWhitespace returns the index past the run of whitespace at s[i].
func skipWhitespace(s []byte, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}
