package markup

// The values VAST facts are made of: character references, media types,
// durations and versions. Allocation-free but for decodeValue.

import (
	"strings"
	"unicode/utf8"
)

// reference reads the reference at the start of t ("&amp;", "&#38;",
// "&#x26;") and returns its character and length; n is 0 when it is not a
// predefined entity or a character reference to an XML character.
func reference(t string) (r rune, n int) {
	semi := strings.IndexByte(t, ';')
	if semi < 2 || semi > 12 {
		return 0, 0
	}
	body := t[1:semi]
	switch body {
	case "lt":
		return '<', semi + 1
	case "gt":
		return '>', semi + 1
	case "amp":
		return '&', semi + 1
	case "apos":
		return '\'', semi + 1
	case "quot":
		return '"', semi + 1
	}
	if body[0] != '#' || len(body) < 2 {
		return 0, 0
	}
	digits, base := body[1:], rune(10)
	if digits[0] == 'x' {
		digits, base = digits[1:], 16
	}
	if digits == "" {
		return 0, 0
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d rune
		switch {
		case c >= '0' && c <= '9':
			d = rune(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = rune(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = rune(c-'A') + 10
		default:
			return 0, 0
		}
		r = r*base + d
		if r > 0x10FFFF {
			return 0, 0
		}
	}
	if !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000) {
		return 0, 0
	}
	return r, semi + 1
}

// validValue checks an attribute value: no '<', references valid.
func validValue(v string) bool {
	if len(v) <= shortText && plainShort(v, '<') {
		return true
	}
	if strings.IndexByte(v, '<') >= 0 {
		return false
	}
	for {
		amp := strings.IndexByte(v, '&')
		if amp < 0 {
			return true
		}
		_, n := reference(v[amp:])
		if n == 0 {
			return false
		}
		v = v[amp+n:]
	}
}

// MediaType reads a media type as MediaFile types and mimes compare:
// parameters after ';' dropped, XML whitespace trimmed; compare the result
// ignoring ASCII case.
func MediaType(t string) string {
	if semi := strings.IndexByte(t, ';'); semi >= 0 {
		t = t[:semi]
	}
	return trimXMLSpace(t)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// decodeValue resolves the references of a valid attribute value into a
// new string.
func decodeValue(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for {
		amp := strings.IndexByte(v, '&')
		if amp < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:amp])
		r, n := reference(v[amp:])
		b.WriteRune(r)
		v = v[amp+n:]
	}
}

// durText collects a Duration's text without its surrounding whitespace,
// in a fixed buffer: text longer than any valid duration, or with
// whitespace inside, is bad.
type durText struct {
	buf          [16]byte
	n            int
	bad, started bool
	trailing     bool // whitespace seen after the text started
}

func (d *durText) add(t string) {
	for i := 0; i < len(t) && !d.bad; i++ {
		d.addByte(t[i])
	}
}

func (d *durText) addRune(r rune) {
	if r >= utf8.RuneSelf {
		d.bad = true
		return
	}
	d.addByte(byte(r))
}

func (d *durText) addByte(c byte) {
	if isXMLSpace(c) {
		if d.started {
			d.trailing = true
		}
		return
	}
	if d.trailing || d.n == len(d.buf) {
		d.bad = true
		return
	}
	d.started = true
	d.buf[d.n] = c
	d.n++
}

// seconds parses the text as HH:MM:SS or HH:MM:SS.mmm (one or two hour
// digits, minutes and seconds 00-59, one to three fraction digits) and
// rounds it to whole seconds, halves up; 0 for anything else.
func (d *durText) seconds() int {
	if d.bad {
		return 0
	}
	return parseVASTDuration(string(d.buf[:d.n]))
}

// parseVASTDuration is durText.seconds on a trimmed string.
func parseVASTDuration(t string) int {
	num := func(s string) (int, bool) {
		if s == "" {
			return 0, false
		}
		v := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			v = v*10 + int(s[i]-'0')
		}
		return v, true
	}
	h, rest, ok := strings.Cut(t, ":")
	if !ok || len(h) < 1 || len(h) > 2 {
		return 0
	}
	m, rest, ok := strings.Cut(rest, ":")
	if !ok || len(m) != 2 {
		return 0
	}
	sec, frac, hasFrac := strings.Cut(rest, ".")
	if len(sec) != 2 || hasFrac && (len(frac) < 1 || len(frac) > 3) {
		return 0
	}
	hv, ok1 := num(h)
	mv, ok2 := num(m)
	sv, ok3 := num(sec)
	if !ok1 || !ok2 || !ok3 || mv > 59 || sv > 59 {
		return 0
	}
	total := hv*3600 + mv*60 + sv
	if hasFrac {
		fv, ok := num(frac)
		if !ok {
			return 0
		}
		for i := len(frac); i < 3; i++ {
			fv *= 10
		}
		if fv >= 500 {
			total++
		}
	}
	return total
}

// vastProtocol maps a version to its AdCOM 1.0 Creative Subtype
// (Audio/Video): VAST 1.x 1/4, 2.x 2/5, 3.x 3/6, 4.0 (or 4) 7/8, 4.1
// 11/12, 4.2 13/14, 4.3 15/16, DAAST 1.x 9/10 (inline/wrapper); 0 for any
// other version. The version reads as <major>[.<minor>[.<digits>...]].
func vastProtocol(root uint8, version string, wrapper bool) int {
	major, minor, ok := versionNumbers(version)
	if !ok {
		return 0
	}
	var inline int
	switch {
	case root == rootDAAST:
		if major != 1 {
			return 0
		}
		inline = 9
	case root == rootVAST1:
		inline = 1
	case major >= 1 && major <= 3:
		inline = major
	case major == 4 && minor <= 0:
		inline = 7
	case major == 4 && minor >= 1 && minor <= 3:
		inline = 9 + 2*minor
	default:
		return 0
	}
	if !wrapper {
		return inline
	}
	switch inline {
	case 1, 2, 3:
		return inline + 3
	}
	return inline + 1
}

// versionNumbers reads <major>[.<minor>[.<digits>...]]; minor is -1 when
// absent.
func versionNumbers(v string) (major, minor int, ok bool) {
	major, minor = -1, -1
	for part := 0; v != "" || part == 0; part++ {
		p, rest, more := strings.Cut(v, ".")
		if p == "" || len(p) > 6 {
			return 0, 0, false
		}
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return 0, 0, false
			}
			n = n*10 + int(p[i]-'0')
		}
		switch part {
		case 0:
			major = n
		case 1:
			minor = n
		}
		if !more {
			return major, minor, true
		}
		if rest == "" {
			return 0, 0, false // a trailing dot
		}
		v = rest
	}
	return major, minor, true
}
