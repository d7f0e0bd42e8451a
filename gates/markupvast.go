package gates

// VAST elements (VAST 2-4) the markup gates read by name: those whose content
// is a URL the player loads or calls (secureMarkup checks their scheme), and
// the click-throughs it opens on a click (markupSafety checks them, with the
// others, for javascript:). Names compare without case.

// vastURLElement reports the VAST elements whose content is a URL the
// player loads or calls (the names compared without case).
func vastURLElement(name []byte) bool {
	switch len(name) {
	case 5:
		return markupNameIs(name, "error")
	case 8:
		return markupNameIs(name, "tracking") || markupNameIs(name, "viewable")
	case 9:
		return markupNameIs(name, "mediafile")
	case 10:
		return markupNameIs(name, "impression")
	case 11:
		return markupNameIs(name, "notviewable")
	case 12:
		return markupNameIs(name, "vastadtaguri")
	case 13:
		return markupNameIs(name, "clicktracking")
	case 14:
		return markupNameIs(name, "staticresource") || markupNameIs(name, "iframeresource")
	case 16:
		return markupNameIs(name, "viewundetermined")
	case 17:
		return markupNameIs(name, "iconclicktracking")
	case 18:
		return markupNameIs(name, "javascriptresource") || markupNameIs(name, "executableresource")
	case 22:
		return markupNameIs(name, "companionclicktracking")
	}
	return false
}

// vastClickThrough reports the VAST click-through elements (opened on a
// click: secureMarkup does not read them, markupSafety checks them for
// javascript:).
func vastClickThrough(name []byte) bool {
	switch len(name) {
	case 12:
		return markupNameIs(name, "clickthrough")
	case 16:
		return markupNameIs(name, "iconclickthrough")
	case 21:
		return markupNameIs(name, "companionclickthrough") || markupNameIs(name, "nonlinearclickthrough")
	}
	return false
}
