package markup

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// checkCharsByWords is checkChars as it was before it read sixteen bytes a
// step: the reference of TestCheckChars and FuzzCheckChars, with
// checkCharsByRunes, the XML Char production read rune by rune.
func checkCharsByWords(s string) (valid, ascii bool) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	var high uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		high |= w
		if (w-0x20*lo)&^w&hi != 0 && !validControls(b) {
			return false, false
		}
	}
	if !validControls(s[i:]) {
		return false, false
	}
	for ; i < len(s); i++ {
		high |= uint64(s[i])
	}
	if high&hi == 0 {
		return true, true
	}
	if !utf8.ValidString(s) {
		return false, false
	}
	for i := strings.Index(s, "\xef\xbf"); i >= 0; {
		if i+2 < len(s) && (s[i+2] == 0xbe || s[i+2] == 0xbf) {
			return false, false
		}
		j := strings.Index(s[i+2:], "\xef\xbf")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return true, false
}

func checkCharsByRunes(s string) (valid, ascii bool) {
	if !utf8.ValidString(s) {
		return false, false
	}
	ascii = true
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xfffe || r == 0xffff {
			return false, false
		}
		ascii = ascii && r < utf8.RuneSelf
	}
	return true, ascii
}

func sameCheckChars(t *testing.T, s string) {
	t.Helper()
	valid, ascii := checkChars(s)
	if wv, wa := checkCharsByWords(s); valid != wv || ascii != wa {
		t.Fatalf("checkChars(%q) = %v, %v; by words %v, %v", s, valid, ascii, wv, wa)
	}
	if wv, wa := checkCharsByRunes(s); valid != wv || ascii != wa {
		t.Fatalf("checkChars(%q) = %v, %v; by runes %v, %v", s, valid, ascii, wv, wa)
	}
}

// checkCharsSeeds put each kind of byte checkChars tells apart at each
// place of texts up to 40 bytes long: a control (allowed or not), DEL, a
// multi-byte character, U+FFFE and U+FFFF, a bad UTF-8 byte.
func checkCharsSeeds() []string {
	out := []string{"", "<VAST/>", distinctVAST}
	for _, ins := range []string{"\x00", "\x01", "\x1f", "\t", "\n", "\r", " ", "\x7f", "é", "\u20ac", "\ufffe", "\uffff", "\ufffd", "\xef\xbf", "\xff", "\x80", "\xed\xa0\x80"} {
		for n := range 41 {
			base := strings.Repeat("a", n)
			for k := 0; k <= n; k++ {
				out = append(out, base[:k]+ins+base[k:])
			}
		}
	}
	return out
}

func TestCheckChars(t *testing.T) {
	for _, s := range checkCharsSeeds() {
		sameCheckChars(t, s)
	}
}

func FuzzCheckChars(f *testing.F) {
	for _, s := range checkCharsSeeds()[:40] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameCheckChars(t, s) })
}
