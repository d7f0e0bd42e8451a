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
	if len(raw) > 0 && len(raw) < len(k.byLen) {
		for _, i := range k.byLen[len(raw)] {
			if n := k.names[i]; n[0] == raw[0] && n == string(raw) {
				return i, true
			}
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
