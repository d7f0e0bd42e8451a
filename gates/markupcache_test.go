package gates

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bidguard/bidguard/gates/markup"
	"github.com/stretchr/testify/require"
)

var markupCacheRuns atomic.Uint64

// A cached verdict is the reading's verdict, whatever was read before: the
// key separates readings and limits, and a hit is counted.
func TestMarkupCacheKeepsReadingsAndLimitsApart(t *testing.T) {
	// A banner renders this as HTML (an image whose onerror redirects); a
	// player reads it as VAST text.
	adm := []byte(`<VAST version="3.0"><![CDATA[><img src=x onerror="top.location='https://evil.example/'">]]></VAST>`)
	for _, order := range [][]markup.Reading{{markup.HTML, markup.VAST}, {markup.VAST, markup.HTML}} {
		adm := append([]byte(nil), adm...)
		adm = append(adm, byte(order[0])) // a creative of its own per order
		for _, r := range order {
			want, wantInsecure := markup.Read(adm, r, markup.DefaultLimits)
			for range 2 {
				v := readMarkup(adm, r, markup.DefaultLimits)
				require.Equal(t, want, v.finding, "reading %d", r)
				require.Equal(t, wantInsecure, v.insecure, "reading %d", r)
			}
		}
	}
	html, _ := markup.Read(adm, markup.HTML, markup.DefaultLimits)
	require.NotZero(t, html&markup.ForcedRedirect, "the HTML reading sees the redirect")

	// Nested srcdoc three deep: readable at the default depth, not at 2.
	nested := []byte(`<iframe srcdoc="<iframe srcdoc='<iframe srcdoc=&quot;<p>x</p>&quot;></iframe>'></iframe>"></iframe>` + strings.Repeat(" ", 7))
	shallow := markup.Limits{MaxDepth: 2, MaxDecodedBytes: markup.DefaultLimits.MaxDecodedBytes}
	require.Zero(t, readMarkup(nested, markup.HTML, markup.DefaultLimits).finding&markup.Unreadable)
	require.NotZero(t, readMarkup(nested, markup.HTML, shallow).finding&markup.Unreadable)
	require.Zero(t, readMarkup(nested, markup.HTML, markup.DefaultLimits).finding&markup.Unreadable)

	// Unknown media type: sniffed on the miss, the same verdict on the hit.
	// A creative no run has read: the cache outlives a run (-count).
	adm = append(append([]byte(nil), adm...), "<!-- "+strconv.FormatUint(markupCacheRuns.Add(1), 10)+" -->"...)
	before := MarkupCacheStats()
	want, _ := markup.Read(adm, markup.Sniff(adm), markup.DefaultLimits)
	require.NotZero(t, markup.Sniff(adm)&markup.VAST)
	require.Equal(t, want, readMarkup(adm, 0, markup.DefaultLimits).finding)
	require.Equal(t, want, readMarkup(adm, 0, markup.DefaultLimits).finding)
	after := MarkupCacheStats()
	require.GreaterOrEqual(t, after.Hits-before.Hits, uint64(1))
	require.GreaterOrEqual(t, after.Misses-before.Misses, uint64(1))
}
