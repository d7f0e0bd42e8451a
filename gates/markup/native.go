package markup

import (
	"bytes"
	"encoding/json"
)

// Native markup (OpenRTB Native 1.0-1.2 response) is read with
// encoding/json, with or without the 1.0/1.1 {"native": ...} wrapper:
// jstracker is HTML, a video asset's vasttag is VAST, the image, tracker
// and event-tracker URLs are loaded without a gesture, link.url, fallback
// and clicktrackers on a click. JSON that does not parse is Unreadable.

// readNative reads b as native JSON at depth.
func (a *analysis) readNative(b []byte, depth int) {
	if !a.enter(depth) || a.done() {
		return
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if !a.secure {
			a.found |= Unreadable
		}
		return
	}
	a.nativeValue(v, "", "", false, depth)
}

// nativeValue walks a native value: key is the key it sits under, parent
// the key of the object holding it, inArr whether that object is an array
// element.
func (a *analysis) nativeValue(v any, key, parent string, inArr bool, depth int) {
	if a.done() {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			a.nativeValue(x, k, key, inArr, depth)
		}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				a.nativeString(s, key, "", true, depth)
				continue
			}
			a.nativeValue(x, key, parent, true, depth)
		}
	case string:
		a.nativeString(v, key, parent, inArr, depth)
	}
}

// nativeString reads a string by where it sits.
func (a *analysis) nativeString(s, key, parent string, inArr bool, depth int) {
	switch {
	case key == "jstracker":
		a.readHTML([]byte(s), depth+1)
	case key == "vasttag":
		a.readVAST([]byte(s), depth+1)
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
	if a.secure {
		if role != nativeClickThrough && InsecureURL(u) {
			a.insecure = true
		}
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
