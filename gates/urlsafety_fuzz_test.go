package gates

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// specialPrefixes are the special-purpose ranges written as CIDR strings, the
// oracle for iprange.go's hand-encoded tables (embedded-IPv4 ranges
// excluded: they are judged by the address they embed).
var specialPrefixes = map[string]urlWhy{
	"0.0.0.0/8": whyReserved, "10.0.0.0/8": whyPrivate, "100.64.0.0/10": whyShared,
	"127.0.0.0/8": whyLoopback, "169.254.0.0/16": whyLinkLocal, "172.16.0.0/12": whyPrivate,
	"192.0.0.0/24": whyReserved, "192.0.2.0/24": whyReserved, "192.88.99.0/24": whyReserved,
	"192.168.0.0/16": whyPrivate, "198.18.0.0/15": whyReserved, "198.51.100.0/24": whyReserved,
	"203.0.113.0/24": whyReserved, "224.0.0.0/4": whyMulticast, "240.0.0.0/4": whyReserved,
	"::/128": whyReserved, "::1/128": whyLoopback, "2001:db8::/32": whyReserved,
	"fc00::/7": whyPrivate, "fe80::/10": whyLinkLocal, "fec0::/10": whyPrivate, "ff00::/8": whyMulticast,
	// Added by bidguard (README): discard-only, benchmarking, documentation.
	"100::/64": whyReserved, "2001:2::/48": whyReserved, "3fff::/20": whyReserved,
}

// oracleWhy classifies a plain address with net/netip and specialPrefixes.
func oracleWhy(a netip.Addr) urlWhy {
	for p, w := range specialPrefixes {
		if netip.MustParsePrefix(p).Contains(a) {
			return w
		}
	}
	return urlSafe
}

func TestRangeTablesMatchTheSpec(t *testing.T) {
	for p, w := range specialPrefixes {
		pre := netip.MustParsePrefix(p)
		first := pre.Masked().Addr()
		last := first
		b := last.AsSlice()
		for i := pre.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		last, _ = netip.AddrFromSlice(b)
		for _, a := range []netip.Addr{first, last} {
			require.Equal(t, urlWhyText[w], urlWhyText[hostWhy(t, a)], "%s in %s", a, p)
		}
		// Just outside the range, unless another range or an embedding range
		// covers it.
		if out := last.Next(); out.IsValid() && oracleWhy(out) == urlSafe && !embeds(out) {
			require.Equal(t, "", urlWhyText[hostWhy(t, out)], "%s after %s", out, p)
		}
	}
}

// embeds reports whether a lies in a range judged by an embedded address.
func embeds(a netip.Addr) bool {
	for _, p := range []string{"::ffff:0:0/96", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32"} {
		if netip.MustParsePrefix(p).Contains(a) {
			return true
		}
	}
	return false
}

// hostWhy judges https://<a>/.
func hostWhy(tb testing.TB, a netip.Addr) urlWhy {
	g := &urlSafety{maxURL: defaultMaxURLBytes}
	if a.Is4() {
		return g.judge("https://" + a.String() + "/")
	}
	return g.judge("https://[" + a.String() + "]/")
}

// FuzzURLHost checks, on any input:
//   - judging https://<input>/ and the input itself never panics;
//   - a dotted quad net/netip accepts parses to the same IPv4 address, and a
//     host of four decimal parts without leading zeros that the WHATWG
//     parser accepts is one net/netip accepts too;
//   - an IPv6 address net/netip accepts (no zone) parses to the same bytes;
//   - a parsed address, IPv4 or IPv6, is classified as the CIDR oracle says
//     (for addresses outside the embedding ranges).
func FuzzURLHost(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f000001", "127.1", "1.2.3.4.", "08.1", "0x", "1..2",
		"[::1]", "[::ffff:127.0.0.1]", "[64:ff9b::10.0.0.1]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
		"[fe80::1%25eth0]", "[1:2:3:4:5:6:7:8]", "[::1.2.3]", "%31%32%37.0.0.1", "ｌｏｃａｌｈｏｓｔ",
		"win.dsp.example:443", "a\\@b", "${AUCTION_AD_ID}", "10.example.com", "[2002:c0a8:0101::1]",
	} {
		f.Add(s)
	}
	g := &urlSafety{maxURL: defaultMaxURLBytes}
	f.Fuzz(func(t *testing.T, s string) {
		g.judge(s)
		g.judge("https://" + s + "/")
		var buf [maxHostBytes]byte
		h, ok := parseHost(s, &buf)

		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			if !ok || h.kind != hostIPv4 || h.ip4 != be32(a.As4()[0], a.As4()[1], a.As4()[2], a.As4()[3]) {
				t.Fatalf("%q: netip reads %s, parseHost %+v %v", s, a, h, ok)
			}
		} else if ok && h.kind == hostIPv4 && plainDottedQuad(s) {
			t.Fatalf("%q: parseHost reads an IPv4 address netip rejects: %v", s, err)
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
			b, ok6 := parseIPv6(s)
			if !ok6 || b != a.As16() {
				t.Fatalf("%q: netip reads %s, parseIPv6 %v %v", s, a, b, ok6)
			}
		}
		if ok && h.kind == hostIPv4 {
			a := netip.AddrFrom4([4]byte{byte(h.ip4 >> 24), byte(h.ip4 >> 16), byte(h.ip4 >> 8), byte(h.ip4)})
			if got, want := addrWhy[classifyIPv4(h.ip4)], oracleWhy(a); got != want {
				t.Fatalf("%q = %s: classified %q, oracle %q", s, a, urlWhyText[got], urlWhyText[want])
			}
		}
		if b, ok6 := parseIPv6(s); ok6 {
			a := netip.AddrFrom16(b)
			if got, want := addrWhy[classifyIPv6(&b)], oracleWhy(a); !embeds(a) && got != want {
				t.Fatalf("%q = %s: classified %q, oracle %q", s, a, urlWhyText[got], urlWhyText[want])
			}
		}
	})
}

// plainDottedQuad reports whether s is four decimal parts without leading
// zeros (the only IPv4 spelling net/netip accepts).
func plainDottedQuad(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 1 && p[0] == '0' {
			return false
		}
		for i := 0; i < len(p); i++ {
			if !isDigit(p[i]) {
				return false
			}
		}
	}
	return true
}

// urlDiffSeeds are URLs and hosts the differential fuzz starts from: every
// branch of the authority and host readings (userinfo before and after a
// '\', ports, percent escapes, upper case, non-ASCII, trailing dots, labels
// and names at their limits, hosts that end in a number, internal names).
var urlDiffSeeds = []string{
	"https://win.dsp-one.com/win?id=b1&p=${AUCTION_PRICE}", "https://bill.dsp-two.com/b?id=b3", "https://WIN.Example.COM./x",
	"HTTPS://a.b.c:443/", "https://a.com:65536/", "https://a.com:/", "https://a.com\\@10.0.0.1/", "https://u@a.com/",
	"https://a.com?x@y", "https://a.com#@", "https:\\\\a.com\\x", "https:a.com", "http://a.com/", "ftp://a.com/",
	"https://localhost/", "https://x.localhost./", "https://svc/", "https://a.b.svc/", "https://127.0.0.1.nip.io/",
	"https://a_b.example.com/", "https://%41.example.com/", "https://%2e.com/", "https://a..com/", "https://.a.com/",
	"https://a.com../", "https://1.2.3.4/", "https://1.2.3.4./", "https://a.0x7f/", "https://a.0x/", "https://a.08/",
	"https://ｌｏｃａｌｈｏｓｔ/", "https://bücher.de/", "https://[::1]/", "https://[fe80::1%25eth0]/", "https://a b.com/",
	"https://" + strings.Repeat("a", 63) + ".com/", "https://" + strings.Repeat("a", 64) + ".com/",
	"https://" + strings.Repeat("abcdefgh.", 28) + "com/", "https://" + strings.Repeat("a.", 126) + "b/",
	"https://corp.exchange.net/", "https://x.corp.exchange.net/", "https://xcorp.exchange.net/", "https://exchange.net/",
	"https://a.b-.c/", "https://-a.com/", "https://a.com$/", "https://${AUCTION_AD_ID}.com/", "https://a.com@/",
}

// FuzzURLSafetyDifferential holds judge equal to the reading before its
// one-pass fast paths (judgeBefore), on the input as a URL and as a host,
// with and without allowHttp and extraInternalNames.
func FuzzURLSafetyDifferential(f *testing.F) {
	for _, s := range urlDiffSeeds {
		f.Add(s)
	}
	gs := []*urlSafety{
		{maxURL: defaultMaxURLBytes, internal: newDomainSet(nil)},
		{allowHTTP: true, maxURL: 64, internal: newDomainSet([]string{"corp.exchange.net", "com"})},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, u := range []string{s, "https://" + s + "/", "https://" + s, "http://" + s + "?q"} {
			for _, g := range gs {
				want := judgeBefore(g, u)
				if got := g.judge(u); got != want {
					t.Fatalf("%q (allowHttp %v): judge %q, before %q", u, g.allowHTTP, urlWhyText[got], urlWhyText[want])
				}
				// A buffer another URL's host left dirty, as CheckBid's.
				for _, fill := range []byte{'.', '7', 0xff} {
					buf := dirtyHostBuf(fill)
					if got := g.judgeIn(u, &buf); got != want {
						t.Fatalf("%q (allowHttp %v) on a buffer of %q: judgeIn %q, before %q", u, g.allowHTTP, fill, urlWhyText[got], urlWhyText[want])
					}
				}
			}
		}
	})
}

func TestURLSafetyAgreesWithBefore(t *testing.T) {
	gs := []*urlSafety{
		{maxURL: defaultMaxURLBytes, internal: newDomainSet(nil)},
		{allowHTTP: true, maxURL: 64, internal: newDomainSet([]string{"corp.exchange.net", "com"})},
	}
	alphabet := "aZ09-_.%2e@\\/:?#[]xé${} \t"
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(u string) {
		for _, g := range gs {
			require.Equal(t, urlWhyText[judgeBefore(g, u)], urlWhyText[g.judge(u)], "%q", u)
			for _, fill := range []byte{'.', '7', 0xff} {
				buf := dirtyHostBuf(fill)
				require.Equal(t, urlWhyText[judgeBefore(g, u)], urlWhyText[g.judgeIn(u, &buf)], "%q on a buffer of %q", u, fill)
			}
		}
	}
	for _, s := range urlDiffSeeds {
		check(s)
	}
	var b strings.Builder
	for range 20000 {
		b.Reset()
		b.WriteString([]string{"https://", "http://", "HTTPS:\\\\", "https:"}[rng.IntN(4)])
		for range rng.IntN(24) {
			b.WriteString(string([]rune(alphabet)[rng.IntN(len([]rune(alphabet)))]))
		}
		check(b.String())
	}
}

// dirtyHostBuf is a host buffer full of fill: judgeIn must read none of
// the bytes it did not write (CheckBid reuses one buffer for four URLs).
func dirtyHostBuf(fill byte) (buf [maxHostBytes]byte) {
	for i := range buf {
		buf[i] = fill
	}
	return buf
}
