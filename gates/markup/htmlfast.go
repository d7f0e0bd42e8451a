package markup

// The token reading's fast path. readTokens needs from x/net/html's
// tokenizer only each start tag's raw bytes and the text of script and
// style; scanTags finds exactly those with the tokenizer's rules
// (golang.org/x/net/html token.go: Next, readTag, readRawOrRCDATA,
// readScript, readComment, readMarkupDeclaration), jumping from one '<' or
// '>' to the next instead of reading byte by byte. The tokenizer stays the
// reference and reads what the scan declines: a script whose text holds
// "<!--" before its end tag (the script data escaped states).
// TestHTMLFastAgainstTokenizer and FuzzHTMLFast compare the two.

import "bytes"

// tagSpan is a start tag scanTags found: its raw bytes b[tag0:tag1] ("<"
// to ">", as Tokenizer.Raw gives them) and, after a script or style start
// tag, the raw bytes of its text b[text0:text1] (up to its end tag or the
// end of b). When the scan records attributes, the name is b[tag0+1:name]
// and the attributes element reads (readsRawKey), as written, are
// attrs[attr0:attr1].
type tagSpan struct {
	tag0, tag1, text0, text1, name, attr0, attr1 int
	// nameCase is the tagClass bits of the name's bytes or'ed (when the
	// scan records attributes): tagUpper, tagHigh.
	nameCase uint8
	// bare: the scan recorded attributes, and element reads nothing of
	// this tag.
	bare bool
}

// attrSpan is an attribute of a tag: its key and value as spans of the
// bytes that hold them (for splitTag, the key in tokenizer.lower and the
// value in the raw tag; for scanTags, both in the document, and keyCase
// the tagClass bits of the key's bytes or'ed: tagUpper, tagHigh).
type attrSpan struct {
	key0, key1, val0, val1 int
	keyCase                uint8
}

// maxPooledSpans bounds the span buffer a pooled tokenizer keeps (64 KB).
const maxPooledSpans = 2 << 10

// scanTags appends to dst the start and self-closing tags that
// x/net/html's Tokenizer yields reading b, in order, with the text that
// follows those of script and style; ok is false when b holds a script
// whose text it does not delimit (a "<!--" in it: the tokenizer's escaped
// states). A start tag cut by the end of b is no token, as to the
// tokenizer: cut reports it (the tokenizer's last Raw is that tag).
func scanTags(dst []tagSpan, b []byte) (tags []tagSpan, cut, ok bool) {
	return scanTagsAttrs(dst, nil, b)
}

// scanTagsAttrs is scanTags that also appends to *attrs (when not nil)
// each start tag's attributes that element reads (readsRawKey: the others,
// class, width, alt, data-*, are never looked at again), as its reading of
// the tag meets them, so that the tag need not be read again to split it
// (scannedTag).
func scanTagsAttrs(dst []tagSpan, attrs *[]attrSpan, b []byte) (tags []tagSpan, cut, ok bool) {
	n := len(b)
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 || i+j+1 >= n {
			return dst, false, true
		}
		i += j
		switch c := b[i+1]; {
		case isASCIILetter(c):
			a0 := 0
			if attrs != nil {
				a0 = len(*attrs)
			}
			name, nameCase, end := tagEnd(b, i+1, attrs)
			if end < 0 {
				return dst, true, true
			}
			sp := tagSpan{tag0: i, tag1: end, name: name, attr0: a0, attr1: a0, nameCase: nameCase}
			if attrs != nil {
				sp.attr1 = len(*attrs)
			}
			i = end
			raw := rawTextElement(b[sp.tag0+1 : name])
			// Without an attribute element reads, only script, style
			// and noscript (whose names lower-case to nothing else from
			// outside ASCII) are read at all.
			sp.bare = attrs != nil && sp.attr1 == sp.attr0 && nameCase&tagHigh == 0 &&
				raw != "script" && raw != "style" && raw != "noscript"
			switch raw {
			case "":
			case "plaintext": // text to the end
				return append(dst, sp), false, true
			default:
				i = rawTextEnd(b, end, raw)
				if raw == "script" && bytes.Contains(b[end:i], []byte("<!--")) {
					return dst, false, false
				}
				if raw == "script" || raw == "style" {
					sp.text0, sp.text1 = end, i
				}
			}
			dst = append(dst, sp)
		case c == '/':
			// An end tag (read as a tag, quoted values and all), "</>"
			// (nothing), or a bogus comment up to '>'.
			switch {
			case i+2 >= n:
				return dst, false, true
			case b[i+2] == '>':
				i += 3
			case isASCIILetter(b[i+2]):
				if _, _, i = tagEnd(b, i+2, nil); i < 0 {
					return dst, false, true
				}
			default:
				if i = closeAngle(b, i+2); i < 0 {
					return dst, false, true
				}
			}
		case c == '!':
			// A comment, or a doctype or bogus comment up to '>'.
			if i+3 < n && b[i+2] == '-' && b[i+3] == '-' {
				i = commentEnd(b, i+4)
			} else {
				i = closeAngle(b, i+2)
			}
			if i < 0 {
				return dst, false, true
			}
		case c == '?': // a bogus comment up to '>'
			if i = closeAngle(b, i+1); i < 0 {
				return dst, false, true
			}
		default: // text: c is read again
			i++
		}
	}
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// closeAngle is the index after the first '>' in b from i, -1 when none.
func closeAngle(b []byte, i int) int {
	j := bytes.IndexByte(b[i:], '>')
	if j < 0 {
		return -1
	}
	return i + j + 1
}

// tagEnd reads the tag whose name starts at b[i] as readTag does, and
// returns the end of its name and the index after its '>' (-1 when b ends
// first): the name runs to white space, '/' or '>'; then each attribute is
// a key up to '=', white space, '/' or '>' (a leading '=' is part of it),
// optionally '=' and a value, quoted or up to white space or '>'; a '/'
// where a key would start is skipped. Each attribute whose key element
// reads (readsRawKey) is appended to *attrs when attrs is not nil.
// nameCase is the tagClass bits of the name's bytes or'ed.
func tagEnd(b []byte, i int, attrs *[]attrSpan) (name int, nameCase uint8, end int) {
	n := len(b)
	for ; i < n; i++ {
		c := tagClass[b[i]]
		if c&endsName != 0 {
			break
		}
		nameCase |= c
	}
	name = i
	for {
		if i = skipTagSpace(b, i); i >= n {
			return name, nameCase, -1
		}
		if b[i] == '>' {
			return name, nameCase, i + 1
		}
		k0 := i
		if b[i] == '=' {
			i++
		}
		var keyCase uint8
		for ; i < n; i++ {
			c := tagClass[b[i]]
			if c&endsKey != 0 {
				break
			}
			keyCase |= c
		}
		k1 := i
		v0, v1 := i, i
		if i = skipTagSpace(b, i); i >= n {
			return name, nameCase, -1
		}
		switch b[i] {
		case '/':
			i++
		case '=':
			if i = skipTagSpace(b, i+1); i >= n {
				return name, nameCase, -1
			}
			switch q := b[i]; q {
			case '>':
			case '"', '\'':
				j := bytes.IndexByte(b[i+1:], q)
				if j < 0 {
					return name, nameCase, -1
				}
				v0, v1 = i+1, i+1+j
				i += j + 2
			default:
				v0 = i
				for i < n && tagClass[b[i]]&endsValue == 0 {
					i++
				}
				v1 = i
			}
		}
		if attrs != nil && k1 > k0 && readsRawKey(b[k0:k1], keyCase) {
			*attrs = append(*attrs, attrSpan{k0, k1, v0, v1, keyCase})
		}
	}
}

// rawTextElement is the lower-case name of an element whose start tag
// switches the tokenizer to raw text or RCDATA (startTagIn in
// readStartTag), "" for any other name.
func rawTextElement(name []byte) string {
	switch len(name) { // only the names of name's length are compared
	case 3:
		if equalFoldLower(name, "xmp") {
			return "xmp"
		}
	case 5:
		switch {
		case equalFoldLower(name, "style"):
			return "style"
		case equalFoldLower(name, "title"):
			return "title"
		}
	case 6:
		switch {
		case equalFoldLower(name, "script"):
			return "script"
		case equalFoldLower(name, "iframe"):
			return "iframe"
		}
	case 7:
		if equalFoldLower(name, "noembed") {
			return "noembed"
		}
	case 8:
		switch {
		case equalFoldLower(name, "noframes"):
			return "noframes"
		case equalFoldLower(name, "noscript"):
			return "noscript"
		case equalFoldLower(name, "textarea"):
			return "textarea"
		}
	case 9:
		if equalFoldLower(name, "plaintext") {
			return "plaintext"
		}
	}
	return ""
}

// equalFoldLower reports whether b is s (ASCII lower-case letters) with any
// of its letters in upper case.
func equalFoldLower(b []byte, s string) bool {
	for i := range len(s) {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// rawTextEnd is where the raw text of element name, starting at b[i], ends
// (readRawEndTag): at the first "</" and name, letters in either case,
// followed by white space, '/' or '>'; len(b) when there is none.
func rawTextEnd(b []byte, i int, name string) int {
	for {
		j := bytes.Index(b[i:], []byte("</"))
		if j < 0 {
			return len(b)
		}
		j += i
		k := j + 2 + len(name)
		if k < len(b) && equalFoldLower(b[j+2:k], name) {
			if tagClass[b[k]]&endsName != 0 { // white space, '/' or '>'
				return j
			}
		}
		i = j + 2
	}
}

// commentEnd is the index after the '>' that ends the comment whose body
// starts at b[i] (readComment), -1 when b ends first: a '>' after two
// dashes, after "--!", or after nothing but dashes ("<!-->", "<!--->").
func commentEnd(b []byte, i int) int {
	body := b[i:]
	for p := 0; ; p++ {
		j := bytes.IndexByte(body[p:], '>')
		if j < 0 {
			return -1
		}
		first := p == 0
		p += j
		switch {
		case p >= 2 && body[p-1] == '-' && body[p-2] == '-',
			p >= 3 && body[p-1] == '!' && body[p-2] == '-' && body[p-3] == '-',
			first && len(bytes.Trim(body[:p], "-")) == 0:
			return i + p + 1
		}
	}
}

// rawText is a script's or style's text as Tokenizer.Text gives it: CR LF
// and a lone CR read as LF, NUL as U+FFFD. It is text itself when it holds
// neither, else converted into *buf.
func rawText(text []byte, buf *[]byte) []byte {
	if bytes.IndexByte(text, '\r') < 0 && bytes.IndexByte(text, 0) < 0 {
		return text
	}
	out := (*buf)[:0]
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\r':
			out = append(out, '\n')
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
		case 0:
			out = append(out, "\ufffd"...)
		default:
			out = append(out, c)
		}
	}
	*buf = out
	return out
}
