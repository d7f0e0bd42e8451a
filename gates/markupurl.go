package gates

// URLs in markup: a lazy decoder for the escapes a bidder may hide a URL
// behind, scheme matching with the WHATWG URL parser's whitespace rules, and
// iterators over the URLs of a srcset value and of CSS. Nothing here
// allocates or copies; every loop advances, and lookahead is bounded, so the
// cost is linear in the input.

// Escape layers a decoder undoes. A unit of each layer is read through the
// layers below it, in this order (JSON lowest), so `&#37;3A` reads as ':'.
const (
	decJSON    uint8 = 1 << iota // JSON string escapes: \/ \" \u003a
	decEntity                    // HTML and XML character references: &#58; &#x3a; &colon;
	decCSS                       // CSS escapes: \3a  \:
	decPercent                   // percent-encoding: %3A
)

// decoder reads s one decoded byte at a time through the layers in flags.
// It is lazy: a byte that cannot start an escape ('\\', '&', '%') reads as
// itself, and nothing is copied. A decoded code point outside ASCII reads as
// one byte >= 0x80 (the scanners only compare ASCII). Positions are indices
// into s, so a caller may restart at any unit boundary with other layers, and
// bound a decoder by slicing s.
type decoder struct {
	s     []byte
	flags uint8
}

// at decodes the unit at p (< len(d.s)) and returns it with the index after it.
func (d *decoder) at(p int) (byte, int) {
	c := d.s[p]
	if d.flags == 0 || (c != '\\' && c != '&' && c != '%') {
		return c, p + 1
	}
	return d.layer(d.flags, p)
}

// layer decodes the unit at p through the layers in f.
func (d *decoder) layer(f uint8, p int) (byte, int) {
	switch {
	case f&decPercent != 0:
		return d.percent(f&^decPercent, p)
	case f&decCSS != 0:
		return d.css(f&^decCSS, p)
	case f&decEntity != 0:
		return d.entity(f&^decEntity, p)
	case f&decJSON != 0:
		return d.json(p)
	}
	return d.s[p], p + 1
}

func (d *decoder) percent(f uint8, p int) (byte, int) {
	c, n := d.layer(f, p)
	if c != '%' || n >= len(d.s) {
		return c, n
	}
	h, n1 := d.layer(f, n)
	if n1 >= len(d.s) {
		return c, n
	}
	l, n2 := d.layer(f, n1)
	hi, ok1 := unhex(h)
	lo, ok2 := unhex(l)
	if !ok1 || !ok2 {
		return c, n
	}
	return hi<<4 | lo, n2
}

// css undoes a CSS escape: a backslash and 1-6 hex digits (one following
// space belongs to it), or a backslash and any other character. An escaped
// newline (a line continuation inside a string) reads as '\n', which URL
// matching ignores.
func (d *decoder) css(f uint8, p int) (byte, int) {
	c, n := d.layer(f, p)
	if c != '\\' || n >= len(d.s) {
		return c, n
	}
	c, n = d.layer(f, n)
	v, ok := unhex(c)
	if !ok {
		return c, n
	}
	r := rune(v)
	for k := 1; k < 6 && n < len(d.s); k++ {
		c2, n2 := d.layer(f, n)
		h, ok := unhex(c2)
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
func (d *decoder) entity(f uint8, p int) (byte, int) {
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
				v, ok = unhex(c3)
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
		if !isASCIILetter(c3) && !(c3 >= '0' && c3 <= '9') {
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
func (d *decoder) json(p int) (byte, int) {
	s := d.s
	if s[p] != '\\' || p+1 >= len(s) {
		return s[p], p + 1
	}
	switch c := s[p+1]; c {
	case '"', '\\', '/':
		return c, p + 2
	case 'b':
		return '\b', p + 2
	case 'f':
		return '\f', p + 2
	case 'n':
		return '\n', p + 2
	case 'r':
		return '\r', p + 2
	case 't':
		return '\t', p + 2
	case 'u':
		r, ok := hex4(s, p+2)
		if !ok {
			break
		}
		n := p + 6
		if r >= 0xd800 && r < 0xdc00 && n+6 <= len(s) && s[n] == '\\' && s[n+1] == 'u' {
			if r2, ok := hex4(s, n+2); ok && r2 >= 0xdc00 && r2 < 0xe000 {
				n += 6
			}
		}
		return asciiOr80(r), n
	}
	return '\\', p + 1
}

func hex4(s []byte, p int) (rune, bool) {
	if p+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[p : p+4] {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
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

// asciiOr80 is r when ASCII and not NUL (which browsers read as U+FFFD), else 0x80.
func asciiOr80(r rune) byte {
	if r > 0 && r < 0x80 {
		return byte(r)
	}
	return 0x80
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

// schemeMatch matches a URL's scheme one decoded byte at a time, as the WHATWG
// URL parser reads it: leading C0 controls and spaces are skipped, tab, CR and
// LF are ignored anywhere, letters compare without case. scheme is lower case
// and ends with ':'. The zero state is open; a match feeds bytes until done.
type schemeMatch struct {
	scheme string
	i      int
	state  int8 // 0 open, 1 matched, -1 not this scheme
	began  bool
}

// feed reads one decoded byte and reports whether the match is decided.
func (m *schemeMatch) feed(c byte) bool {
	if m.state != 0 {
		return true
	}
	if !m.began {
		if c <= ' ' {
			return false
		}
		m.began = true
	}
	if c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	if lowerASCII(c) != m.scheme[m.i] {
		m.state = -1
		return true
	}
	m.i++
	if m.i == len(m.scheme) {
		m.state = 1
		return true
	}
	return false
}

// feedFrom feeds d's units from p until the match is decided or d ends.
func (m *schemeMatch) feedFrom(d *decoder, p int) bool {
	for p < len(d.s) {
		c, n := d.at(p)
		if m.feed(c) {
			return true
		}
		p = n
	}
	return m.state != 0
}

// hasScheme reports whether the URL d holds from p has the scheme.
func hasScheme(d *decoder, p int, scheme string) bool {
	m := schemeMatch{scheme: scheme}
	m.feedFrom(d, p)
	return m.state == 1
}

// srcsetURLs iterates over the image candidates of a srcset value (HTML's
// "parse a srcset attribute"): candidates are split at commas, a URL runs to
// whitespace, and a comma inside parentheses of a descriptor splits nothing.
type srcsetURLs struct {
	d decoder
	p int
}

// next returns the span of the next candidate's URL in d.s.
func (it *srcsetURLs) next() (start, end int, ok bool) {
	d, p := &it.d, it.p
	for p < len(d.s) {
		c, n := d.at(p)
		if !isHTMLSpace(c) && c != ',' {
			break
		}
		p = n
	}
	if p >= len(d.s) {
		it.p = p
		return 0, 0, false
	}
	start = p
	var last byte
	for p < len(d.s) {
		c, n := d.at(p)
		if isHTMLSpace(c) {
			break
		}
		last, p = c, n
	}
	end = p
	if last != ',' {
		paren := false
		for p < len(d.s) {
			c, n := d.at(p)
			p = n
			if c == '(' {
				paren = true
			} else if c == ')' {
				paren = false
			} else if c == ',' && !paren {
				break
			}
		}
	}
	it.p = p
	return start, end, true
}

// cssURLs iterates over the URLs a style sheet or a style attribute loads:
// the argument of each url( function, quoted or not, and the string of each
// @import. Comments and other strings are skipped; a backslash escapes the
// next character. d's layers must not include decCSS: the structure is read
// before CSS escapes are undone, except in the names url and @import
// (`u\72l(`); check each URL with decCSS added.
type cssURLs struct {
	d    decoder
	p    int
	prev byte // the unit before p, for the identifier boundary of "url("
}

// next returns the span of the next URL in d.s (the inside of its quotes
// when quoted).
func (it *cssURLs) next() (start, end int, ok bool) {
	d := &it.d
	names := decoder{s: d.s, flags: d.flags | decCSS}
	for it.p < len(d.s) {
		p := it.p
		c, n := d.at(p)
		if (c == 'u' || c == 'U' || c == '\\') && !isCSSIdent(it.prev) {
			if e := names.word(p, "url("); e >= 0 {
				return it.url(d.skipSpace(e))
			}
		}
		switch c {
		case '/':
			if d.word(n, "*") >= 0 {
				it.p, it.prev = d.skipComment(n), '/'
				continue
			}
		case '"', '\'':
			_, _, it.p = d.cssString(p)
			it.prev = c
			continue
		case '\\':
			it.p, it.prev = n, 'a'
			if n < len(d.s) {
				_, it.p = d.at(n)
			}
			continue
		case '@':
			e := names.word(n, "import")
			if e < 0 {
				break
			}
			if e < len(d.s) {
				if c2, _ := names.at(e); isCSSIdent(c2) {
					break
				}
			}
			e = d.skipSpace(e)
			if e < len(d.s) {
				if q, _ := d.at(e); q == '"' || q == '\'' {
					return it.url(e)
				}
			}
			it.p, it.prev = e, ' '
			continue
		}
		it.p, it.prev = n, c
	}
	return 0, 0, false
}

// url returns the URL that starts at p: a string, or an unquoted url(...)
// argument running to a space or ')'.
func (it *cssURLs) url(p int) (start, end int, ok bool) {
	d := &it.d
	if p < len(d.s) {
		if q, _ := d.at(p); q == '"' || q == '\'' {
			start, end, it.p = d.cssString(p)
			it.prev = q
			return start, end, true
		}
	}
	end = p
	for end < len(d.s) {
		c, n := d.at(end)
		if isHTMLSpace(c) || c == ')' {
			break
		}
		if c == '\\' && n < len(d.s) {
			_, n = d.at(n)
		}
		end = n
	}
	it.p, it.prev = end, 'a'
	return p, end, true
}

// word returns the index after the lower-case ASCII word at p, compared
// without case, or -1.
func (d *decoder) word(p int, w string) int {
	for i := 0; i < len(w); i++ {
		if p >= len(d.s) {
			return -1
		}
		c, n := d.at(p)
		if lowerASCII(c) != w[i] {
			return -1
		}
		p = n
	}
	return p
}

// skipComment returns the index after the "*/" that closes the CSS comment
// whose '*' is at p, or len(d.s).
func (d *decoder) skipComment(p int) int {
	_, p = d.at(p)
	var prev byte
	for p < len(d.s) {
		c, n := d.at(p)
		p = n
		if prev == '*' && c == '/' {
			return p
		}
		prev = c
	}
	return p
}

// cssString reads the CSS string whose quote is at p: it returns the span of
// its content and the index after it. A backslash escapes the next unit; an
// unescaped newline ends a (bad) string, as does the end of the input.
func (d *decoder) cssString(p int) (start, end, next int) {
	q, p := d.at(p)
	start = p
	for p < len(d.s) {
		c, n := d.at(p)
		switch c {
		case q:
			return start, p, n
		case '\n':
			return start, p, p
		case '\\':
			if n < len(d.s) {
				_, n = d.at(n)
			}
		}
		p = n
	}
	return start, p, p
}

func (d *decoder) skipSpace(p int) int {
	for p < len(d.s) {
		c, n := d.at(p)
		if !isHTMLSpace(c) {
			return p
		}
		p = n
	}
	return p
}

func isCSSIdent(c byte) bool {
	return isASCIILetter(c) || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80 || c == '\\'
}
