package gates

// ASCII case folding for names compared without case (URL schemes, hosts,
// seat policy values).

// markupNameIs compares b with the lower-case ASCII word w, ignoring ASCII case.
func markupNameIs(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if markupLower(b[i]) != w[i] {
			return false
		}
	}
	return true
}

func markupLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// markupUnhex is the value of the hex digit c.
func markupUnhex(c byte) (byte, bool) {
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
