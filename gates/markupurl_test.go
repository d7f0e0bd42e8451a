package gates

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeAll reads all of s through the layers in flags.
func decodeAll(s string, flags uint8) string {
	d := decoder{s: []byte(s), flags: flags}
	var b []byte
	for p := 0; p < len(d.s); {
		var c byte
		c, p = d.at(p)
		b = append(b, c)
	}
	return string(b)
}

func TestDecoder(t *testing.T) {
	f := func(s string, flags uint8, want string) {
		t.Helper()
		require.Equal(t, want, decodeAll(s, flags), "%q", s)
	}
	const all = decJSON | decEntity | decPercent
	f(`http://x`, all, `http://x`)
	// JSON escapes.
	f(`http:\/\/x`, decJSON, `http://x`)
	f(`\u0068ttp\u003A//x \"q\" \\ \n\t`, decJSON, "http://x \"q\" \\ \n\t")
	f(`\u00e9\ud83d\ude00.`, decJSON, "\x80\x80.") // outside ASCII: one 0x80 per code point
	f(`\x \u12 \`, decJSON, `\x \u12 \`)
	// Percent-encoding, any case; broken sequences stay.
	f(`http%3A%2f%2Fx %zz %4 %`, decPercent, `http://x %zz %4 %`)
	// Character references: numeric (';' optional, leading zeros), hex, named.
	f(`http&#58;&#x2F;&#X2f;x &#0058 &#104;`, decEntity, `http://x : h`)
	f(`http&colon;&sol;&sol;x&Tab;&NewLine;&amp;&lt&quot;`, decEntity, "http://x\t\n&<\"")
	f(`&unknown; &colon &#; &#x; &#0; &#99999999999; &`, decEntity, "&unknown; &colon &#; &#x; \x80 \x80 &")
	f(`&`+strings.Repeat("a", 40)+`;`, decEntity, `&`+strings.Repeat("a", 40)+`;`)
	// CSS escapes: hex with one trailing space, or the next character.
	f(`h\74 tp\3a//x \:\"`, decCSS, `http://x :"`)
	f(`\000068ttp \0 x\`, decCSS, "http \x80x\\")
	// Layers compose lowest first: a reference yielding '%' feeds the percent layer.
	f(`http&#37;3A//x`, decEntity|decPercent, `http://x`)
	f(`\u0026#58;`, decJSON|decEntity, `:`)
	f(`http\u00253a//x`, all, `http://x`)
	// Without a layer, its escapes stay as written.
	f(`http&#58;%3A\/`, 0, `http&#58;%3A\/`)
}

func TestHasScheme(t *testing.T) {
	f := func(s string, flags uint8, want bool) {
		t.Helper()
		d := decoder{s: []byte(s), flags: flags}
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
	f(`&nbsp;http://x`, decEntity, false)
	f(`h&#x74;tp&colon;//x`, decEntity, true)
	f(`&#32;&#9;http://x`, decEntity, true)
	f(`http%3a//x`, decPercent, true)
	f(`%68ttp://x`, decPercent, true)
	f(`ftp://x`, 0, false)
	f(`javascript:x`, 0, false)
}

func TestSchemeMatchAcrossPieces(t *testing.T) {
	m := schemeMatch{scheme: "http:"}
	d1 := decoder{s: []byte("  ht")}
	require.False(t, m.feedFrom(&d1, 0))
	d2 := decoder{s: []byte("tp%3A//"), flags: decPercent}
	require.True(t, m.feedFrom(&d2, 0))
	require.Equal(t, int8(1), m.state)
}

func TestSrcsetURLs(t *testing.T) {
	f := func(s string, want ...string) {
		t.Helper()
		it := srcsetURLs{d: decoder{s: []byte(s), flags: decEntity}}
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
		it := cssURLs{d: decoder{s: []byte(s), flags: decEntity}}
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

func TestLayersLinear(t *testing.T) {
	// Every unit is re-read at most a bounded number of times.
	for _, s := range []string{
		strings.Repeat("&#", 1<<15),
		"&#" + strings.Repeat("0", 1<<16) + "58;",
		strings.Repeat("&a", 1<<15),
		strings.Repeat("%&#37;", 1<<14),
		strings.Repeat(`\u0025`, 1<<14),
		strings.Repeat(`\0`, 1<<15),
	} {
		out := decodeAll(s, decJSON|decEntity|decCSS|decPercent)
		require.LessOrEqual(t, len(out), len(s))
	}
}
