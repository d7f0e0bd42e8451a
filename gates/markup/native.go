package markup

import (
	"bytes"
	"encoding/json"
	"io"
	"unsafe"
)

// Native markup (OpenRTB Native 1.0-1.2 response) is read with or without
// the 1.0/1.1 {"native": ...} wrapper (the wrapper is one more object: a
// string's key and parent are where it sits, whatever encloses them):
// jstracker is HTML, a video asset's vasttag is VAST, the image, tracker
// and event-tracker URLs are loaded without a gesture, link.url, fallback
// and clicktrackers on a click. JSON that does not parse is Unreadable.
//
// Two readings of the same rules: JSON that jsonraw validates is walked in
// place (nativefast.go, no allocation); anything else is read with
// encoding/json's Decoder.Token, the reference, which also reads what comes
// before a syntax error. FuzzNativeFast holds them equal.

// readNative reads b as native JSON at depth. Bytes after the object are
// Unreadable (JSON.parse rejects them) unless trailingOK (the HTML reading
// reads them).
func (a *analysis) readNative(b []byte, depth int, trailingOK bool) {
	if !a.enter(depth) || a.done() {
		return
	}
	w := nativeWalk{a: a, depth: depth}
	if !w.fast(b, trailingOK) {
		w.reference(b, trailingOK)
	}
}

// nativeWalk is one reading of a native document.
type nativeWalk struct {
	a     *analysis
	depth int
	// seen, when set (by tests), sees every string value with its key and
	// parent before it is read; the fast walk then decodes every string,
	// not only those nativeString reads.
	seen func(s []byte, key, parent nativeName)
	// bufs is the fast walk's pooled buffers, while it holds them.
	bufs *nativeBufs
}

// str reads the string value s found under key in an object under parent
// (in an array: key is the array's, parent none).
func (w *nativeWalk) str(s []byte, key, parent nativeName) {
	if w.seen != nil {
		w.seen(s, key, parent)
	}
	w.a.nativeString(s, key, parent, w.depth)
}

// reference reads b with encoding/json, token by token: what comes before
// a syntax error is read (for Insecure; Judge finds it Unreadable).
func (w *nativeWalk) reference(b []byte, trailingOK bool) {
	a := w.a
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	// One frame per open object or array: name is the key it sits under
	// (inside an array, the array's); key the object's current key.
	type frame struct {
		arr       bool
		name, key nativeName
		wantKey   bool
	}
	var stack []frame
	for !a.done() {
		t, err := d.Token()
		if err != nil {
			if err != io.EOF || len(stack) > 0 {
				a.found |= Unreadable
			}
			return
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := t.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				f := frame{arr: t == '[', wantKey: t == '{'}
				switch {
				case top == nil:
				case top.arr:
					f.name = top.name
				default:
					f.name, top.wantKey = top.key, true
				}
				stack = append(stack, f)
			default:
				if stack = stack[:len(stack)-1]; len(stack) == 0 {
					if rest := b[d.InputOffset():]; !trailingOK && len(bytes.TrimSpace(rest)) > 0 {
						a.found |= Unreadable
					}
					return
				}
			}
		case string:
			switch {
			case top == nil:
			case top.arr:
				w.str([]byte(t), top.name, nameNone)
			case top.wantKey:
				top.key, top.wantKey = nativeNameOf(t), false
			default:
				w.str([]byte(t), top.key, top.name)
				top.wantKey = true
			}
		default:
			if top != nil && !top.arr {
				top.wantKey = true
			}
		}
	}
}

// nativeName is an object key the native reading tells apart: a string's
// key and the key of the object or array holding it decide what it is.
type nativeName uint8

const (
	nameNone nativeName = iota // any other key, or none
	nameJstracker
	nameVasttag
	nameImptrackers
	nameURL
	nameClicktrackers
	nameFallback
	nameImg
	nameEventtrackers
	nameLink
)

var nativeNames = [...]string{
	nameNone: "", nameJstracker: "jstracker", nameVasttag: "vasttag", nameImptrackers: "imptrackers",
	nameURL: "url", nameClicktrackers: "clicktrackers", nameFallback: "fallback", nameImg: "img",
	nameEventtrackers: "eventtrackers", nameLink: "link",
}

// nativeNameOf is the name of a decoded key: compared exactly, as the
// renderer's JSON.parse gives it.
func nativeNameOf[S string | []byte](key S) nativeName {
	for n := nameJstracker; int(n) < len(nativeNames); n++ {
		if string(key) == nativeNames[n] {
			return n
		}
	}
	return nameNone
}

// What a native string is to the renderer.
const (
	nativeInert        = iota // nothing the renderer reads
	nativeHTML                // jstracker: markup
	nativeVAST                // vasttag: a VAST document
	nativeLoaded              // a URL loaded without a gesture
	nativeClickTracker        // a URL called on a click
	nativeClickThrough        // a URL opened on a click: the user leaves the ad
)

// nativeRole is what a string under key, in an object under parent, is.
func nativeRole(key, parent nativeName) int {
	switch {
	case key == nameJstracker:
		return nativeHTML
	case key == nameVasttag:
		return nativeVAST
	case key == nameImptrackers || key == nameURL && (parent == nameImg || parent == nameEventtrackers):
		return nativeLoaded
	case key == nameClicktrackers:
		return nativeClickTracker
	case (key == nameURL || key == nameFallback) && parent == nameLink:
		return nativeClickThrough
	}
	return nativeInert
}

// nativeString reads a decoded string by where it sits. s is read, not
// kept: the fast walk reuses its buffer for the next string.
func (a *analysis) nativeString(s []byte, key, parent nativeName, depth int) {
	switch role := nativeRole(key, parent); role {
	case nativeHTML:
		a.readHTML(s, depth+1)
	case nativeVAST:
		a.readVAST(s, depth+1, false)
	case nativeLoaded, nativeClickTracker, nativeClickThrough:
		a.nativeURL(s, role, depth)
	}
}

// nativeURL checks a URL the renderer loads or opens. InsecureURL and
// javascriptURL see u through a string view: they keep no part of their
// argument (javascriptURL returns a copy), so u need outlive only the call.
func (a *analysis) nativeURL(b []byte, role, depth int) {
	u := unsafe.String(unsafe.SliceData(b), len(b))
	if a.secure && role != nativeClickThrough && InsecureURL(u) {
		a.insecure = true
	}
	if !a.judge {
		return
	}
	code, ok := javascriptURL(u)
	if !ok {
		return
	}
	if role != nativeLoaded {
		a.readScript(code, ctxGesture, true, depth+1)
		return
	}
	a.readFrameScript(code, depth+1)
}
