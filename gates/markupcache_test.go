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

// Creatives in the shapes the load harness's bidder writes
// (loadtest/build.go appendAdm, loadtest/ctv.go appendVAST): small, and
// distinct from bid to bid by the ad id they carry, as real creatives
// carrying per-impression tracking ids are. idMark is where the id goes.
const (
	idMark         = "00000000"
	distinctBanner = `<div class="ad"><a href="https://click.brand-acme.com/c?id=` + idMark + `"><img src="https://cdn.brand-acme.com/creative/300x250.png" width="300" height="250" alt="Brand acme summer sale"></a><img src="https://imp.loadtest-dsp.com/px?id=` + idMark + `" width="1" height="1" style="display:none"></div>`
	distinctVAST   = `<VAST version="4.2"><Ad id="` + idMark + `"><InLine><AdSystem>Loadtest DSP</AdSystem><AdTitle>Brand acme</AdTitle><Impression><![CDATA[https://imp.loadtest-dsp.com/px?id=` + idMark + `]]></Impression><Creatives><Creative><Linear><Duration>00:00:15</Duration><MediaFiles><MediaFile delivery="progressive" type="video/mp4" width="1920" height="1080"><![CDATA[https://cdn.brand-acme.com/v/15s.mp4]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`
	distinctNative = `{"native":{"ver":"1.2","assets":[{"id":1,"title":{"text":"Brand acme: new arrivals"}},{"id":2,"img":{"url":"https://cdn.brand-acme.com/img/1200x627.jpg","w":1200,"h":627}}],"link":{"url":"https://shop.brand-acme.com/?src=` + idMark + `"},"imptrackers":["https://imp.loadtest-dsp.com/px?id=` + idMark + `"]}}`
)

// BenchmarkReadMarkupDistinct is readMarkup as the markup gates call it on
// a creative the verdict cache does not hold (every bid of the load
// harness): digest, miss, read, store. Each iteration renumbers the ids.
func BenchmarkReadMarkupDistinct(b *testing.B) {
	for _, c := range []struct {
		name, template string
		r              markup.Reading
	}{{"Banner", distinctBanner, markup.HTML}, {"VAST", distinctVAST, markup.VAST}, {"Native", distinctNative, markup.Native}} {
		b.Run(c.name, func(b *testing.B) {
			adm := []byte(c.template)
			var marks []int
			for i := 0; ; {
				j := strings.Index(string(adm[i:]), idMark)
				if j < 0 {
					break
				}
				marks = append(marks, i+j)
				i += j + len(idMark)
			}
			// A run of its own: ids no earlier run (-count) has cached.
			n := int(markupCacheRuns.Add(1)) << 24
			b.ReportAllocs()
			b.SetBytes(int64(len(adm)))
			for b.Loop() {
				n++
				for _, m := range marks {
					for k, v := m+len(idMark)-1, n; k >= m; k, v = k-1, v>>4 {
						adm[k] = "0123456789abcdef"[v&15]
					}
				}
				if v := readMarkup(adm, c.r, markup.DefaultLimits); v.finding != 0 || v.insecure {
					b.Fatalf("%s: flagged", adm)
				}
			}
		})
	}
}
