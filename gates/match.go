package gates

import "strings"

// Comparisons shared by the gates that match request lists against bid
// values: block lists and codes compare
// ASCII-case-insensitively, and a list whose entries are all blank counts
// as empty. None of them allocates.

// hasNonBlank reports whether list holds an entry that is not blank (empty
// or white space only).
func hasNonBlank(list []string) bool {
	for _, e := range list {
		if strings.TrimSpace(e) != "" {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether a and b are equal ignoring ASCII case.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if upperASCII(a[i]) != upperASCII(b[i]) {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether s contains the lower-case lowerSub,
// ASCII-case-insensitively.
func containsFoldASCII(s, lowerSub string) bool {
	n := len(lowerSub)
	if n == 0 {
		return false
	}
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerSub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// upperASCII upper-cases an ASCII letter and leaves any other byte alone.
func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
