package jsonraw

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

// KeyIs reports whether the raw key (the bytes between the quotes, escapes
// kept) matches name, an ASCII name, as encoding/json matches a key to a
// struct field: escapes resolved, then Unicode simple case folding. With a
// single candidate name an exact match is a folded match, so this is the
// whole rule; for several names use Keys, which prefers an exact match.
func KeyIs(raw []byte, name string) bool {
	// Every character of name takes at least one byte of raw, and an escape
	// or a non-ASCII rune folding to ASCII (U+017F, U+212A) takes more: a raw
	// key as long as name matches only byte for byte, folding ASCII case.
	if len(raw) <= len(name) {
		if len(raw) < len(name) {
			return false
		}
		for i := 0; i < len(raw); i++ {
			if asciiLower(raw[i]) != asciiLower(name[i]) {
				return false
			}
		}
		return true
	}
	i, j := 0, 0
	for i < len(raw) {
		if j >= len(name) {
			return false
		}
		var r rune
		r, i = Rune(raw, i)
		if !foldsTo(r, name[j]) {
			return false
		}
		j++
	}
	return j == len(name)
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldsTo reports whether rune r equals the ASCII byte c under Unicode simple
// case folding: ASCII case, and the only two non-ASCII runes whose folding
// orbit holds an ASCII letter, U+017F (long s) and U+212A (Kelvin sign).
func foldsTo(r rune, c byte) bool {
	lc := asciiLower(c)
	switch {
	case r < utf8.RuneSelf:
		return asciiLower(byte(r)) == lc
	case r == 0x017F:
		return lc == 's'
	case r == 0x212A:
		return lc == 'k'
	}
	return false
}

// Keys is a list of ASCII names compiled for matching object keys, as
// encoding/json matches keys to the fields of one struct. Build it once
// (NewKeys); it is immutable and safe for concurrent use.
type Keys struct {
	names []string
	byLen [][]int // indexes into names by name length, in list order
	// exact is an open-addressing table (linear probing, mask+1 slots, at
	// most half full) of the names by their words, hashed with a
	// multiplier that puts every name in its first slot when one of those
	// NewKeys tries does (else the most names): the exact match in one
	// comparison of two words.
	exact []exactSlot
	mask  uint64
	mul   uint64
	shift uint8
}

// exactSlot is a name of a Keys table, by keyWords; idx is its index + 1
// (0: an empty slot).
type exactSlot struct {
	first, last uint64
	n, idx      int32
}

// keyWords packs a key's bytes into words without reading past them: first
// holds its first eight bytes (fewer zero-padded), last the last eight of a
// key longer than eight (else 0). Keys of at most 16 bytes are equal exactly
// when their words and lengths are.
func keyWords[T string | []byte](b T) (first, last uint64) {
	switch n := len(b); {
	case n >= 8:
		first = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if n > 8 {
			b := b[n-8:]
			last = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		}
	case n >= 4: // two 4-byte loads that overlap: the shared bytes OR to themselves
		lo := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
		hi := uint64(b[n-4]) | uint64(b[n-3])<<8 | uint64(b[n-2])<<16 | uint64(b[n-1])<<24
		first = lo | hi<<(8*(n-4))
	case n >= 2:
		lo := uint64(b[0]) | uint64(b[1])<<8
		hi := uint64(b[n-2]) | uint64(b[n-1])<<8
		first = lo | hi<<(8*(n-2))
	case n == 1:
		first = uint64(b[0])
	}
	return first, last
}

// slot returns the first slot of a key's words: the top bits of their
// product with mul, below the table's size. The length is left out: a key
// of at most eight bytes is its first word, zero-padded (a key holding a
// zero byte merely shares a slot; matches compare lengths).
func (k *Keys) slot(first, last uint64) uint64 {
	return (first ^ last*0x9e3779b97f4a7c15) * k.mul >> (k.shift & 63)
}

// NewKeys compiles names, in the order encoding/json lists the struct's
// fields (the order decides between folded matches). It panics on a
// non-ASCII or duplicate name: names come from code, not from input.
func NewKeys(names ...string) *Keys {
	k := &Keys{names: append([]string(nil), names...)}
	seen := map[string]bool{}
	for i, n := range names {
		for j := 0; j < len(n); j++ {
			if n[j] >= utf8.RuneSelf {
				panic(fmt.Sprintf("jsonraw.NewKeys: name %q is not ASCII", n))
			}
		}
		if seen[n] {
			panic(fmt.Sprintf("jsonraw.NewKeys: duplicate name %q", n))
		}
		seen[n] = true
		for len(k.byLen) <= len(n) {
			k.byLen = append(k.byLen, nil)
		}
		k.byLen[len(n)] = append(k.byLen[len(n)], i)
	}
	if len(names) >= 1<<31-1 {
		panic("jsonraw.NewKeys: too many names")
	}
	size, shift := 8, uint8(64-3)
	for size < 2*len(names) {
		size, shift = size*2, shift-1
	}
	// Try odd multipliers for one that puts every name in its first slot
	// (MatchExact's short case), doubling the table up to twice when none
	// does; else keep the one that leaves the fewest out.
	best, bestK := -1, Keys{}
	for range 3 {
		table := make([]exactSlot, size)
		k.mask, k.shift = uint64(size-1), shift
		mul := uint64(0x9e3779b97f4a7c15)
		for range 256 {
			k.mul = mul | 1
			if misses := k.fill(table); best < 0 || misses < best {
				best, bestK = misses, *k
				bestK.exact = slices.Clone(table)
			}
			if best == 0 {
				return &bestK
			}
			mul = mul*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
		}
		size, shift = size*2, shift-1
	}
	return &bestK
}

// fill fills table, of mask+1 slots, for k's multiplier and counts the
// names not in their first slot.
func (k *Keys) fill(table []exactSlot) (misses int) {
	clear(table)
	for i, name := range k.names {
		first, last := keyWords(name)
		h := k.slot(first, last)
		if table[h].idx != 0 {
			misses++
		}
		for table[h].idx != 0 {
			h = (h + 1) & k.mask
		}
		table[h] = exactSlot{first: first, last: last, n: int32(len(name)), idx: int32(i + 1)}
	}
	return misses
}

// Len returns the number of names.
func (k *Keys) Len() int { return len(k.names) }

// Name returns name i.
func (k *Keys) Name(i int) string { return k.names[i] }

// Match returns the index of the name the raw key (escapes kept) selects, or
// -1: the name equal to the unescaped key when there is one, else the first
// name, in list order, equal to it under simple case folding.
func (k *Keys) Match(raw []byte) int {
	i, _ := k.MatchExact(raw)
	return i
}

// MatchExact is Match, exact telling that the raw key is the name as
// written (no escape, no case folding).
//
// The usual key, a name of at most eight bytes cut from its document (the
// bytes after it are there) found in its first slot, is taken in a few
// instructions and no further call (MatchExact itself is over the inlining
// budget: a caller pays one call a key); every other key is matchExact's.
func (k *Keys) MatchExact(raw []byte) (i int, exact bool) {
	if n := len(raw); uint(n-1) < 8 && cap(raw) >= 8 {
		// One load, the bytes beyond the key masked off; a name of n
		// bytes has no last word.
		first := binary.LittleEndian.Uint64(raw[:8]) & (^uint64(0) >> ((64 - 8*n) & 63))
		e := &k.exact[first*k.mul>>(k.shift&63)]
		if e.first == first && int(e.n) == n { // an empty slot has n 0
			return int(e.idx - 1), true
		}
	}
	return k.matchExact(raw)
}

// matchExact is MatchExact from the key's first slot on.
func (k *Keys) matchExact(raw []byte) (i int, exact bool) {
	// The usual case first: the key as written is a name. Names hold no
	// backslash, so such a key has no escape and is that name exactly.
	n := len(raw)
	var first, last uint64
	if uint(n-1) < 8 && cap(raw) >= 8 {
		// A key cut from its document (the bytes after it are there):
		// one load, the bytes beyond the key masked off.
		first = binary.LittleEndian.Uint64(raw[:8]) & (^uint64(0) >> ((64 - 8*n) & 63))
	} else {
		first, last = keyWords(raw)
	}
	for h := k.slot(first, last); ; h = (h + 1) & k.mask {
		e := &k.exact[h]
		if e.idx == 0 {
			break
		}
		if e.first == first && e.last == last && int(e.n) == n &&
			(n <= 16 || k.names[e.idx-1][8:n-8] == string(raw[8:n-8])) {
			return int(e.idx - 1), true
		}
	}
	return k.fold(raw), false
}

// fold is Match for a key that is no name as written.
func (k *Keys) fold(raw []byte) int {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		if len(raw) >= len(k.byLen) {
			return -1
		}
		for _, i := range k.byLen[len(raw)] {
			if asciiEqualFold(k.names[i], raw) {
				return i
			}
		}
		return -1
	}
	n := 0
	for i := 0; i < len(raw); n++ {
		_, i = Rune(raw, i)
	}
	if n >= len(k.byLen) {
		return -1
	}
	cands := k.byLen[n]
	for _, i := range cands {
		if runesEqual(raw, k.names[i], false) {
			return i
		}
	}
	for _, i := range cands {
		if runesEqual(raw, k.names[i], true) {
			return i
		}
	}
	return -1
}

func asciiEqualFold(name string, raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if asciiLower(raw[i]) != asciiLower(name[i]) {
			return false
		}
	}
	return true
}

// runesEqual compares the decoded raw key, which has as many characters as
// name has bytes, with name: exactly, or under simple case folding.
func runesEqual(raw []byte, name string, fold bool) bool {
	j := 0
	for i := 0; i < len(raw); j++ {
		var r rune
		r, i = Rune(raw, i)
		if fold {
			if !foldsTo(r, name[j]) {
				return false
			}
		} else if r != rune(name[j]) {
			return false
		}
	}
	return true
}
