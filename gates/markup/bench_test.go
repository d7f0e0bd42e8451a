package markup

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	tdhtml "github.com/tdewolff/parse/v2/html"

	"github.com/tdewolff/parse/v2"
	"golang.org/x/net/html"
)

// scriptUnit is one block of a script-heavy HTML5 creative: markup, a
// clickTag, a loader, listeners, a timer, an animation loop and
// configuration. %d numbers its names so that repeated blocks differ.
const scriptUnit = `<div id="ad%d" class="frame" style="width:300px;height:250px;background:url(https://cdn.brand.example/bg%d.jpg)">
<img src="https://cdn.brand.example/a%d.jpg" srcset="https://cdn.brand.example/a%d@2x.jpg 2x" alt="Brand %d" width="300" height="250">
<a href="javascript:void(0)" onclick="exit%d(); return false;">Shop now</a></div>
<script>
var clickTag%d = "https://click.dsp.example/c?u=" + encodeURIComponent("https://brand.example/landing?i=%d");
var cfg%d = {frames: [1, 2, 3], duration: 1500, easing: "ease-in-out", labels: {cta: "Shop", legal: "Terms apply"}};
function exit%d() { window.open(clickTag%d, "_blank"); }
function animate%d(el, t) {
  var start = null;
  function step(ts) { if (!start) start = ts; var p = Math.min((ts - start) / cfg%d.duration, 1); el.style.opacity = p; if (p < 1) requestAnimationFrame(step); }
  requestAnimationFrame(step);
}
document.getElementById("ad%d").addEventListener("click", function () { top.location.href = clickTag%d; });
window.addEventListener("load", function () { animate%d(document.getElementById("ad%d"), 0); });
setTimeout(function () { var px = new Image(); px.src = "https://px.dsp.example/v?id=%d&t=" + Date.now(); }, 1000);
for (var i = 0; i < cfg%d.frames.length; i++) { cfg%d.frames[i] = cfg%d.frames[i] * 2; }
</script>
`

// scriptHeavy returns a script-heavy HTML5 creative of about n bytes.
func scriptHeavy(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><style>.frame{position:relative;overflow:hidden}</style></head><body>`)
	for i := 0; b.Len() < n; i++ {
		b.WriteString(strings.ReplaceAll(scriptUnit, "%d", strconv.Itoa(i)))
	}
	b.WriteString(`</body></html>`)
	return b.Bytes()
}

func TestScriptHeavyPasses(t *testing.T) {
	for _, n := range []int{2 << 10, 20 << 10} {
		adm := scriptHeavy(n)
		if f := Judge(adm, HTML, DefaultLimits); f != 0 {
			t.Fatalf("%d bytes: %s", len(adm), verdict(f))
		}
		if Insecure(adm, HTML, DefaultLimits) {
			t.Fatalf("%d bytes: insecure", len(adm))
		}
	}
}

// BenchmarkJudge is markupSafety's reading of a 20 KB script-heavy
// creative, and the sizes around it (ns/op grows with size: linear).
// cpu-ns/op is the process's CPU time per reading, garbage collection
// included (see benchDistinct).
func BenchmarkJudge(b *testing.B) {
	for _, kb := range []int{10, 20, 40, 80} {
		adm := scriptHeavy(kb << 10)
		b.Run(strconv.Itoa(kb)+"KB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(adm)))
			cpu := processCPU()
			for b.Loop() {
				if Judge(adm, HTML, DefaultLimits) != 0 {
					b.Fatal("flagged")
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkJudgeFloor is what bounds BenchmarkJudge/20KB: the script
// parser alone on the creative's scripts and handlers (as readScript gets
// them), the tag scan alone, and x/net/html's tokenizer alone.
func BenchmarkJudgeFloor(b *testing.B) {
	adm := scriptHeavy(20 << 10)
	type script struct {
		src    []byte
		inline bool
	}
	var scripts []script
	a := newAnalysis(DefaultLimits, true, false)
	a.observe = func(src []byte, inline bool) {
		if !inline || !inert(src) {
			scripts = append(scripts, script{bytes.Clone(src), inline})
		}
	}
	a.readHTML(adm, 0)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			for _, s := range scripts {
				if _, err := parseJSOnce(s.src, s.inline); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		var tags []tagSpan
		cpu := processCPU()
		for b.Loop() {
			var ok bool
			if tags, _, ok = scanTags(tags[:0], adm); !ok {
				b.Fatal("declined")
			}
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			t := getTokenizer(adm)
			for t.z.Next() != html.ErrorToken {
			}
			putTokenizer(t)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// BenchmarkInsecure20KB is secureMarkup's reading of the same creative.
func BenchmarkInsecure20KB(b *testing.B) {
	adm := scriptHeavy(20 << 10)
	b.ReportAllocs()
	b.SetBytes(int64(len(adm)))
	cpu := processCPU()
	for b.Loop() {
		if Insecure(adm, HTML, DefaultLimits) {
			b.Fatal("flagged")
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHTMLTokenizers compares the two HTML libraries considered on the
// 20 KB creative: x/net/html's tree builder (the one used: foreign content
// and breakout elements need tree construction), its tokenizer alone, and
// tdewolff/parse/v2/html's lexer (a tokenizer without tree construction).
func BenchmarkHTMLTokenizers(b *testing.B) {
	adm := scriptHeavy(20 << 10)
	b.Run("x-net-html-Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := html.ParseWithOptions(bytes.NewReader(adm), html.ParseOptionEnableScripting(true)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("x-net-html-Tokenizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			z := html.NewTokenizer(bytes.NewReader(adm))
			for z.Next() != html.ErrorToken {
				z.TagName()
				for {
					_, _, more := z.TagAttr()
					if !more {
						break
					}
				}
			}
		}
	})
	b.Run("tdewolff-html-Lexer", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, len(adm), len(adm)+1)
		copy(buf, adm)
		for b.Loop() {
			l := tdhtml.NewLexer(parse.NewInputBytes(buf))
			for {
				tt, _ := l.Next()
				if tt == tdhtml.ErrorToken {
					break
				}
			}
		}
	})
}

// Creatives as the load harness's bidder writes them (loadtest/build.go,
// loadtest/ctv.go): small, and distinct from bid to bid by the ad id they
// carry, so the gates' verdict cache never holds them. idMark is where the
// id goes; each iteration writes a new one in place.
const (
	idMark         = "00000000"
	distinctBanner = `<div class="ad"><a href="https://click.brand-acme.com/c?id=` + idMark + `"><img src="https://cdn.brand-acme.com/creative/300x250.png" width="300" height="250" alt="Brand acme summer sale"></a><img src="https://imp.loadtest-dsp.com/px?id=` + idMark + `" width="1" height="1" style="display:none"></div>`
	distinctVAST   = `<VAST version="4.2"><Ad id="` + idMark + `"><InLine><AdSystem>Loadtest DSP</AdSystem><AdTitle>Brand acme</AdTitle><Impression><![CDATA[https://imp.loadtest-dsp.com/px?id=` + idMark + `]]></Impression><Creatives><Creative><Linear><Duration>00:00:15</Duration><MediaFiles><MediaFile delivery="progressive" type="video/mp4" width="1920" height="1080"><![CDATA[https://cdn.brand-acme.com/v/15s.mp4]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`
	distinctNative = `{"native":{"ver":"1.2","assets":[{"id":1,"title":{"text":"Brand acme: new arrivals"}},{"id":2,"img":{"url":"https://cdn.brand-acme.com/img/1200x627.jpg","w":1200,"h":627}}],"link":{"url":"https://shop.brand-acme.com/?src=` + idMark + `"},"imptrackers":["https://imp.loadtest-dsp.com/px?id=` + idMark + `"]}}`
)

// benchDistinct reads a new creative each iteration (template with its id
// marks renumbered) under reading r, as the gates read a creative the
// cache does not hold; sniff adds markup.Sniff (a bid without mtype).
// cpu-ns/op is the process's CPU time per creative, garbage collection
// included: on a shared machine, the figure to compare.
func benchDistinct(b *testing.B, template string, r Reading, sniff bool) {
	adm := []byte(template)
	var marks []int
	for i := 0; ; {
		j := bytes.Index(adm[i:], []byte(idMark))
		if j < 0 {
			break
		}
		marks = append(marks, i+j)
		i += j + len(idMark)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(adm)))
	n := 0
	cpu := processCPU()
	for b.Loop() {
		n++
		for _, m := range marks {
			for k, v := m+len(idMark)-1, n; k >= m; k, v = k-1, v/10 {
				adm[k] = byte('0' + v%10)
			}
		}
		rr := r
		if sniff {
			rr = Sniff(adm)
		}
		if f, insecure := Read(adm, rr, DefaultLimits); f != 0 || insecure {
			b.Fatalf("%s: flagged (%s, insecure %v)", adm, verdict(f), insecure)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

func BenchmarkReadDistinctBanner(b *testing.B) {
	b.Run("HTML", func(b *testing.B) { benchDistinct(b, distinctBanner, HTML, false) })
	b.Run("Sniffed", func(b *testing.B) { benchDistinct(b, distinctBanner, 0, true) })
	// A character reference in a URL: that tag is read by x/net/html's
	// tokenizer (tagOf).
	amp := strings.Replace(distinctBanner, "?id=", "?cr=7&amp;id=", 1)
	b.Run("Amp", func(b *testing.B) { benchDistinct(b, amp, HTML, false) })
}

func BenchmarkReadDistinctVAST(b *testing.B) {
	b.Run("VAST", func(b *testing.B) { benchDistinct(b, distinctVAST, VAST, false) })
	b.Run("Sniffed", func(b *testing.B) { benchDistinct(b, distinctVAST, 0, true) })
}

func BenchmarkReadDistinctNative(b *testing.B) {
	b.Run("Native", func(b *testing.B) { benchDistinct(b, distinctNative, Native, false) })
	b.Run("Sniffed", func(b *testing.B) { benchDistinct(b, distinctNative, 0, true) })
}
