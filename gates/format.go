package gates

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Formatting of numbers and strings in reasons, one way for every gate.
// These run only when a gate fails.

// formatNum writes the shortest decimal that reads back as the same float64
// (75, 0.5, 1.08).
func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// formatRatio rounds a ratio to 2 decimals, then formats it like formatNum.
// A ratio too large to scale by 100 has no decimals left to round.
func formatRatio(v float64) string {
	if r := math.Round(v*100) / 100; !math.IsInf(r, 0) {
		v = r
	}
	return formatNum(v)
}

// formatMs writes milliseconds with at most 3 decimals and no trailing zeros.
func formatMs(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// maxQuoted is the longest bid- or request-supplied string a reason carries.
const maxQuoted = 64

// quote prepares a bid- or request-supplied string for a reason: cut to 64
// bytes on a rune boundary with "..." appended, control characters as '?'.
func quote(s string) string { return clipReason(s, maxQuoted) }

// clipReason cuts s to n bytes on a rune boundary with "..." appended and
// replaces control characters with '?'.
func clipReason(s string, n int) string {
	cut := false
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return '?'
			}
			return r
		}, s)
	}
	if cut {
		s += "..."
	}
	return s
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
