package markup

import (
	"bytes"
	"sync"

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
	t.attr = t.attr[:0]
	if cap(t.content) > maxPooledContent {
		t.content = nil
	}
	t.content = t.content[:0]
	t.r.Reset(nil)
	tokenizers.Put(t)
}

// tagName is the tag's lower-case name as html.Tokenizer.Token gives it:
// an atom's string, or a new one.
func tagName(name []byte) string {
	if a := atom.Lookup(name); a != 0 {
		return a.String()
	}
	return string(name)
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
	return isURLAttr(string(key))
}
