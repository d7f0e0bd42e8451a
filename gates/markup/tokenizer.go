package markup

import (
	"bytes"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// tokenizer is a pooled x/net/html tokenizer with the buffers readTokens
// reuses: one creative read costs no tokenizer, reader or 4 KB buffer of
// its own. Taken with getTokenizer, returned with putTokenizer; nothing it
// holds (attr, content) is kept past putTokenizer.
type tokenizer struct {
	z *html.Tokenizer
	// fresh is *z as html.NewTokenizer made it, reading r: copying it back
	// restarts the tokenizer on whatever r then reads. The two share the
	// read buffer, which a fresh tokenizer holds empty, and the duplicate
	// attribute set, which the tokenizer clears at every tag.
	fresh   html.Tokenizer
	r       bytes.Reader
	attr    []html.Attribute
	content []byte
	// The current tag split from its raw bytes (splitTag): the name and
	// keys lower-cased into lower, the spans of each attribute kept.
	lower []byte
	spans []attrSpan
	// tags are the start tags scanTags found in the document, attrs their
	// attributes when it recorded them.
	tags  []tagSpan
	attrs []attrSpan
}

var tokenizers = sync.Pool{New: func() any {
	t := new(tokenizer)
	t.z = html.NewTokenizer(&t.r)
	t.fresh = *t.z
	return t
}}

// getTokenizer returns a tokenizer at the start of b.
func getTokenizer(b []byte) *tokenizer {
	t := tokenizers.Get().(*tokenizer)
	t.reset(b)
	return t
}

// reset restarts t on b.
func (t *tokenizer) reset(b []byte) {
	t.r.Reset(b)
	*t.z = t.fresh
}

// maxPooledContent bounds the script or style buffer a pooled tokenizer
// keeps: a large script's is left to the collector.
const maxPooledContent = 64 << 10

func putTokenizer(t *tokenizer) {
	clear(t.attr)
	t.spans = t.spans[:0]
	t.attr = t.attr[:0]
	if cap(t.tags) > maxPooledSpans {
		t.tags = nil
	}
	t.tags = t.tags[:0]
	if cap(t.attrs) > maxPooledSpans {
		t.attrs = nil
	}
	t.attrs = t.attrs[:0]
	if cap(t.content) > maxPooledContent {
		t.content = nil
	}
	t.content = t.content[:0]
	if cap(t.lower) > maxPooledContent {
		t.lower = nil
	}
	t.r.Reset(nil)
	tokenizers.Put(t)
}

// tagName is the tag's lower-case name as html.Tokenizer.Token gives it:
// an atom's string, or a view of name (in the tokenizer's buffers: valid
// as the attribute values of tag are, and never kept).
func tagName(name []byte) string {
	if a := atom.Lookup(name); a != 0 {
		return a.String()
	}
	return unsafe.String(unsafe.SliceData(name), len(name))
}

// readAttrs reads the current tag's attributes into t.attr (as
// html.Tokenizer.Token does, in order), leaving out those element never
// looks at: an attribute that is no handler, URL, markup, style or
// http-equiv, type or language (class, width, alt, data-*) costs no string.
// A key with a byte outside ASCII is kept, since element compares keys
// after Unicode lower-casing and folding (K, the Kelvin sign, is k).
func (t *tokenizer) readAttrs(more bool) []html.Attribute {
	t.attr = t.attr[:0]
	for more {
		var key, val []byte
		key, val, more = t.z.TagAttr()
		if readsAttr(key) {
			t.attr = append(t.attr, html.Attribute{Key: atom.String(key), Val: string(val)})
		}
	}
	return t.attr
}

// readsAttr reports an attribute key (lower case, as the tokenizer gives
// it) that element, secureAttr, urlAttr, attr or runsAsScript reads.
func readsAttr(key []byte) bool {
	if len(key) > 2 && key[0] == 'o' && key[1] == 'n' {
		return true
	}
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	switch string(key) {
	case "http-equiv", "type", "language", "srcdoc", "style", "srcset", "imagesrcset":
		return true
	}
	return isURLAttr(viewString(key))
}

// readsRawKey is readsAttr for a key as written, its ASCII capitals read
// as the tokenizer's lower case, without a copy of the key when it has
// none; keyCase is the tagClass bits of k's bytes or'ed.
func readsRawKey(k []byte, keyCase uint8) bool {
	switch {
	case keyCase&tagHigh != 0 || len(k) > 2 && k[0]|0x20 == 'o' && k[1]|0x20 == 'n': // 'o' or 'O', 'n' or 'N'
		return true
	case len(k) > len("imagesrcset"): // the longest key read but on*
		return false
	case keyCase&tagUpper == 0:
		return readsLowerKey(viewString(k))
	}
	var buf [len("imagesrcset")]byte
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return readsLowerKey(viewString(buf[:len(k)]))
}

// readsLowerKey is readsAttr for an ASCII key in lower case that is no
// handler: readsAttr's keys and isURLAttr's in one switch.
func readsLowerKey(k string) bool {
	switch k {
	case "http-equiv", "type", "language", "srcdoc", "style", "srcset", "imagesrcset",
		"href", "src", "action", "formaction", "data", "xlink:href", "poster", "background", "codebase",
		"cite", "longdesc", "lowsrc", "dynsrc", "ping", "manifest", "icon", "archive", "classid", "to", "values", "from", "by":
		return true
	}
	return false
}

// isASCII reports b without a byte outside ASCII.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// tag reads the current start tag: its lower-case name and the attributes
// element reads (readsAttr). The tag is split from its raw bytes when
// splitTag can (no NUL, CR or character reference, few attributes: what
// Tokenizer.TagName and TagAttr would give is then those bytes, ASCII
// letters lower-cased), else through TagName and TagAttr, which copy
// every name, key and value.
//
// The values and keys of a split tag, and a name that is no atom, view the
// tokenizer's buffers: they are valid until the next call of t.z.Next or
// t.splitTag (own copies the values; script and style are atoms), and
// whatever keeps one past that copies it (element and what it calls keep
// none: they convert to []byte, parse a copy or compare).
func (t *tokenizer) tag() (string, []html.Attribute) {
	raw := t.z.Raw()
	if name, ok := t.splitTag(raw); ok {
		return tagName(name), t.splitAttrs(raw)
	}
	name, more := t.z.TagName()
	return tagName(name), t.readAttrs(more)
}

// tagOf is tag for raw, a whole start tag as scanTags finds it (plain:
// found in plainMarkup): the values of a split tag view raw, its name and
// keys view t.lower (no atom lookup: nothing reads them past the next
// tagOf, and a nested reading takes a tokenizer of its own); a tag
// splitTag cannot split is read by the tokenizer alone (restarted on raw,
// it reads the tag as it does inside its document: a start tag's token
// depends on its bytes only).
func (t *tokenizer) tagOf(raw []byte, plain bool) (string, []html.Attribute) {
	split := t.splitTag
	if plain {
		split = t.splitPlainTag
	}
	if name, ok := split(raw); ok {
		return viewString(name), t.splitAttrs(raw)
	}
	t.reset(raw)
	t.z.Next()
	name, more := t.z.TagName()
	return tagName(name), t.readAttrs(more)
}

// scannedTag is tagOf for the start tag sp of b, plain markup that
// scanTagsAttrs read with the attributes element reads: split as
// splitPlainTag splits it and filtered as splitAttrs filters it, from the
// spans the scan recorded instead of the tag's bytes read again. The name
// and keys view b, or t.lower when they have ASCII capitals; the values
// view b. A repeated key is dropped (the tokenizer drops every repeated
// key, and readsAttr tells a key's repeats as it tells the key). A tag
// with more than maxSplitAttrs such keys goes to tagOf, and so to the
// tokenizer. ascii reports a name and keys without a byte outside ASCII,
// which strings.ToLower gives back unchanged.
func (t *tokenizer) scannedTag(b []byte, sp tagSpan) (name string, attrs []html.Attribute, ascii bool) {
	lower := t.lower[:0]
	name = lowerView(&lower, b[sp.tag0+1:sp.name], sp.nameCase)
	high := sp.nameCase
	t.attr = t.attr[:0]
	for _, at := range t.attrs[sp.attr0:sp.attr1] {
		key := lowerView(&lower, b[at.key0:at.key1], at.keyCase)
		if seenAttr(t.attr, key) {
			continue
		}
		if len(t.attr) == maxSplitAttrs {
			t.lower = lower
			name, attrs = t.tagOf(b[sp.tag0:sp.tag1], true)
			return name, attrs, false
		}
		high |= at.keyCase
		t.attr = append(t.attr, html.Attribute{Key: key, Val: viewString(b[at.val0:at.val1])})
	}
	t.lower = lower
	return name, t.attr, high&tagHigh == 0
}

// lowerView is s with its ASCII capitals lower-cased: a view of s when it
// has none (no tagUpper in sCase, its bytes' tagClass bits or'ed), else of
// a copy appended to *buf (a view stays valid when a later append moves
// *buf: the bytes it views are not written again).
func lowerView(buf *[]byte, s []byte, sCase uint8) string {
	if sCase&tagUpper == 0 {
		return viewString(s)
	}
	n := len(*buf)
	*buf = appendLower(*buf, s)
	return viewString((*buf)[n:])
}

// seenAttr reports whether key is one of attrs' keys.
func seenAttr(attrs []html.Attribute, key string) bool {
	for i := range attrs {
		if attrs[i].Key == key {
			return true
		}
	}
	return false
}

// seenKey reports whether the key lower[key0:] is one of t.spans' (a
// repeated attribute, which the tokenizer drops).
func (t *tokenizer) seenKey(lower []byte, key0 int) bool {
	key := lower[key0:]
	for _, sp := range t.spans {
		if string(lower[sp.key0:sp.key1]) == string(key) {
			return true
		}
	}
	return false
}

// splitAttrs are the attributes of raw split by splitTag that element
// reads (readsAttr), their keys viewing t.lower and their values raw.
func (t *tokenizer) splitAttrs(raw []byte) []html.Attribute {
	t.attr = t.attr[:0]
	for _, sp := range t.spans {
		key := t.lower[sp.key0:sp.key1]
		if readsAttr(key) {
			t.attr = append(t.attr, html.Attribute{Key: viewString(key), Val: viewString(raw[sp.val0:sp.val1])})
		}
	}
	return t.attr
}

// viewString views b as a string without copying: b must not change while
// the string is read.
func viewString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// own copies the attribute values of the current tag out of the
// tokenizer's buffer, which reading further may overwrite.
func (t *tokenizer) own() {
	for i := range t.attr {
		t.attr[i].Val = strings.Clone(t.attr[i].Val)
	}
}

// maxSplitAttrs bounds the attributes splitTag takes (it finds repeated
// keys by comparing each with those before): a tag with more is read
// through TagAttr, whose cost is linear.
const maxSplitAttrs = 32

// splitTag splits the raw start tag raw ("<name attr...>", as
// Tokenizer.Raw gives a start or self-closing tag token) as the
// tokenizer's readTag does: the name up to white space, '/' or '>'; each
// attribute a key up to '=', white space, '/' or '>' (a leading '=' is
// part of it), then optionally '=' and a value, quoted or up to white space
// or '>'; an empty key dropped, a key seen before in the tag dropped. It
// returns the lower-case name (in t.lower, with the keys after it) and
// fills t.spans; false when raw holds a NUL, CR or '&' (TagName and TagAttr
// would replace or unescape them), more than maxSplitAttrs attributes, or
// is not a whole tag.
func (t *tokenizer) splitTag(raw []byte) ([]byte, bool) {
	if !plainMarkup(raw) {
		t.spans = t.spans[:0]
		return nil, false
	}
	return t.splitPlainTag(raw)
}

// plainMarkup reports markup without NUL, CR or '&', whose tags the
// tokenizer gives as written (but for the case of names and keys).
func plainMarkup(b []byte) bool {
	return bytes.IndexByte(b, '&') < 0 && bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, 0) < 0
}

// splitPlainTag is splitTag for a tag known to be plainMarkup.
func (t *tokenizer) splitPlainTag(raw []byte) ([]byte, bool) {
	t.spans = t.spans[:0]
	n := len(raw)
	if n < 3 || raw[0] != '<' || raw[n-1] != '>' {
		return nil, false
	}
	lower := t.lower[:0]
	// The name: its first byte (a letter) is read with the '<'.
	i := 2
	for i < n && tagClass[raw[i]]&endsName == 0 {
		i++
	}
	lower = appendLower(lower, raw[1:i])
	nameEnd := len(lower)
	i = skipTagSpace(raw, i)
	for i < n && raw[i] != '>' {
		// The key.
		k0 := i
		if raw[i] == '=' {
			i++
		}
		for i < n && tagClass[raw[i]]&endsKey == 0 {
			i++
		}
		k1 := i
		// The value.
		v0, v1 := i, i
		i = skipTagSpace(raw, i)
		if i >= n {
			return nil, false
		}
		switch raw[i] {
		case '/':
			i++
		case '=':
			i = skipTagSpace(raw, i+1)
			if i >= n {
				return nil, false
			}
			switch q := raw[i]; q {
			case '>':
			case '"', '\'':
				j := bytes.IndexByte(raw[i+1:], q)
				if j < 0 {
					return nil, false
				}
				v0, v1 = i+1, i+1+j
				i = v1 + 1
			default:
				v0 = i
				for i < n && tagClass[raw[i]]&endsValue == 0 {
					i++
				}
				v1 = i
			}
		}
		if k1 > k0 {
			key0 := len(lower)
			lower = appendLower(lower, raw[k0:k1])
			if t.seenKey(lower, key0) {
				lower = lower[:key0]
			} else {
				if len(t.spans) == maxSplitAttrs {
					t.lower = lower
					return nil, false
				}
				t.spans = append(t.spans, attrSpan{key0: key0, key1: len(lower), val0: v0, val1: v1})
			}
		}
		i = skipTagSpace(raw, i)
	}
	t.lower = lower
	if i != n-1 {
		return nil, false
	}
	return lower[:nameEnd], true
}

// tagClass classes the bytes that end a tag's name, an attribute's key or
// an unquoted value, as the tokenizer's readTag reads them, and the bytes
// a name or key holds that lower-casing (tagUpper) or Unicode folding
// (tagHigh) may change.
var tagClass = func() (t [256]uint8) {
	for _, c := range []byte(" \n\r\t\f") {
		t[c] = tagSpace
	}
	t['/'], t['>'], t['='] = tagSlash, tagGT, tagEq
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = tagUpper
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = tagHigh
	}
	return t
}()

const (
	tagSpace = 1 << iota
	tagSlash
	tagGT
	tagEq
	tagUpper // 'A' to 'Z'
	tagHigh  // 0x80 and over: a byte of a multi-byte character

	endsName  = tagSpace | tagSlash | tagGT
	endsKey   = endsName | tagEq // after the key's first byte: a leading '=' is part of it
	endsValue = tagSpace | tagGT // an unquoted value
)

func skipTagSpace(b []byte, i int) int {
	for i < len(b) && tagClass[b[i]] == tagSpace {
		i++
	}
	return i
}

// appendLower appends b with ASCII capitals lower-cased (the tokenizer's
// lower-casing of names and keys).
func appendLower(dst, b []byte) []byte {
	n := len(dst)
	dst = append(dst, b...)
	for i, c := range dst[n:] {
		if 'A' <= c && c <= 'Z' {
			dst[n+i] = c + 'a' - 'A'
		}
	}
	return dst
}
