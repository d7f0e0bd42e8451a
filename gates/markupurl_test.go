package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHasScheme(t *testing.T) {
	f := func(s string, flags uint8, want bool) {
		t.Helper()
		d := escDecoder{s: []byte(s), flags: flags}
		require.Equal(t, want, hasScheme(&d, 0, "http:"), "%q", s)
	}
	f(`http://x`, 0, true)
	f(`HTTP://x`, 0, true)
	f(`hTtP:x`, 0, true)
	f(`http: //x`, 0, true)
	f(" \x01\t\n http://x", 0, true)
	f("ht\ttp\n:\r//x", 0, true)
	f(`https://x`, 0, false)
	f(`//x`, 0, false)
	f(`/a/http://x`, 0, false)
	f(`x.png?u=http://y`, 0, false)
	f(`http`, 0, false)
	f(``, 0, false)
	f("\u00a0http://x", 0, false) // NBSP is not stripped: a relative URL
	f(`&nbsp;http://x`, escEntity, false)
	f(`h&#x74;tp&colon;//x`, escEntity, true)
	f(`&#32;&#9;http://x`, escEntity, true)
	f(`http%3a//x`, escPercent, true)
	f(`%68ttp://x`, escPercent, true)
	f(`ftp://x`, 0, false)
	f(`javascript:x`, 0, false)
}

func TestSchemeMatchAcrossPieces(t *testing.T) {
	m := schemeMatch{scheme: "http:"}
	d1 := escDecoder{s: []byte("  ht")}
	require.False(t, m.feedFrom(&d1, 0))
	d2 := escDecoder{s: []byte("tp%3A//"), flags: escPercent}
	require.True(t, m.feedFrom(&d2, 0))
	require.Equal(t, int8(1), m.state)
}

func TestSrcsetURLs(t *testing.T) {
	f := func(s string, want ...string) {
		t.Helper()
		it := srcsetURLs{d: escDecoder{s: []byte(s), flags: escEntity}}
		var got []string
		for {
			b, e, ok := it.next()
			if !ok {
				break
			}
			got = append(got, s[b:e])
		}
		require.Equal(t, want, got, "%q", s)
	}
	f(`a.png`, "a.png")
	f(`a.png 1x, b.png 2x`, "a.png", "b.png")
	f(" a.png\t1x ,\n b.png 640w,c.png", "a.png", "b.png", "c.png")
	f(`a.png,b.png 2x`, "a.png,b.png") // a comma inside a URL is part of it
	f(`a.png, ,, b.png`, "a.png,", "b.png")
	f(`a.png x(1, 2), b.png`, "a.png", "b.png")
	f(`a&#44;b 1x&#44; c`, "a&#44;b", "c")
	f(``)
	f(` , `)
}

func TestCSSURLs(t *testing.T) {
	f := func(s string, want ...string) {
		t.Helper()
		it := cssURLs{d: escDecoder{s: []byte(s), flags: escEntity}}
		var got []string
		for {
			b, e, ok := it.next()
			if !ok {
				break
			}
			got = append(got, s[b:e])
		}
		require.Equal(t, want, got, "%q", s)
	}
	f(`background:url(a.png)`, "a.png")
	f(`background: URL( "a b.png" ) , url('c.png')`, "a b.png", "c.png")
	f(`@import "a.css"; @import url(b.css); @IMPORT 'c.css' screen;`, "a.css", "b.css", "c.css")
	f(`/* url(no.png) */ content:"url(no.png)"; x:myurl(no.png); y:url(yes.png)`, "yes.png")
	f(`content:"a\"url(no)"; z:url(a\)b) url(c)`, `a\)b`, "c")
	f(`@importx "no"; @import`)
	f(`u\72l(esc.png) \75 rl(esc2.png)`, "esc.png", "esc2.png")
	f(`background:url(&quot;q.png&quot;)`, "q.png")
	f(`/* open comment url(no)`)
	f(`url(`, "")
	f(`a:url("open`, "open")
}
