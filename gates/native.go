package gates

// Native ad markup (OpenRTB Native Ads 1.0-1.2, the response object): a
// tolerant walk over the JSON of an adm, with or without the 1.0/1.1
// {"native": ...} wrapper, that yields the strings a renderer loads. Broken
// JSON (the spec's own sample holds "{ ... }") is walked as far as it goes:
// brackets and quotes drive the walk, anything else is skipped, nothing is
// rejected. In place, no allocation, linear time.

import (
	"bytes"
	"sync"
	"unicode/utf8"

	"github.com/bidguard/bidguard/jsonraw"
)

// nativeField is what a native string holds.
type nativeField uint8

const (
	nativeNone nativeField = iota
	// nativeURL: assets[].img.url, imptrackers[], link.clicktrackers[],
	// eventtrackers[].url.
	nativeURL
	// nativeHTML: jstracker, a string of HTML (script tags).
	nativeHTML
	// nativeClick: link.url and link.fallback, click-throughs (followed on a
	// click, not loaded).
	nativeClick
)

// nativeFrame is an open object or array: the key it sits under (for an
// array element, its array's key) and its shape.
type nativeFrame struct {
	key   []byte // raw (JSON-escaped) key, nil at the top
	arr   bool
	inArr bool // an element of an array
}

// nativeMaxDepth bounds the frames kept; deeper containers are walked
// without keys (a native response needs 5).
const nativeMaxDepth = 16

// nativeStrings walks native JSON. Spans point into s and are still
// JSON-escaped: read them through an escDecoder with escJSON.
type nativeStrings struct {
	s         []byte
	p         int
	stack     [nativeMaxDepth]nativeFrame
	depth     int    // open containers, may exceed nativeMaxDepth
	key       []byte // the innermost object's current key
	expectKey bool
}

func (w *nativeStrings) reset(s []byte) { *w = nativeStrings{s: s} }

// top is the innermost frame, nil when there is none or it was not kept.
func (w *nativeStrings) top() *nativeFrame {
	if w.depth == 0 || w.depth > nativeMaxDepth {
		return nil
	}
	return &w.stack[w.depth-1]
}

// next returns the next string the renderer loads: its field kind and its
// span in s (between the quotes).
func (w *nativeStrings) next() (kind nativeField, start, end int, ok bool) {
	s := w.s
	for w.p < len(s) {
		c := s[w.p]
		w.p++
		switch c {
		case '{', '[':
			f := nativeFrame{arr: c == '['}
			if t := w.top(); t != nil {
				f.inArr = t.arr
				if t.arr {
					f.key = t.key
				} else {
					f.key = w.key
				}
			}
			if w.depth < nativeMaxDepth {
				w.stack[w.depth] = f
			}
			w.depth++
			w.key, w.expectKey = nil, !f.arr
		case '}', ']':
			if w.depth > 0 {
				popped := w.top()
				w.depth--
				w.key, w.expectKey = nil, false
				if t := w.top(); t != nil && !t.arr && popped != nil {
					w.key = popped.key
				}
			}
		case ',':
			if t := w.top(); t != nil && !t.arr {
				w.key, w.expectKey = nil, true
			}
		case '"':
			b := w.p
			e := nativeStringEnd(s, b)
			w.p = e + 1
			t := w.top()
			if t == nil {
				continue
			}
			if !t.arr && w.expectKey {
				w.key, w.expectKey = s[b:e], false
				continue
			}
			if k := nativeKind(t, w.key); k != nativeNone {
				return k, b, e, true
			}
		}
	}
	return nativeNone, 0, 0, false
}

// nativeKind classifies a string value by where it sits.
func nativeKind(t *nativeFrame, key []byte) nativeField {
	if t.arr {
		if nativeKeyIs(t.key, "imptrackers") || nativeKeyIs(t.key, "clicktrackers") {
			return nativeURL
		}
		return nativeNone
	}
	switch {
	case nativeKeyIs(key, "url"):
		if nativeKeyIs(t.key, "img") && !t.inArr || nativeKeyIs(t.key, "eventtrackers") && t.inArr {
			return nativeURL
		}
		if nativeKeyIs(t.key, "link") && !t.inArr {
			return nativeClick
		}
	case nativeKeyIs(key, "fallback"):
		if nativeKeyIs(t.key, "link") && !t.inArr {
			return nativeClick
		}
	case nativeKeyIs(key, "imptrackers"), nativeKeyIs(key, "clicktrackers"):
		return nativeURL
	case nativeKeyIs(key, "jstracker"):
		return nativeHTML
	}
	return nativeNone
}

// nativeStringEnd returns the index of the quote closing the string that starts
// at b, or len(s) when it is not closed. A quote after an odd run of
// backslashes is escaped (each run is counted once: linear).
func nativeStringEnd(s []byte, b int) int {
	for i := b; i < len(s); {
		j := bytes.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		k := i
		for k > b && s[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
		i++
	}
	return len(s)
}

// nativeKeyIs compares a raw (JSON-escaped) key with an ASCII name.
func nativeKeyIs(raw []byte, name string) bool {
	if len(raw) == len(name) && string(raw) == name {
		return true
	}
	// An escaped ASCII character takes at most 6 bytes (\u0075): a longer
	// key is not scanned, which keeps the walk linear.
	if len(raw) <= len(name) || len(raw) > 6*len(name) || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	d := escDecoder{s: raw, flags: escJSON}
	p, i := 0, 0
	for ; p < len(raw) && i < len(name); i++ {
		var c byte
		c, p = d.at(p)
		if c != name[i] {
			return false
		}
	}
	return p == len(raw) && i == len(name)
}

// appendNativeUnescaped appends the JSON string content raw with its escapes
// undone (a lone or invalid escape is kept as written).
func appendNativeUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return append(dst, raw[i:]...)
		}
		dst = append(dst, raw[i:i+j]...)
		i += j
		if i+1 < len(raw) && raw[i+1] == 'u' && jsonraw.Hex4(raw, i+2) >= 0 {
			var r rune
			r, i = jsonraw.Rune(raw, i) // a surrogate pair is one character
			dst = utf8.AppendRune(dst, r)
			continue
		}
		d := escDecoder{s: raw, flags: escJSON}
		var c byte
		c, i = d.at(i)
		dst = append(dst, c)
	}
	return dst
}

// nativeUnescapedBufs holds buffers for unescapeNative.
var nativeUnescapedBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledNative is the largest buffer returned to the pool.
const maxPooledNative = 64 << 10

// unescapeNative returns the content of a JSON string with its escapes undone:
// raw itself when it has none (buf nil), else a pooled buffer (buf) that the
// caller hands back with releaseUnescapedNative once done with text.
func unescapeNative(raw []byte) (text []byte, buf *[]byte) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil
	}
	buf = nativeUnescapedBufs.Get().(*[]byte)
	*buf = appendNativeUnescaped((*buf)[:0], raw)
	return *buf, buf
}

// releaseUnescapedNative returns a buffer of unescapeNative to its pool
// (nil: nothing).
func releaseUnescapedNative(buf *[]byte) {
	if buf != nil && cap(*buf) <= maxPooledNative {
		nativeUnescapedBufs.Put(buf)
	}
}
