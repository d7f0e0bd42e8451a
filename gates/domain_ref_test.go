package gates

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The domain readings as they were before normalizeDomain and isHostname
// read a name in one pass, the gates trimmed with trimSpace and isASCII
// read words: the reference of TestDomainReadingsDifferential and
// FuzzDomainReadingsDifferential. With them, normalizeTrimmed as it was
// before it read four bytes a step through a table
// (bytewiseNormalizeTrimmed).

func refNormalizeDomain(s string) (d string, ok bool) {
	s = strings.TrimSpace(s)
	ascii, lower := true, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	if ascii {
		if !lower {
			s = strings.ToLower(s)
		}
		if !hasPunycodeLabel(s) {
			return s, true
		}
		a, err := domainProfile.ToASCII(s)
		return s, err == nil && a == s
	}
	if !utf8.ValidString(s) {
		return s, false
	}
	d, err := domainProfile.ToASCII(s)
	return d, err == nil
}

func refIsHostname(d string) bool {
	if len(d) == 0 || len(d) > maxHostnameLen {
		return false
	}
	labels, start := 0, 0
	for i := 0; i <= len(d); i++ {
		if i < len(d) {
			if c := d[i]; c != '.' {
				if !isLDH(c) {
					return false
				}
				continue
			}
		}
		if !isLabel(d[start:i]) {
			return false
		}
		labels++
		start = i + 1
	}
	last := d[strings.LastIndexByte(d, '.')+1:]
	return labels >= 2 && (isLetters(last) || strings.HasPrefix(last, "xn--"))
}

// bytewiseNormalizeTrimmed is normalizeTrimmed read byte by byte.
func bytewiseNormalizeTrimmed(s string) (d string, ok bool) {
	ascii, lower, x := true, true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
		if c == 'x' && (i == 0 || s[i-1] == '.') {
			x = true
		}
	}
	if ascii {
		if !lower {
			s = strings.ToLower(s)
			x = true
		}
		if !x || !hasPunycodeLabel(s) {
			return s, true
		}
		a, err := domainProfile.ToASCII(s)
		return s, err == nil && a == s
	}
	if !utf8.ValidString(s) {
		return s, false
	}
	d, err := domainProfile.ToASCII(s)
	return d, err == nil
}

// refMatch is domainSet.match before it skipped the lengths of no member.
func refMatch(s domainSet, d string) (string, bool) {
	d = trimDot(d)
	for d != "" {
		if _, ok := s.m[d]; ok {
			return d, true
		}
		i := strings.IndexByte(d, '.')
		if i < 0 {
			break
		}
		d = d[i+1:]
	}
	return "", false
}

// domainRefSets are the placeholder set and one with members of 63 bytes
// and more (one length bit for them all) and of one byte.
var domainRefSets = []domainSet{
	newDomainSet(defaultPlaceholders, reservedTLDs),
	newDomainSet([]string{strings.Repeat("a", 63), strings.Repeat("b", 62) + ".c", strings.Repeat("c", 70) + ".com", "x", "y.z."}),
}

func checkDomainReadings(t *testing.T, s string) {
	t.Helper()
	if got, want := trimSpace(s), strings.TrimSpace(s); got != want {
		t.Fatalf("trimSpace(%q) = %q, want %q", s, got, want)
	}
	d, ok := normalizeDomain(s)
	wd, wok := refNormalizeDomain(s)
	if d != wd || ok != wok {
		t.Fatalf("normalizeDomain(%q) = %q, %v; want %q, %v", s, d, ok, wd, wok)
	}
	for _, name := range []string{s, trimSpace(s)} {
		d, ok := normalizeTrimmed(name)
		wd, wok := bytewiseNormalizeTrimmed(name)
		if d != wd || ok != wok {
			t.Fatalf("normalizeTrimmed(%q) = %q, %v; want %q, %v", name, d, ok, wd, wok)
		}
	}
	if got, want := isHostname(s), refIsHostname(s); got != want {
		t.Fatalf("isHostname(%q) = %v, want %v", s, got, want)
	}
	if got, want := isHostname(d), refIsHostname(d); got != want {
		t.Fatalf("isHostname(%q) = %v, want %v", d, got, want)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		ascii = ascii && s[i] < 0x80
	}
	if isASCII(s) != ascii {
		t.Fatalf("isASCII(%q) = %v", s, !ascii)
	}
	for _, set := range domainRefSets {
		for _, name := range []string{s, d} {
			m, ok := set.match(name)
			wm, wok := refMatch(set, name)
			if m != wm || ok != wok {
				t.Fatalf("match(%q) = %q, %v; want %q, %v", name, m, ok, wm, wok)
			}
		}
	}
}

// domainSeeds are names of every shape the readings tell apart.
var domainSeeds = []string{
	"", " ", "brand-one.com", " Brand-One.COM ", "\tbrand.com\n", "a.b", "a", "a.", ".a.b", "a..b",
	"-a.com", "a-.com", "a.-b", "a.b-", "xn--bcher-kva.de", "XN--BCHER-KVA.DE", "ads.xn--bcher-kva.de",
	"xn--.de", "xn--aa-.com", "x.xn--zz", "box.com", "a.xbox", "a.Xn--p1ai", "Bücher.de", "bücher.de",
	"\u00a0brand.com\u00a0", "brand.com\u2028", "brand.com\x85", "\xffbrand.com", "brand.com\xff",
	"a_b.com", "a.b.c.d.e.f", "123.com", "a.123", "a.xn--", "a.b\x00", strings.Repeat("a", 63) + ".com",
	strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 126) + "co", strings.Repeat("a.", 127) + "co",
	"\u3002brand\uff0ecom", "ＢＲＡＮＤ.com", "bra\u00adnd.com", "localhost", "example.com.",
	"ads.example.com", "a.b.test", "x", "y.z", "q.y.z.", strings.Repeat("a", 63), "d." + strings.Repeat("a", 63),
	strings.Repeat("b", 62) + ".c", "e." + strings.Repeat("c", 70) + ".com", strings.Repeat("c", 71) + ".com",
	"\x7fbrand.com", "brand.com\x7f", "!brand~", "~", "!",
	"abcdefg.xn--bcher-kva.de", "abcdefgh.xn--zz", "abcdefgx.xn--zz", "abcdefg.Xn--p1ai", "abcdefghijklmno.xn--p1ai",
	"abcdefghijklmnop.xn--", "abcdefgh.ijklmnox", "abcdefg.xn--aa-.com", "abcdefg.xn--", "abcdefghijklmno.xn--.de", "a.cdefghxn--zz.com", "abcdefghijkLmnop.com", "abcdefgh\xc3\xa9.com",
	"a,b.com", "a/b.com", "a:b.com", "a@b.com", "a[b.com", "a`b.com", "a{b.com", "abcdefg,hij.com", "abcdefghij/k.com",
	"abcdefgh:.com", "ABCDEFGHIJ.COM", "abcdefgh.com`", "abcdefgh.co{", "abcdefgH.com", "ab.cd.ef.gh.ij.kl", "abcdefgx.cdefghxn--p1ai",
	"blocked-advertiser.com", "blocked-advertiser.co\x80", "blocked-\xc3\xa9dvertiser.com", "abcdefg\xff", "abcdefgh\xff",
}

// TestDomainReadingsDifferential: trimSpace, normalizeDomain and
// isHostname read every seed, and every name built from a small alphabet,
// as the former readings (strings.TrimSpace, refNormalizeDomain,
// refIsHostname) do.
func TestDomainReadingsDifferential(t *testing.T) {
	for _, s := range domainSeeds {
		checkDomainReadings(t, s)
	}
	alphabet := []string{"a", "x", "X", "n", "-", ".", " ", "1", "é", "xn--", "\t", "Z", "test", "\x7f"}
	var build func(prefix string, depth int)
	build = func(prefix string, depth int) {
		checkDomainReadings(t, prefix)
		if depth == 0 {
			return
		}
		for _, a := range alphabet {
			build(prefix+a, depth-1)
		}
	}
	build("", 4)
}

func FuzzDomainReadingsDifferential(f *testing.F) {
	for _, s := range domainSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkDomainReadings(t, s) })
}
