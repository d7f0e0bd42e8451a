package gates

import "bytes"

// matchBefore is pii.match as it was before the length checks and the
// narrowed SSN search; the differential tests hold match equal to it and
// to the plain regexes (refPII).
func matchBefore(g *pii, s []byte) string {
	if g.email && hasEmail(s) {
		return reasonEmail
	}
	if !g.ssn && !g.phone {
		return ""
	}
	if !g.phone {
		if hasSSNBefore(s) {
			return reasonSSN
		}
		return ""
	}
	ssn, phone := scanDigits(s, g.ssn, g.phone)
	switch {
	case ssn:
		return reasonSSN
	case phone:
		return reasonPhone
	}
	return ""
}

// hasSSNBefore is hasSSN as it was: every '-' from s[3:] on tried.
func hasSSNBefore(s []byte) bool {
	for from := 3; from < len(s); {
		d := bytes.IndexByte(s[from:], '-')
		if d < 0 {
			return false
		}
		h := from + d
		if a := h - 3; digitAt(s, a) && digitAt(s, a+1) && digitAt(s, a+2) && isSSNAt(s, a) {
			return true
		}
		from = h + 1
	}
	return false
}
