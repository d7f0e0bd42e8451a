package jsonraw

import (
	"encoding/binary"
	"math/bits"
)

// isSpace marks JSON whitespace; isStructural the bytes that matter when
// skipping a container; isDelim the bytes that end a number or literal.
var (
	isSpace      = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}
	isStructural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}
	isDelim      = [256]bool{',': true, '}': true, ']': true, ':': true, ' ': true, '\t': true, '\n': true, '\r': true}
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	return i
}

// StringEnd returns the index just past the string that starts at b[i]
// (b[i] is '"'), and whether its contents hold a backslash escape. end is -1
// when the string is not closed.
func StringEnd(b []byte, i int) (end int, escaped bool) {
	j := i + 1
	for {
		// Eight bytes at a time to the first quote or backslash (the
		// lowest byte the word marks is exact); the last few byte by byte.
		if j <= len(b)-8 {
			m := quoteOrBackslash(binary.LittleEndian.Uint64(b[j:]))
			if m == 0 {
				j += 8
				continue
			}
			j += bits.TrailingZeros64(m) >> 3
		} else {
			for j < len(b) && b[j] != '"' && b[j] != '\\' {
				j++
			}
			if j >= len(b) {
				return -1, escaped
			}
		}
		if b[j] == '"' {
			return j + 1, escaped
		}
		escaped = true
		j += 2 // the backslash and the byte it escapes
	}
}

// quoteOrBackslash sets the high bit of each byte of x (little endian) that
// is a quote or a backslash, exactly for the lowest such byte (SWAR: a zero
// byte of v sets its high bit in (v - lo) &^ v; the borrow may also mark
// bytes above it).
func quoteOrBackslash(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return ((q-lo)&^q | (b-lo)&^b) & hi
}

// ValueEnd returns the index just past the value that starts at b[i], or -1
// when there is none. A container ends at the closer (either kind) that
// brings its depth back to zero, strings skipped whole; nothing else in it
// is checked.
func ValueEnd(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := StringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for {
			for i < len(b) && !isStructural[b[i]] {
				i++
			}
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"':
				// StringEnd without the call: most of a container's
				// bytes are in its strings, most strings are short.
				i++
				for {
					if i <= len(b)-8 {
						m := quoteOrBackslash(binary.LittleEndian.Uint64(b[i:]))
						if m == 0 {
							i += 8
							continue
						}
						i += bits.TrailingZeros64(m) >> 3
					} else {
						for i < len(b) && b[i] != '"' && b[i] != '\\' {
							i++
						}
						if i >= len(b) {
							return -1
						}
					}
					if b[i] == '"' {
						break
					}
					i += 2 // the backslash and the byte it escapes
				}
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
	for j < len(b) && !isDelim[b[j]] {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Members iterates the members of one JSON object in document order. The
// zero value iterates nothing.
type Members struct {
	b          []byte
	i          int
	start, end int
	started    bool
	closed     bool
}

// Object starts iterating the object v (leading whitespace allowed); ok is
// false when v is not an object.
func Object(v []byte) (m Members, ok bool) {
	i := SkipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return Members{}, false
	}
	return Members{b: v, i: i + 1}, true
}

// Next returns the next member: its raw key (the bytes between the quotes,
// escapes kept; match it with KeyIs or Keys) and its value. ok is false at
// the end of the object and on malformed input.
func (m *Members) Next() (key, val []byte, ok bool) {
	b := m.b
	i := SkipSpace(b, m.i)
	m.i = len(b)
	if i < len(b) && b[i] == '}' {
		m.closed = true
		return nil, nil, false
	}
	if m.started {
		if i >= len(b) || b[i] != ',' {
			return nil, nil, false
		}
		i = SkipSpace(b, i+1)
	}
	m.started = true
	if i >= len(b) || b[i] != '"' {
		return nil, nil, false
	}
	ks := i
	e, _ := StringEnd(b, i)
	if e < 0 {
		return nil, nil, false
	}
	key = b[i+1 : e-1]
	i = SkipSpace(b, e)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	i = SkipSpace(b, i+1)
	ve := ValueEnd(b, i)
	if ve < 0 {
		return nil, nil, false
	}
	m.i, m.start, m.end = ve, ks, ve
	return key, b[i:ve], true
}

// Complete reports whether Next reached the object's closing brace, rather
// than stopping at malformed input.
func (m *Members) Complete() bool { return m.closed }

// Span returns where the member last returned by Next lies in the object
// given to Object: from its key's opening quote to just past its value, so
// v[start:end] is the member as written.
func (m *Members) Span() (start, end int) { return m.start, m.end }

// Elements iterates the elements of one JSON array in document order. The
// zero value iterates nothing.
type Elements struct {
	b       []byte
	i       int
	started bool
}

// Array starts iterating the array v (leading whitespace allowed); ok is
// false when v is not an array.
func Array(v []byte) (e Elements, ok bool) {
	i := SkipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return Elements{}, false
	}
	return Elements{b: v, i: i + 1}, true
}

// Next returns the next element; ok is false at the end of the array and on
// malformed input.
func (e *Elements) Next() (val []byte, ok bool) {
	b := e.b
	i := SkipSpace(b, e.i)
	e.i = len(b)
	if i < len(b) && b[i] == ']' {
		return nil, false
	}
	if e.started {
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = SkipSpace(b, i+1)
	}
	e.started = true
	ve := ValueEnd(b, i)
	if ve < 0 {
		return nil, false
	}
	e.i = ve
	return b[i:ve], true
}

// Lookup returns the value of the last member of the object obj whose key
// matches name (KeyIs): encoding/json's "last duplicate wins". ok is false
// when obj is not an object or has no such member.
func Lookup(obj []byte, name string) (val []byte, ok bool) {
	m, isObj := Object(obj)
	if !isObj {
		return nil, false
	}
	for {
		k, v, more := m.Next()
		if !more {
			return val, ok
		}
		if KeyIs(k, name) {
			val, ok = v, true
		}
	}
}

// IsNull reports whether the value v is the literal null.
func IsNull(v []byte) bool { return string(v) == "null" }

// skipSpace is SkipSpace with the usual case, no white space, told by one
// comparison (every white space byte is below '!').
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return SkipSpace(b, i)
}
