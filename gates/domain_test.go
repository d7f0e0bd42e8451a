package gates

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalizeDomain(t *testing.T) {
	f := func(in, want string, wantOK bool) {
		t.Helper()
		d, ok := normalizeDomain(in)
		require.Equal(t, want, d, "normalizeDomain(%q)", in)
		require.Equal(t, wantOK, ok, "normalizeDomain(%q) ok", in)
	}
	f("brand.com", "brand.com", true)
	f("  Brand.COM \t", "brand.com", true)
	f("", "", true)
	f("   ", "", true)
	// Unicode to punycode, letter case folded by the IDNA mapping.
	f("bücher.de", "xn--bcher-kva.de", true)
	f("BÜCHER.DE", "xn--bcher-kva.de", true)
	f("xn--bcher-kva.de", "xn--bcher-kva.de", true)
	f("XN--BCHER-KVA.DE", "xn--bcher-kva.de", true)
	f("日本.jp", "xn--wgv71a.jp", true)
	f("бренд.рф", "xn--90agc6an.xn--p1ai", true)
	// Full-width letters and dot, and a soft hyphen, map to the plain name.
	f("ｅｘａｍｐｌｅ．ｃｏｍ", "example.com", true)
	f("exam\u00adple.com", "example.com", true)
	// Not hostnames, but IDNA does not object to ASCII: the hostname rule does.
	f("https://Brand.com/x", "https://brand.com/x", true)
	f("brand.com.", "brand.com.", true)
	f("r3--sn-abc.cdn.net", "r3--sn-abc.cdn.net", true)
	// Bad punycode and disallowed characters next to Unicode fail IDNA.
	f("xn--zz.com", "xn--zz.com", false)
	f("xn--abc.com", "xn--abc.com", false)
	// An invalid "xn--" label is kept as written, never decoded into
	// another name: "xn--" alone is no label, "xn--aa-" is not "aa".
	f("xn--.com", "xn--.com", false)
	f("a.xn--", "a.xn--", false)
	f("XN--AA-.com", "xn--aa-.com", false)
	f("xn--example-.com", "xn--example-.com", false)
	f("xn--bcher-kva-.de", "xn--bcher-kva-.de", false)
	f("a_b.xn--bcher-kva.de", "a_b.xn--bcher-kva.de", false)
	f("xn--bcher-kva.de.", "xn--bcher-kva.de.", true)
	_, ok := normalizeDomain("bü cher.de")
	require.False(t, ok)
	_, ok = normalizeDomain("0\xbc.com")
	require.False(t, ok)
}

func TestIsHostname(t *testing.T) {
	f := func(d string, want bool) {
		t.Helper()
		require.Equal(t, want, isHostname(d), "isHostname(%q)", d)
	}
	f("brand.com", true)
	f("a.b.c.brand.co", true)
	f("brand-one.com", true)
	f("1and1.com", true)
	f("r3--sn-abc.cdn.net", true)
	f("xn--bcher-kva.de", true)
	f("brand.xn--p1ai", true)
	f("", false)
	f("brand", false)
	f("localhost", false)
	f("brand.com.", false)
	f(".brand.com", false)
	f("brand..com", false)
	f("-brand.com", false)
	f("brand-.com", false)
	f("brand.-com", false)
	f("brand.c0m", false)
	f("brand.123", false)
	f("brand.co-", false)
	f("https://brand.com", false)
	f("brand.com:8080", false)
	f("brand.com/path", false)
	f("user@brand.com", false)
	f("brand .com", false)
	f("brand_x.com", false)
	f("BRAND.com", false) // not normalised
	f("brand.com\n", false)

	label63 := strings.Repeat("a", 63)
	f(label63+".com", true)
	f(strings.Repeat("a", 64)+".com", false)
	f("x."+label63, true)

	// 253 characters: 3 labels of 63, one of 57, 3 dots... built exactly.
	name253 := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 57) + ".com"
	name253 = name253[len(name253)-253:]
	name253 = "c" + name253[1:]
	require.Len(t, name253, 253)
	f(name253, true)
	f("d"+name253, false)
}

func TestUnderDomain(t *testing.T) {
	f := func(d, parent string, want bool) {
		t.Helper()
		require.Equal(t, want, underDomain(d, parent), "underDomain(%q, %q)", d, parent)
		require.Equal(t, want, underDomainFold(d, strings.ToUpper(parent)), "underDomainFold(%q, %q)", d, parent)
	}
	f("blocked.com", "blocked.com", true)
	f("ads.blocked.com", "blocked.com", true)
	f("a.b.blocked.com", "blocked.com", true)
	f("notblocked.com", "blocked.com", false)
	f("blocked.com.au", "blocked.com", false)
	f("blocked.co", "blocked.com", false)
	f("com", "blocked.com", false)
	f("blocked.com.", "blocked.com", true)
	f("blocked.com", "blocked.com.", true)
	f("blocked.com", "", false)
	f("blocked.com", ".", false)
	f("", "", false)
	f("x.blocked.com", "com", true)
}

func TestListCovers(t *testing.T) {
	list := []string{"", "  ", " Blocked.COM ", "bücher.de", "XN--90AGC6AN.xn--p1ai"}
	f := func(d string, want bool) {
		t.Helper()
		require.Equal(t, want, listCovers(list, d), "listCovers(%q)", d)
	}
	f("blocked.com", true)
	f("shop.blocked.com", true)
	f("notblocked.com", false)
	f("xn--bcher-kva.de", true)
	f("www.xn--bcher-kva.de", true)
	f("xn--90agc6an.xn--p1ai", true)
	f("other.com", false)
	f("", false)
	require.False(t, listCovers(nil, "blocked.com"))
	require.True(t, hasNonBlank(list))
	require.False(t, hasNonBlank([]string{"", " \t"}))
	require.False(t, hasNonBlank(nil))
}

func TestDomainSet(t *testing.T) {
	s := newDomainSet(defaultPlaceholders, reservedTLDs, []string{"", "extra.io."})
	require.Equal(t, len(defaultPlaceholders)+len(reservedTLDs), s.len()) // "localhost" is in both
	f := func(d, want string) {
		t.Helper()
		got, ok := s.match(d)
		require.Equal(t, want, got, "match(%q)", d)
		require.Equal(t, want != "", ok, "match(%q)", d)
	}
	f("example.com", "example.com")
	f("www.example.com", "example.com")
	f("a.b.example.com", "example.com")
	f("example.com.", "example.com")
	f("notexample.com", "")
	f("example.com.au", "")
	f("localhost", "localhost")
	f("app.localhost", "localhost")
	f("brand.test", "test")
	f("shop.example", "example")
	f("x.invalid", "invalid")
	f("cdn.extra.io", "extra.io")
	f("brand.com", "")
	f("", "")
	f(".", "")
	f("a..b", "")
}

func TestConfigDomain(t *testing.T) {
	f := func(in, want, wantErr string) {
		t.Helper()
		d, err := configDomain(in)
		if wantErr != "" {
			require.EqualError(t, err, wantErr, "configDomain(%q)", in)
			return
		}
		require.NoError(t, err, in)
		require.Equal(t, want, d)
	}
	f(" MyPlaceholder.IO ", "myplaceholder.io", "")
	f("intranet", "intranet", "")
	f("corp.example.", "corp.example", "")
	f("bücher.de", "xn--bcher-kva.de", "")
	f("", "", "is empty")
	f("  ", "", "is empty")
	f("http://x.com", "", "is not a domain name")
	f("a..b", "", "is not a domain name")
	f(".", "", "is not a domain name")
	f("xn--zz.com", "", "is not a domain name")
	f(strings.Repeat("a", 64)+".com", "", "is not a domain name")
}

func FuzzNormalizeDomain(f *testing.F) {
	for _, s := range []string{"brand.com", " Bücher.DE ", "xn--bcher-kva.de", "ｅｘａｍｐｌｅ．ｃｏｍ", "a..b", "https://x.com:80/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := normalizeDomain(s)
		if !ok {
			return
		}
		// Normalisation is idempotent on what it accepts.
		d2, ok2 := normalizeDomain(d)
		require.True(t, ok2, "%q -> %q", s, d)
		require.Equal(t, d, d2, "%q", s)
		// A valid hostname is its own normalised form and covers itself,
		// through every matcher.
		if isHostname(d) {
			require.True(t, underDomain(d, d))
			require.True(t, listCovers([]string{s}, d), "%q -> %q", s, d)
			got, hit := newDomainSet([]string{d}).match("www." + d)
			require.True(t, hit)
			require.Equal(t, d, got)
		}
	})
}
