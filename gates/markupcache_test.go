package gates

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/stretchr/testify/require"
)

var markupCacheRuns atomic.Uint64

// get reads adm through mr as readMarkup does, without a bid memo.
func (mr *markupReader) get(adm []byte, r markup.Reading, lim markup.Limits) markupVerdict {
	return mr.read(adm, r, lim, markupCacheVersion(r, lim))
}

// sameVerdict compares what was found, not what the reading cost.
func sameVerdict(t *testing.T, want markup.Finding, wantInsecure bool, got markupVerdict, msg ...any) {
	t.Helper()
	require.Equal(t, want, got.finding, msg...)
	require.Equal(t, wantInsecure, got.insecure, msg...)
}

// A cached verdict is the reading's verdict, whatever was read before: the
// key separates readings and limits, and a hit is counted.
func TestMarkupCacheKeepsReadingsAndLimitsApart(t *testing.T) {
	mr := newMarkupReader(1024)
	// A banner renders this as HTML (an image whose onerror redirects); a
	// player reads it as VAST text.
	adm := []byte(`<VAST version="3.0"><![CDATA[><img src=x onerror="top.location='https://evil.example/'">]]></VAST>`)
	for _, order := range [][]markup.Reading{{markup.HTML, markup.VAST}, {markup.VAST, markup.HTML}} {
		adm := append([]byte(nil), adm...)
		adm = append(adm, byte(order[0])) // a creative of its own per order
		for _, r := range order {
			want, wantInsecure := markup.Read(adm, r, markup.DefaultLimits)
			for range 2 {
				sameVerdict(t, want, wantInsecure, mr.get(adm, r, markup.DefaultLimits), "reading %d", r)
			}
		}
	}
	html, _ := markup.Read(adm, markup.HTML, markup.DefaultLimits)
	require.NotZero(t, html&markup.ForcedRedirect, "the HTML reading sees the redirect")

	// Nested srcdoc three deep: readable at the default depth, not at 2.
	nested := []byte(`<iframe srcdoc="<iframe srcdoc='<iframe srcdoc=&quot;<p>x</p>&quot;></iframe>'></iframe>"></iframe>` + strings.Repeat(" ", 7))
	shallow := markup.Limits{MaxDepth: 2, MaxDecodedBytes: markup.DefaultLimits.MaxDecodedBytes}
	require.Zero(t, mr.get(nested, markup.HTML, markup.DefaultLimits).finding&markup.Unreadable)
	require.NotZero(t, mr.get(nested, markup.HTML, shallow).finding&markup.Unreadable)
	require.Zero(t, mr.get(nested, markup.HTML, markup.DefaultLimits).finding&markup.Unreadable)

	// Unknown media type: sniffed on the miss, the same verdict on the hit.
	before := mr.cache.Stats()
	want, _ := markup.Read(adm, markup.Sniff(adm), markup.DefaultLimits)
	require.NotZero(t, markup.Sniff(adm)&markup.VAST)
	require.Equal(t, want, mr.get(adm, 0, markup.DefaultLimits).finding)
	require.Equal(t, want, mr.get(adm, 0, markup.DefaultLimits).finding)
	after := mr.cache.Stats()
	require.Equal(t, uint64(1), after.Hits-before.Hits)
	require.Equal(t, uint64(1), after.Misses-before.Misses)
}

// renumber writes n in hex over every idMark-long run starting at marks.
func renumber(adm []byte, marks []int, n int) {
	for _, m := range marks {
		for k, v := m+len(idMark)-1, n; k >= m; k, v = k-1, v>>4 {
			adm[k] = "0123456789abcdef"[v&15]
		}
	}
}

// marksOf finds the idMarks of a template.
func marksOf(adm []byte) []int {
	var marks []int
	for i := 0; ; {
		j := strings.Index(string(adm[i:]), idMark)
		if j < 0 {
			return marks
		}
		marks = append(marks, i+j)
		i += j + len(idMark)
	}
}

// The valve turns the cache off while every creative is new, keeps giving
// the reading's verdicts, and turns it back on when creatives come back.
func TestMarkupCacheValve(t *testing.T) {
	mr := newMarkupReader(1 << 14)
	banner := []byte(distinctBanner)
	marks := marksOf(banner)
	insecure := []byte(distinctBanner + `<img src="http://px.example/` + idMark + `">`)
	imarks := marksOf(insecure)
	for i := range 3 * valveWindow {
		renumber(banner, marks, i)
		renumber(insecure, imarks, i)
		for _, adm := range [][]byte{banner, insecure} {
			f, in := markup.Read(adm, markup.HTML, markup.DefaultLimits)
			sameVerdict(t, f, in, mr.get(adm, markup.HTML, markup.DefaultLimits), "%s", adm)
		}
	}
	require.True(t, mr.valve.off.Load(), "new creatives at every bid: the cache does not pay")
	bypassed := mr.valve.bypassed.Load()
	require.Greater(t, bypassed, uint64(valveWindow), "off, most readings skip the cache")
	require.Less(t, bypassed, uint64(2*3*valveWindow), "the sample still goes through it")

	// Then 512 heavy creatives (scripts: a reading of tens of µs) come
	// back again and again: the sample's hits save more than lookups cost.
	heavy := []byte(strings.Repeat(`<script>var a=[1,2,3].map(function(x){return x*2});document.title="`+idMark+`";</script>`, 40))
	hmarks := marksOf(heavy)
	for round := 0; round < 64 && mr.valve.off.Load(); round++ {
		for i := range 512 {
			renumber(heavy, hmarks, 1<<20+i)
			f, in := markup.Read(heavy, markup.HTML, markup.DefaultLimits)
			sameVerdict(t, f, in, mr.get(heavy, markup.HTML, markup.DefaultLimits))
		}
	}
	require.False(t, mr.valve.off.Load(), "creatives that come back: the cache pays again")
	before := mr.cache.Stats()
	mr.get(heavy, markup.HTML, markup.DefaultLimits)
	require.Equal(t, before.Hits+1, mr.cache.Stats().Hits, "on, every reading goes through the cache")
}

// The valve's sample: a creative is always or never in it (the same bytes
// at another address, under another valve state), and the creatives of one
// template, which differ by their ids only (anywhere in the adm, even its
// last bytes), fall in it about one in valveSample.
func TestMarkupValveSample(t *testing.T) {
	va := &newMarkupReader(1 << 10).valve
	const n = 1 << 14
	for _, template := range []string{distinctBanner, distinctVAST, distinctNative, distinctBanner + idMark, idMark + distinctNative} {
		adm := []byte(template)
		marks := marksOf(adm)
		in := 0
		for i := range n {
			renumber(adm, marks, i)
			s := va.sampled(adm)
			require.Equal(t, s, va.sampled(append([]byte(nil), adm...)), "%s", adm)
			require.Equal(t, s, maphash.Comparable(va.seed, string(adm))%valveSample == 0)
			if s {
				in++
			}
		}
		// Binomial(n, 1/16): mean 1024, standard deviation 31.
		require.InDelta(t, n/valveSample, in, 200, "%s", template)
	}
	// The seed is the valve's: another valve samples other creatives.
	other := &newMarkupReader(1 << 10).valve
	adm := []byte(distinctBanner)
	marks := marksOf(adm)
	differ := 0
	for i := range 4096 {
		renumber(adm, marks, i)
		if va.sampled(adm) != other.sampled(adm) {
			differ++
		}
	}
	require.Greater(t, differ, 100)
}

// The second gate to read a bid's adm takes the first's verdict from the
// bid's memo: no digest, no lookup; another reading or another adm's bytes
// is not taken from it.
func TestMarkupMemo(t *testing.T) {
	adm := []byte(distinctBanner + `<img src="http://px.example/">`)
	renumber(adm, marksOf(adm), int(markupCacheRuns.Add(1)))
	looked := func() uint64 {
		st := markupReads.cache.Stats()
		_, bypassed := MarkupCacheValve()
		return st.Hits + st.Misses + bypassed
	}
	var m engine.Memo
	n := looked()
	v := readMarkup(&m, adm, markup.HTML, markup.DefaultLimits)
	require.True(t, v.insecure)
	require.Equal(t, n+1, looked())
	require.Equal(t, v, readMarkup(&m, adm, markup.HTML, markup.DefaultLimits))
	require.Equal(t, n+1, looked(), "the memo answers")

	// Another reading, other limits, other bytes: read (or looked up) anew.
	shallow := markup.Limits{MaxDepth: 1, MaxDecodedBytes: markup.DefaultLimits.MaxDecodedBytes}
	f, in := markup.Read(adm, markup.VAST, markup.DefaultLimits)
	sameVerdict(t, f, in, readMarkup(&m, adm, markup.VAST, markup.DefaultLimits))
	f, in = markup.Read(adm, markup.HTML, shallow)
	sameVerdict(t, f, in, readMarkup(&m, adm, markup.HTML, shallow))
	safe := append([]byte(nil), adm[:len(distinctBanner)]...)
	f, in = markup.Read(safe, markup.HTML, markup.DefaultLimits)
	require.False(t, in)
	sameVerdict(t, f, in, readMarkup(&m, safe, markup.HTML, markup.DefaultLimits))
	require.Equal(t, n+4, looked())
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
// a creative never seen (every bid of the load harness): after the valve's
// first window, read without the cache but for its sample (before it:
// digest, miss, read, store). Each iteration renumbers the ids.
func BenchmarkReadMarkupDistinct(b *testing.B) {
	for _, c := range []struct {
		name, template string
		r              markup.Reading
	}{{"Banner", distinctBanner, markup.HTML}, {"VAST", distinctVAST, markup.VAST}, {"Native", distinctNative, markup.Native}} {
		b.Run(c.name, func(b *testing.B) {
			adm := []byte(c.template)
			marks := marksOf(adm)
			// A run of its own: ids no earlier run (-count) has cached.
			n := int(markupCacheRuns.Add(1)) << 24
			b.ReportAllocs()
			b.SetBytes(int64(len(adm)))
			for b.Loop() {
				n++
				renumber(adm, marks, n)
				var m engine.Memo
				if v := readMarkup(&m, adm, c.r, markup.DefaultLimits); v.finding != 0 || v.insecure {
					b.Fatalf("%s: flagged", adm)
				}
			}
		})
	}
}

// The valve's arithmetic: a reading's cost in costUnit (saturating), a
// lookup's modelled cost, and a window's verdict: on exactly when the hits
// saved at least what the lookups cost.
func TestMarkupValveWeighs(t *testing.T) {
	for d, want := range map[time.Duration]uint16{
		0: 0, 63: 0, 64: 1, 640: 10, 65535 * costUnit: 65535, 65536 * costUnit: 65535, time.Second: 65535,
	} {
		require.Equal(t, want, costOf(d), "%v", d)
	}
	require.Equal(t, 600*time.Nanosecond, lookupCost(0))
	require.Equal(t, 700*time.Nanosecond, lookupCost(400))
	require.Equal(t, 1600*time.Nanosecond, lookupCost(4000))

	var va cacheValve
	window := func(n int, hit bool, cost uint16) bool {
		for range valveWindow {
			va.count(n, hit, cost)
		}
		require.Zero(t, va.lookups.Load(), "the window's last lookup weighs it and starts the next")
		return !va.off.Load()
	}
	require.True(t, window(0, true, 10), "640 ns saved a lookup of 600: on")
	require.False(t, window(256, true, 10), "640 ns saved a lookup of 664: off")
	require.True(t, window(0, true, 10), "and on again")
	require.False(t, window(0, false, 10), "misses save nothing")
	require.True(t, window(4000, true, 25), "1600 ns saved a lookup of 1600 (4,000 bytes): on")
}
