package markup

import (
	"bytes"
	"encoding/json"
	"io"
)

// Native markup (OpenRTB Native 1.0-1.2 response) is read with
// encoding/json, with or without the 1.0/1.1 {"native": ...} wrapper:
// jstracker is HTML, a video asset's vasttag is VAST, the image, tracker
// and event-tracker URLs are loaded without a gesture, link.url, fallback
// and clicktrackers on a click. JSON that does not parse is Unreadable.

// readNative reads b as native JSON at depth, token by token: what comes
// before a syntax error is read (for Insecure; Judge finds it Unreadable).
// Bytes after the object are Unreadable (JSON.parse rejects them) unless
// trailingOK (the HTML reading reads them).
func (a *analysis) readNative(b []byte, depth int, trailingOK bool) {
	if !a.enter(depth) || a.done() {
		return
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	// One frame per open object or array: name is the key it sits under
	// (inside an array, the array's); key the object's current key.
	type frame struct {
		arr       bool
		name, key string
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
				a.nativeString(t, top.name, "", depth)
			case top.wantKey:
				top.key, top.wantKey = t, false
			default:
				a.nativeString(t, top.key, top.name, depth)
				top.wantKey = true
			}
		default:
			if top != nil && !top.arr {
				top.wantKey = true
			}
		}
	}
}

// nativeString reads a string by where it sits.
func (a *analysis) nativeString(s, key, parent string, depth int) {
	switch {
	case key == "jstracker":
		a.readHTML([]byte(s), depth+1)
	case key == "vasttag":
		a.readVAST([]byte(s), depth+1, false)
	case key == "imptrackers" || key == "url" && (parent == "img" || parent == "eventtrackers"):
		a.nativeURL(s, nativeLoaded, depth)
	case key == "clicktrackers":
		a.nativeURL(s, nativeClickTracker, depth)
	case (key == "url" || key == "fallback") && parent == "link":
		a.nativeURL(s, nativeClickThrough, depth)
	}
}

// What a native URL is to the renderer.
const (
	nativeLoaded       = iota // loaded without a gesture
	nativeClickTracker        // called on a click
	nativeClickThrough        // opened on a click: the user leaves the ad
)

// nativeURL checks a URL the renderer loads or opens.
func (a *analysis) nativeURL(u string, role, depth int) {
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
