package jsonraw

import (
	"fmt"
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
	// most half full) of name index + 1 by keyHash: the exact match in
	// about one comparison.
	exact []uint16
	mask  uint32
}

// keyHash mixes a key's length and three of its bytes.
func keyHash[T string | []byte](b T) uint32 {
	n := len(b)
	h := uint32(n) * 0x9e3779b1
	if n > 0 {
		h ^= uint32(b[0])*0x85ebca77 ^ uint32(b[n-1])*0xc2b2ae3d ^ uint32(b[n/2])*0x27d4eb2f
	}
	return h ^ h>>15
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
	if len(names) >= 1<<16-1 {
		panic("jsonraw.NewKeys: too many names")
	}
	size := 8
	for size < 2*len(names) {
		size *= 2
	}
	k.exact, k.mask = make([]uint16, size), uint32(size-1)
	for i, n := range names {
		h := keyHash(n) & k.mask
		for k.exact[h] != 0 {
			h = (h + 1) & k.mask
		}
		k.exact[h] = uint16(i + 1)
	}
	return k
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
func (k *Keys) MatchExact(raw []byte) (i int, exact bool) {
	// The usual case first: the key as written is a name. Names hold no
	// backslash, so such a key has no escape and is that name exactly.
	for h := keyHash(raw) & k.mask; ; h = (h + 1) & k.mask {
		e := k.exact[h]
		if e == 0 {
			break
		}
		if n := k.names[e-1]; n == string(raw) {
			return int(e - 1), true
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
