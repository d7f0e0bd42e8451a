package markup

import (
	"bytes"
	"sync"
	"unicode/utf8"

	"github.com/bidguard/bidguard/jsonraw"
)

// The fast native reading. encoding/json's Decoder.Token costs about 17 µs
// of CPU and 169 allocations for a distinct 300-byte native adm (an
// interface value per token, a string per key and value): 9.7% of
// bidguard's CPU under load with native creatives the verdict cache has
// not seen. A document jsonraw validates (the bid path's own validator,
// differential-fuzzed against encoding/json) is walked here in place
// instead, token by token, with the reference's frames and decisions and
// without allocating: strings are passed as views of the adm, or, when
// they hold escapes or invalid UTF-8, decoded by jsonraw.Unescape (as
// encoding/json decodes them) into a pooled buffer.

// nativeBufs are the fast walk's buffers, pooled: taken by one walk,
// returned when it ends; nothing in them outlives the walk.
type nativeBufs struct {
	str   []byte        // the string being read, decoded
	stack []nativeFrame // the open objects and arrays
}

// nativeFrame is an open object or array: name is the key it sits under
// (inside an array, the array's); key the object's current key.
type nativeFrame struct {
	arr     bool
	name    nativeName
	key     nativeName
	wantKey bool
}

var nativePool = sync.Pool{New: func() any { return new(nativeBufs) }}

// maxPooledNative bounds the string buffer a pooled nativeBufs keeps: a
// large jstracker's copy is left to the collector. The stack holds at most
// jsonraw.MaxDepth frames.
const maxPooledNative = 64 << 10

// fast reads b when its first value is JSON jsonraw validates (one value
// alone when it is not an object or array, whose reading reads nothing),
// exactly as reference would; false, having read nothing, for anything
// else.
func (w *nativeWalk) fast(b []byte, trailingOK bool) bool {
	i := jsonraw.SkipSpace(b, 0)
	if i == len(b) {
		return true // nothing: the reference reads to EOF at once
	}
	container := b[i] == '{' || b[i] == '['
	// Usually the adm is the object alone: one pass validates it. Else the
	// decoder stops after the first object or array, so only it must be
	// JSON: ValueEnd finds its end when it is, and Validate rejects what
	// it found when it is not.
	end := len(b)
	whole := !container || closedAtEnd(b, b[i])
	var doc jsonraw.Doc
	var err error
	if whole {
		doc, err = jsonraw.Validate(b)
	}
	if container && (!whole || err != nil) {
		if end = jsonraw.ValueEnd(b, i); end < 0 {
			return false
		}
		doc, err = jsonraw.Validate(b[:end])
	}
	if err != nil {
		return false
	}
	if !container {
		// A lone string, number or literal: nothing sits under a key.
		return true
	}
	w.bufs = nativePool.Get().(*nativeBufs)
	defer w.putBufs()
	if w.walk(b[i:end], doc.ValidUTF8()) && !trailingOK && len(bytes.TrimSpace(b[end:])) > 0 {
		w.a.found |= Unreadable
	}
	return true
}

// closedAtEnd reports whether b, white space at its end aside, ends with
// the closer of open ('{' or '[').
func closedAtEnd(b []byte, open byte) bool {
	j := len(b)
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\n' || b[j-1] == '\r') {
		j--
	}
	return j > 0 && b[j-1] == open+2 // '}' follows '|', ']' follows '\\'
}

func (w *nativeWalk) putBufs() {
	bufs := w.bufs
	w.bufs = nil
	if cap(bufs.str) > maxPooledNative {
		bufs.str = nil
	}
	bufs.str, bufs.stack = bufs.str[:0], bufs.stack[:0]
	nativePool.Put(bufs)
}

// walk reads v, one object or array jsonraw validated, and reports whether
// it read it to its end (false: the verdict was settled on the way, where
// the reference stops too). validUTF8 is whether the whole of v is. Its
// frames are reference's, updated token for token as there: only what
// differs is how a token is found and a string decoded.
func (w *nativeWalk) walk(v []byte, validUTF8 bool) bool {
	stack := w.bufs.stack[:0]
	defer func() { w.bufs.stack = stack[:0] }()
	for i := 0; ; {
		i = jsonraw.SkipSpace(v, i)
		switch c := v[i]; c {
		case ',', ':':
			i++
		case '{', '[':
			f := nativeFrame{arr: c == '[', wantKey: c == '{'}
			if n := len(stack); n > 0 {
				if top := &stack[n-1]; top.arr {
					f.name = top.name
				} else {
					f.name, top.wantKey = top.key, true
				}
			}
			stack = append(stack, f)
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return true
			}
			i++
		case '"':
			end, escaped := jsonraw.StringEnd(v, i)
			// Capacity clipped: a reader appending to its input cannot
			// write into the adm.
			raw := v[i+1 : end-1 : end-1]
			i = end
			top := &stack[len(stack)-1]
			var key, parent nativeName
			switch {
			case top.arr:
				key = top.name
			case top.wantKey:
				top.key, top.wantKey = w.key(raw, escaped), false
				continue
			default:
				key, parent, top.wantKey = top.key, top.name, true
			}
			if w.seen == nil && nativeRole(key, parent) == nativeInert {
				continue
			}
			w.str(w.decode(raw, escaped, validUTF8), key, parent)
			if w.a.done() {
				return false
			}
		default: // a number, true, false or null
			for i < len(v) && !scalarEnds[v[i]] {
				i++
			}
			if top := &stack[len(stack)-1]; !top.arr {
				top.wantKey = true
			}
		}
	}
}

// scalarEnds marks the bytes that end a number or literal in valid JSON.
var scalarEnds = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}

// key is the name of the raw key (the bytes between its quotes).
func (w *nativeWalk) key(raw []byte, escaped bool) nativeName {
	if !escaped {
		// Invalid UTF-8 decodes to U+FFFD, which no name holds, as no
		// name holds the invalid byte itself.
		return nativeNameOf(raw)
	}
	w.bufs.str = jsonraw.Unescape(w.bufs.str[:0], raw)
	return nativeNameOf(w.bufs.str)
}

// decode returns the string whose contents (the bytes between its
// quotes) are raw, as encoding/json decodes it: raw itself when it holds
// no escape or invalid UTF-8, else decoded into the walk's buffer, valid
// until the next call.
func (w *nativeWalk) decode(raw []byte, escaped, validUTF8 bool) []byte {
	switch {
	case escaped && validUTF8:
		w.bufs.str = jsonraw.UnescapeValid(w.bufs.str[:0], raw)
	case escaped || !validUTF8 && !utf8.Valid(raw):
		w.bufs.str = jsonraw.Unescape(w.bufs.str[:0], raw)
	default:
		return raw
	}
	return w.bufs.str
}
