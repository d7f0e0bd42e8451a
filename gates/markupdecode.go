package gates

// Decoding the escapes a bidder may hide a URL behind, lazily and in place:
// JSON string escapes, HTML/XML character references, CSS escapes and
// percent-encoding, layered as a browser (or a careful reader) undoes them.
// Nothing is copied or allocated (decodeMarkup copies into a pooled buffer);
// lookahead is bounded, so reading a whole input costs time linear in its
// size.

import (
	"bytes"
	"unicode/utf8"
)

import "github.com/bidguard/bidguard/jsonraw"

// Escape layers an escDecoder undoes. A unit of each layer is read through the
// layers below it, in this order (JSON lowest), so `&#37;3A` reads as ':'.
const (
	escJSON    uint8 = 1 << iota // JSON string escapes: \/ \" \u003a
	escEntity                    // HTML and XML character references: &#58; &#x3a; &colon;
	escCSS                       // CSS escapes: \3a  \:
	escPercent                   // percent-encoding: %3A
)

// escDecoder reads s one decoded byte at a time through the layers in flags.
// It is lazy: a byte that cannot start an escape ('\\', '&', '%') reads as
// itself, and nothing is copied. A decoded code point outside ASCII reads as
// one byte >= 0x80 (the scanners only compare ASCII). Positions are indices
// into s, so a caller may restart at any unit boundary with other layers, and
// bound an escDecoder by slicing s.
type escDecoder struct {
	s     []byte
	flags uint8
}

// at decodes the unit at p (< len(d.s)) and returns it with the index after it.
func (d *escDecoder) at(p int) (byte, int) {
	c := d.s[p]
	if d.flags == 0 || (c != '\\' && c != '&' && c != '%') {
		return c, p + 1
	}
	return d.layer(d.flags, p)
}

// layer decodes the unit at p through the layers in f.
func (d *escDecoder) layer(f uint8, p int) (byte, int) {
	switch {
	case f&escPercent != 0:
		return d.percent(f&^escPercent, p)
	case f&escCSS != 0:
		return d.css(f&^escCSS, p)
	case f&escEntity != 0:
		return d.entity(f&^escEntity, p)
	case f&escJSON != 0:
		return d.json(p)
	}
	return d.s[p], p + 1
}

func (d *escDecoder) percent(f uint8, p int) (byte, int) {
	c, n := d.layer(f, p)
	if c != '%' || n >= len(d.s) {
		return c, n
	}
	h, n1 := d.layer(f, n)
	if n1 >= len(d.s) {
		return c, n
	}
	l, n2 := d.layer(f, n1)
	hi, ok1 := markupUnhex(h)
	lo, ok2 := markupUnhex(l)
	if !ok1 || !ok2 {
		return c, n
	}
	return hi<<4 | lo, n2
}

// css undoes a CSS escape: a backslash and 1-6 hex digits (one following
// space belongs to it), or a backslash and any other character. An escaped
// newline (a line continuation inside a string) reads as '\n', which URL
// matching ignores.
func (d *escDecoder) css(f uint8, p int) (byte, int) {
	c, n := d.layer(f, p)
	if c != '\\' || n >= len(d.s) {
		return c, n
	}
	c, n = d.layer(f, n)
	v, ok := markupUnhex(c)
	if !ok {
		return c, n
	}
	r := rune(v)
	for k := 1; k < 6 && n < len(d.s); k++ {
		c2, n2 := d.layer(f, n)
		h, ok := markupUnhex(c2)
		if !ok {
			break
		}
		r, n = r<<4|rune(h), n2
	}
	if n < len(d.s) {
		if c2, n2 := d.layer(f, n); isHTMLSpace(c2) {
			n = n2
			if c2 == '\r' && n < len(d.s) {
				if c3, n3 := d.layer(f, n); c3 == '\n' {
					n = n3
				}
			}
		}
	}
	return asciiOr80(r), n
}

// entity undoes a character reference: numeric (`&#58;`, `&#x3A;`, the ';'
// optional as browsers allow), or one of the named references of ASCII
// characters (`&colon;`, `&sol;`, ...; `&amp`, `&lt`, `&gt`, `&quot` also
// without ';'). Anything else reads as a literal '&'.
func (d *escDecoder) entity(f uint8, p int) (byte, int) {
	c, n := d.layer(f, p)
	if c != '&' || n >= len(d.s) {
		return c, n
	}
	c2, m := d.layer(f, n)
	if c2 == '#' {
		hex := false
		if m < len(d.s) {
			if c3, m3 := d.layer(f, m); c3 == 'x' || c3 == 'X' {
				hex, m = true, m3
			}
		}
		var r rune
		digits := 0
		for m < len(d.s) {
			c3, m3 := d.layer(f, m)
			base := rune(10)
			v, ok := c3-'0', c3 >= '0' && c3 <= '9'
			if hex {
				base = 16
				v, ok = markupUnhex(c3)
			}
			if !ok {
				break
			}
			if r < 0x110000 { // past the last code point it stays invalid
				r = r*base + rune(v)
			}
			digits, m = digits+1, m3
		}
		if digits == 0 {
			return c, n
		}
		if m < len(d.s) {
			if c3, m3 := d.layer(f, m); c3 == ';' {
				m = m3
			}
		}
		return asciiOr80(r), m
	}
	var name [maxEntityName]byte
	k := 0
	for m = n; m < len(d.s) && k < len(name); {
		c3, m3 := d.layer(f, m)
		if c3 == ';' {
			if v, ok := namedEntity(name[:k]); ok {
				return v, m3
			}
			return c, n
		}
		if !isMarkupLetter(c3) && !(c3 >= '0' && c3 <= '9') {
			break
		}
		name[k], k, m = c3, k+1, m3
	}
	if v, ok := legacyEntity(name[:k]); ok {
		return v, m
	}
	return c, n
}

// The bidder's JSON escapes inside a string: \" \\ \/ \b \f \n \r \t \uXXXX
// (a surrogate pair reads as one unit).
func (d *escDecoder) json(p int) (byte, int) {
	s := d.s
	if s[p] != '\\' || p+1 >= len(s) {
		return s[p], p + 1
	}
	switch s[p+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		r, n := jsonraw.Rune(s, p) // one home for JSON escapes
		return byte(r), n
	case 'u':
		if jsonraw.Hex4(s, p+2) >= 0 { // else not an escape: the backslash reads as itself
			r, n := jsonraw.Rune(s, p) // a surrogate pair reads as one unit
			return asciiOr80(r), n
		}
	}
	return '\\', p + 1
}

func markupUnhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// asciiOr80 is r when ASCII and not NUL (which browsers read as U+FFFD),
// else a byte >= 0x80: usSpace or usLine for what JavaScript reads as white
// space or a line terminator (the script lexer tells them apart), 0x80 for
// any other code point.
func asciiOr80(r rune) byte {
	switch {
	case r > 0 && r < 0x80:
		return byte(r)
	case r == 0x2028 || r == 0x2029:
		return usLine
	case isUnicodeJSSpace(r):
		return usSpace
	}
	return 0x80
}

// The bytes a decoded code point outside ASCII reads as when JavaScript
// reads it as white space or as a line terminator.
const (
	usSpace byte = 0x81
	usLine  byte = 0x82
)

// isUnicodeJSSpace reports the code points outside ASCII that JavaScript
// reads as white space (ECMAScript WhiteSpace: U+00A0, U+FEFF and the Zs
// category), not line terminators.
func isUnicodeJSSpace(r rune) bool {
	switch r {
	case 0xA0, 0x1680, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// utf8JSSpace reads s[p:] for white space or a line terminator outside
// ASCII written in UTF-8: its length (0 for none) and whether it is a line
// terminator (U+2028, U+2029).
func utf8JSSpace(s []byte, p int) (n int, line bool) {
	if s[p] < 0xC2 {
		return 0, false
	}
	r, size := utf8.DecodeRune(s[p:])
	switch {
	case r == 0x2028 || r == 0x2029:
		return size, true
	case isUnicodeJSSpace(r):
		return size, false
	}
	return 0, false
}

// maxEntityName bounds the lookahead of a named reference.
const maxEntityName = 24

// namedEntity maps the named references of ASCII characters (HTML5's list;
// the others decode outside ASCII, which the scanners treat alike). The
// string conversion in the switch does not allocate.
func namedEntity(name []byte) (byte, bool) {
	switch string(name) {
	case "Tab":
		return '\t', true
	case "NewLine":
		return '\n', true
	case "excl":
		return '!', true
	case "quot", "QUOT":
		return '"', true
	case "num":
		return '#', true
	case "dollar":
		return '$', true
	case "percnt":
		return '%', true
	case "amp", "AMP":
		return '&', true
	case "apos":
		return '\'', true
	case "lpar":
		return '(', true
	case "rpar":
		return ')', true
	case "ast", "midast":
		return '*', true
	case "plus":
		return '+', true
	case "comma":
		return ',', true
	case "period":
		return '.', true
	case "sol":
		return '/', true
	case "colon":
		return ':', true
	case "semi":
		return ';', true
	case "lt", "LT":
		return '<', true
	case "equals":
		return '=', true
	case "gt", "GT":
		return '>', true
	case "quest":
		return '?', true
	case "commat":
		return '@', true
	case "lsqb", "lbrack":
		return '[', true
	case "bsol":
		return '\\', true
	case "rsqb", "rbrack":
		return ']', true
	case "Hat":
		return '^', true
	case "lowbar", "UnderBar":
		return '_', true
	case "grave", "DiacriticalGrave":
		return '`', true
	case "lcub", "lbrace":
		return '{', true
	case "verbar", "vert", "VerticalLine":
		return '|', true
	case "rcub", "rbrace":
		return '}', true
	}
	return 0, false
}

// legacyEntity maps the ASCII references browsers also read without ';'.
func legacyEntity(name []byte) (byte, bool) {
	switch string(name) {
	case "amp", "AMP":
		return '&', true
	case "lt", "LT":
		return '<', true
	case "gt", "GT":
		return '>', true
	case "quot", "QUOT":
		return '"', true
	}
	return 0, false
}

// decodeMarkup returns s read through the escape layers flags (character
// references for srcdoc and XML text): s itself when it holds no '&', '\\'
// or '%' to undo, else a pooled buffer (buf) that the caller hands back with
// releaseUnescapedNative once done with text. A decoded character outside
// ASCII reads as one byte 0x80, which the scanners treat as any non-ASCII byte.
func decodeMarkup(s []byte, flags uint8) (text []byte, buf *[]byte) {
	if bytes.IndexByte(s, '&') < 0 && bytes.IndexByte(s, '\\') < 0 && bytes.IndexByte(s, '%') < 0 {
		return s, nil
	}
	buf = nativeUnescapedBufs.Get().(*[]byte)
	b := (*buf)[:0]
	d := escDecoder{s: s, flags: flags}
	for p := 0; p < len(s); {
		var c byte
		c, p = d.at(p)
		b = append(b, c)
	}
	*buf = b
	return b, buf
}
