package gates

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A tiny reader of raw JSON for fields the openrtb2 types do not define
// (regs.dsa) or leave as ext bytes (regs.ext.dsa, bid.ext.dsa). It reads
// documents that encoding/json has already accepted, finds one member at a
// time without building anything, and allocates nothing except on the rare
// path of a number written with a fraction or exponent. Malformed input
// never panics: the reader stops and reports "not found".
//
// Keys match as encoding/json matches them to struct fields: escapes
// resolved, case folded (Unicode simple folding, so "DSA", "dſa" and
// "\u0064sa" are "dsa"). Duplicate keys: the last one wins.

// jsonSkipSpace returns the index of the first non-whitespace byte at or
// after i.
func jsonSkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// jsonStructural marks the bytes that matter when skipping a container;
// jsonStringStop those that end a run of plain string bytes.
var (
	jsonStructural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}
	jsonStringStop = [256]bool{'"': true, '\\': true}
)

// jsonStringEnd returns the index just after the string starting at b[i]
// (b[i] is '"'), or -1.
func jsonStringEnd(b []byte, i int) int {
	i++
	for {
		for i < len(b) && !jsonStringStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		if b[i] == '"' {
			return i + 1
		}
		i += 2
	}
}

// jsonValueEnd returns the index just after the value starting at b[i], or
// -1 when there is none.
func jsonValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return jsonStringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			for i < len(b) && !jsonStructural[b[i]] {
				i++
			}
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"':
				e := jsonStringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}

// jsonMembers iterates the members of one JSON object.
type jsonMembers struct {
	b       []byte
	i       int
	started bool
}

// jsonObject starts iterating v; ok is false when v is not an object.
func jsonObject(v []byte) (m jsonMembers, ok bool) {
	i := jsonSkipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return jsonMembers{}, false
	}
	return jsonMembers{b: v, i: i + 1}, true
}

// next returns the next member: its raw key (the bytes between the quotes,
// escapes kept) and its raw value. ok is false at the end of the object or
// on malformed input.
func (m *jsonMembers) next() (key, val []byte, ok bool) {
	b := m.b
	i := jsonSkipSpace(b, m.i)
	m.i = len(b)
	if m.started {
		if i >= len(b) || b[i] != ',' {
			return nil, nil, false
		}
		i = jsonSkipSpace(b, i+1)
	}
	m.started = true
	if i >= len(b) || b[i] != '"' {
		return nil, nil, false
	}
	e := jsonStringEnd(b, i)
	if e < 0 {
		return nil, nil, false
	}
	key = b[i+1 : e-1]
	i = jsonSkipSpace(b, e)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	i = jsonSkipSpace(b, i+1)
	ve := jsonValueEnd(b, i)
	if ve < 0 {
		return nil, nil, false
	}
	m.i = ve
	return key, b[i:ve], true
}

// jsonLookup returns the value of the last member of object obj whose key
// matches name (see jsonKeyIs).
func jsonLookup(obj []byte, name string) (val []byte, ok bool) {
	m, isObj := jsonObject(obj)
	if !isObj {
		return nil, false
	}
	for {
		k, v, more := m.next()
		if !more {
			return val, ok
		}
		if jsonKeyIs(k, name) {
			val, ok = v, true
		}
	}
}

// jsonKeyIs reports whether the raw key matches name, an ASCII member name,
// as encoding/json matches keys to field names.
func jsonKeyIs(raw []byte, name string) bool {
	// Every character of name takes at least one byte of raw, and an escape
	// or a non-ASCII rune folding to ASCII (U+017F, U+212A) takes more: a
	// raw key as long as name matches only byte for byte, folding ASCII case.
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
		r, i = jsonRune(raw, i)
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

// foldsTo reports whether rune r equals ASCII byte c under simple case
// folding: ASCII case, and the two non-ASCII runes that fold to ASCII
// letters (U+017F long s, U+212A Kelvin sign).
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

// jsonRune decodes the character at s[i] of a JSON string's contents, with
// escapes resolved as encoding/json resolves them (a lone surrogate or an
// invalid UTF-8 byte is one U+FFFD), and returns the index of the next one.
func jsonRune(s []byte, i int) (rune, int) {
	c := s[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return rune(c), i + 1
		}
		r, w := utf8.DecodeRune(s[i:])
		return r, i + w
	}
	if i+1 >= len(s) {
		return utf8.RuneError, len(s)
	}
	switch e := s[i+1]; e {
	case 'u':
		r := hex4(s, i+2)
		if r < 0 {
			return utf8.RuneError, i + 2
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		if r < 0xDC00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2 := hex4(s, i+2); r2 >= 0xDC00 && r2 <= 0xDFFF {
				return utf16.DecodeRune(r, r2), i + 6
			}
		}
		return utf8.RuneError, i
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	default:
		return rune(e), i + 2
	}
}

// hex4 reads four hex digits at s[i:], or returns -1.
func hex4(s []byte, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// jsonStringLen returns the number of code points of the JSON string v
// (quotes included) once decoded; ok is false when v is not a string.
func jsonStringLen(v []byte) (n int, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, false
	}
	s := v[1 : len(v)-1]
	for i := 0; i < len(s); n++ {
		_, i = jsonRune(s, i)
	}
	return n, true
}

// jsonIsNull reports whether v is the literal null.
func jsonIsNull(v []byte) bool { return string(v) == "null" }

// jsonInt reads a JSON number with an integral value (2, -1, 2.0, 2e0);
// ok is false for anything else, including values beyond ±2^53.
func jsonInt(v []byte) (int64, bool) {
	i, neg := 0, false
	if len(v) > 0 && v[0] == '-' {
		i, neg = 1, true
	}
	if i < len(v) && len(v)-i <= 15 {
		var n int64
		j := i
		for j < len(v) && '0' <= v[j] && v[j] <= '9' {
			n = n*10 + int64(v[j]-'0')
			j++
		}
		if j == len(v) && j > i {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int64(f), true
}
