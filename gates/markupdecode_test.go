package gates

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeAll reads all of s through the layers in flags.
func decodeAll(s string, flags uint8) string {
	d := escDecoder{s: []byte(s), flags: flags}
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
	const all = escJSON | escEntity | escPercent
	f(`http://x`, all, `http://x`)
	// JSON escapes.
	f(`http:\/\/x`, escJSON, `http://x`)
	f(`\u0068ttp\u003A//x \"q\" \\ \n\t`, escJSON, "http://x \"q\" \\ \n\t")
	f(`\u00e9\ud83d\ude00.`, escJSON, "\x80\x80.") // outside ASCII: one 0x80 per code point
	f(`\x \u12 \`, escJSON, `\x \u12 \`)
	// Percent-encoding, any case; broken sequences stay.
	f(`http%3A%2f%2Fx %zz %4 %`, escPercent, `http://x %zz %4 %`)
	// Character references: numeric (';' optional, leading zeros), hex, named.
	f(`http&#58;&#x2F;&#X2f;x &#0058 &#104;`, escEntity, `http://x : h`)
	f(`http&colon;&sol;&sol;x&Tab;&NewLine;&amp;&lt&quot;`, escEntity, "http://x\t\n&<\"")
	f(`&unknown; &colon &#; &#x; &#0; &#99999999999; &`, escEntity, "&unknown; &colon &#; &#x; \x80 \x80 &")
	f(`&`+strings.Repeat("a", 40)+`;`, escEntity, `&`+strings.Repeat("a", 40)+`;`)
	// CSS escapes: hex with one trailing space, or the next character.
	f(`h\74 tp\3a//x \:\"`, escCSS, `http://x :"`)
	f(`\000068ttp \0 x\`, escCSS, "http \x80x\\")
	// Layers compose lowest first: a reference yielding '%' feeds the percent layer.
	f(`http&#37;3A//x`, escEntity|escPercent, `http://x`)
	f(`\u0026#58;`, escJSON|escEntity, `:`)
	f(`http\u00253a//x`, all, `http://x`)
	// Without a layer, its escapes stay as written.
	f(`http&#58;%3A\/`, 0, `http&#58;%3A\/`)
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
		out := decodeAll(s, escJSON|escEntity|escCSS|escPercent)
		require.LessOrEqual(t, len(out), len(s))
	}
}
