package jsonraw

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Rune decodes the character at s[i] of a JSON string's contents (the bytes
// between the quotes) with escapes resolved as encoding/json resolves them,
// and returns the index of the next one. A lone or reversed surrogate escape
// and each byte of invalid UTF-8 are one U+FFFD; a malformed escape is one
// U+FFFD too (Validate rejects it). i must be < len(s).
func Rune(s []byte, i int) (rune, int) {
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
		r := Hex4(s, i+2)
		if r < 0 {
			return utf8.RuneError, i + 2
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		if r < 0xDC00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2 := Hex4(s, i+2); r2 >= 0xDC00 && r2 <= 0xDFFF {
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
	default: // '"', '\\', '/'
		return rune(e), i + 2
	}
}

// Hex4 reads the four hex digits of a \u escape at s[i:], or returns -1.
func Hex4(s []byte, i int) rune {
	if i < 0 || i+4 > len(s) {
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

// NeedsUnescape reports whether the contents s of a JSON string (the bytes
// between the quotes) differ from the string encoding/json decodes them to:
// they hold an escape or invalid UTF-8. When it is false, s is the string.
func NeedsUnescape(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' {
			return true
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && w == 1 {
			return true
		}
		i += w
	}
	return false
}

// Unescape appends to dst the string that the contents s of a JSON string
// (the bytes between the quotes) decode to, exactly as encoding/json decodes
// it (see Rune), and returns the extended buffer.
func Unescape(dst, s []byte) []byte {
	for len(s) > 0 {
		run := bytes.IndexByte(s, '\\')
		if run < 0 {
			run = len(s)
		}
		if utf8.Valid(s[:run]) {
			dst = append(dst, s[:run]...)
		} else {
			dst = appendValidRunes(dst, s[:run])
		}
		if run == len(s) {
			break
		}
		var r rune
		r, run = Rune(s, run)
		dst = utf8.AppendRune(dst, r)
		s = s[run:]
	}
	return dst
}

// UnescapeValid is Unescape for s known to be valid UTF-8 (jsonraw.Doc's
// ValidUTF8): the runs between escapes are copied unchecked, eight bytes at
// a time (each word stored whole, then looked at for a backslash), with no
// call but for an escape.
func UnescapeValid(dst, s []byte) []byte {
	// Never longer than s but for a malformed escape (below).
	out := slices.Grow(dst, len(s))
	n, out := len(out), out[:cap(out)]
	for i := 0; ; {
		// The words: while i <= last, both the word read at i and the one
		// written at n are in bounds. The room left in out shrinks no
		// faster than the input (an escape writes fewer bytes than it
		// reads), so the bound taken here holds in the loop; unsafe
		// reads and writes, with no bounds check.
		last := min(len(s), len(out)-n+i) - 8
		for i <= last {
			x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), i))[:])
			binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(out)), n))[:], x)
			m := backslashBytes(x)
			if m == 0 {
				i, n = i+8, n+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			i, n = i+k, n+k
			// The usual escapes, of a quote, a slash or a backslash,
			// without leaving the loop.
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '/' || s[i+1] == '\\') {
				out[n] = s[i+1]
				i, n = i+2, n+1
				continue
			}
			break
		}
		for i < len(s) && s[i] != '\\' && n < len(out) {
			out[n] = s[i]
			i, n = i+1, n+1
		}
		if i >= len(s) {
			return out[:n]
		}
		if s[i] != '\\' {
			// A run that did not fit, after a malformed escape.
			out = append(out[:n], s[i])
			i, n, out = i+1, n+1, out[:cap(out)]
			continue
		}
		var r rune
		r, i = Rune(s, i)
		if w := utf8.RuneLen(r); len(out)-n < w {
			// Only a malformed escape (one U+FFFD for fewer
			// bytes) grows the result beyond len(s).
			out = slices.Grow(out[:n], w+len(s)-i)
			out = out[:cap(out)]
		}
		if r < utf8.RuneSelf {
			out[n] = byte(r)
			n++
		} else {
			n += utf8.EncodeRune(out[n:], r)
		}
	}
}

// backslashBytes sets the high bit of the bytes of x that are a backslash,
// exactly for the lowest one (the borrow may also mark bytes above it).
func backslashBytes(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	b := x ^ (lo * '\\')
	return (b - lo) &^ b & hi
}

// appendValidRunes appends s, which holds no escape, with each byte of
// invalid UTF-8 replaced by U+FFFD.
func appendValidRunes(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && w == 1 {
			dst = append(dst, s[start:i]...)
			dst = utf8.AppendRune(dst, utf8.RuneError)
			start = i + 1
		}
		i += w
	}
	return append(dst, s[start:]...)
}

// StringLen returns the number of characters (code points) of the JSON
// string value v, quotes included, once decoded; ok is false when v is not a
// string.
func StringLen(v []byte) (n int, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, false
	}
	s := v[1 : len(v)-1]
	for i := 0; i < len(s); n++ {
		_, i = Rune(s, i)
	}
	return n, true
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes AppendString copies as they are.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string exactly as encoding/json writes it
// with SetEscapeHTML(false): `"` and `\` escaped, \b \f \n \r \t short, other
// control characters as \u00XX, U+2028 and U+2029 escaped, each byte of
// invalid UTF-8 as \ufffd, everything else as is.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, w := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += w
			continue
		}
		i += w
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func decodeRune[S ~string | ~[]byte](s S) (rune, int) {
	n := min(len(s), utf8.UTFMax)
	var b [utf8.UTFMax]byte
	copy(b[:], s[:n])
	return utf8.DecodeRune(b[:n])
}

// AppendValidUTF8 appends the JSON text raw (a value Validate accepted, or
// part of one) with every byte of invalid UTF-8 replaced by the escape
// \ufffd, and returns the extended buffer. Invalid UTF-8 can only stand
// inside strings of a valid document, so the result is the same JSON value
// with the characters encoding/json would decode those bytes to, and is
// valid UTF-8. Everything else is copied byte for byte.
func AppendValidUTF8(dst, raw []byte) []byte {
	start := 0
	for i := 0; i < len(raw); {
		if raw[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, w := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && w == 1 {
			dst = append(dst, raw[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + 1
		}
		i += w
	}
	return append(dst, raw[start:]...)
}
