package gates

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Realistic creatives with script that must pass markupSafety: an ad-server
// tag that writes its script, a click handler, a frame check and a referrer
// read, a callback that decodes data, JSON-LD.
const (
	adServerTag = `<div id="ad-300x250" style="width:300px;height:250px">
<script type="text/javascript">
  var clickTag = "https://click.dsp.example/c?r=" + encodeURIComponent("https://brand.example/landing");
  var ord = Math.floor(Math.random() * 1e16);
  // The referrer, for brand safety: top.location.href when readable.
  var ref; try { ref = window.top.location.href; } catch (e) { ref = document.referrer; }
  if (window.top.location != window.self.location && top.location.href !== ref) { var framed = true; }
  document.write('<scr' + 'ipt src="https://ads.dsp.example/tag.js?ord=' + ord + '&ref=' + encodeURIComponent(ref) + '"></scr' + 'ipt>');
  var ratio = ord / 2 / 3; var re = /location=([^&]*)/.exec(ref);
  setTimeout(function () { var px = atob("aHR0cHM6Ly9weC5kc3AuZXhhbXBsZS9p"); new Image().src = px; }, 100);
  setTimeout(() => { window.eval; }, 10);
  var cfg = {location: "top", href: 'x'}; cfg.location = "bottom"; var data = atob(cfg.b64 || "");
</script>
<a href="https://click.dsp.example/c" target="_blank" onclick="window.open(clickTag, '_blank'); return false;">
<img src="https://cdn.brand.example/300x250.jpg" width="300" height="250" alt="JavaScript: the definitive guide, 50% off" onload="this.style.opacity = 1"></a>
<script type="application/ld+json">{"@type": "Offer", "location": "https://brand.example/", "eval": "atob(x)"}</script>
<p>Tip: never write top.location = x in an ad.</p>
</div>`

	htmlResourceVAST = `<VAST version="3.0"><Ad id="c"><InLine><AdSystem>DSP</AdSystem><AdTitle>t</AdTitle>
<Impression><![CDATA[https://imp.dsp.example/i]]></Impression><Creatives><Creative><CompanionAds>
<Companion width="300" height="250"><HTMLResource><![CDATA[<div onclick="window.open('https://brand.example/')"><img src="https://cdn.brand.example/c.png"></div><script>var w = 300;</script>]]></HTMLResource>
<CompanionClickThrough>https://brand.example/c</CompanionClickThrough></Companion></CompanionAds></Creative></Creatives></InLine></Ad></VAST>`
)

func TestMarkupSafetyCreatives(t *testing.T) {
	g := mustGate(t, "markupSafety", "").(*markupSafety)
	f := func(name, adm, from, to, want string) {
		t.Helper()
		if from != "" {
			require.Contains(t, adm, from, name)
			adm = strings.Replace(adm, from, to, 1)
		}
		v := g.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(adm)})
		got := ""
		if v.Failed() {
			got = strings.TrimPrefix(v.Reason, "unsafe markup: ")
			require.Equal(t, 200, v.Loss)
			require.Equal(t, 354, v.NBR)
		}
		assert.Equal(t, want, got, "%s", name)
	}
	for name, adm := range map[string]string{
		"banner": bannerHTML, "vast2": vast2, "vast3": vast3Wrapper, "vast4": vast4, "native11": native11,
		"native12": native12, "ad server tag": adServerTag, "vast HTMLResource": htmlResourceVAST,
	} {
		f(name+" as served", adm, "", "", "")
	}
	const script = `var ord = Math.floor(Math.random() * 1e16);`

	// Forced redirects.
	f("top.location =", adServerTag, script, `top.location = "https://scam.example/?r=" + ord;`, "forced redirect")
	f("window.location=", adServerTag, script, `window.location="https://scam.example/"`, "forced redirect")
	f("bare location =", adServerTag, script, `location = 'https://scam.example/'`, "forced redirect")
	f("document.location", adServerTag, script, `document.location = u`, "forced redirect")
	f("parent.location", adServerTag, script, `window.parent.location = u;`, "forced redirect")
	f("location.href", adServerTag, script, `location.href = u;`, "forced redirect")
	f("top.location.href", adServerTag, script, `top.location.href='https://scam.example'`, "forced redirect")
	f("comments and spaces", adServerTag, script, "top /* x */ . location\n\t=\n'https://scam.example'", "forced redirect")
	f("bracket form", adServerTag, script, `top["location"]="https://scam.example/"`, "forced redirect")
	f("bracket form, spaced and concatenated", adServerTag, script, `window [ 'top' ] [ "loc" + 'ation' ] = u`, "forced redirect")
	f("bracket form, escaped", adServerTag, script, `top['\x6coc\u0061tion'].href = u`, "forced redirect")
	f("optional chaining", adServerTag, script, `top?.location?.replace(u)`, "forced redirect")
	f("location.replace(", adServerTag, script, `window.top.location.replace("https://scam.example/")`, "forced redirect")
	f("location.assign(", adServerTag, script, `location.assign(u)`, "forced redirect")
	f("location['replace'](", adServerTag, script, `self.location['replace'](u)`, "forced redirect")
	f("compound assignment", adServerTag, script, `top.location.href += '#x'`, "forced redirect")
	f("after a regex with a quote", adServerTag, script, `var r = /"/; top.location = u; var s = "x"`, "forced redirect")
	f("after a division", adServerTag, script, `var a = 1 / 2; top.location = u; var b = 3 / 4`, "forced redirect")
	f("in a template substitution", adServerTag, script, "var t = `${top.location = u}`", "forced redirect")
	f("event handler", adServerTag, `onload="this.style.opacity = 1"`, `onload="top.location='https://scam.example/'"`, "forced redirect")
	f("event handler with references", adServerTag, `onload="this.style.opacity = 1"`, `ONLOAD="top&#46;location&#x3d;&quot;https://scam.example/&quot;"`, "forced redirect")
	f("meta refresh", adServerTag, `<div id=`, `<meta http-equiv="Refresh" content="0;url=https://scam.example/"><div id=`, "forced redirect")
	f("meta refresh, references", adServerTag, `<div id=`, `<META HTTP-EQUIV=' &#114;efresh '><div id=`, "forced redirect")
	f("srcdoc", adServerTag, `<p>`, `<iframe srcdoc="&lt;script&gt;top.location='https://scam.example/'&lt;/script&gt;"></iframe><p>`, "forced redirect")
	f("VAST HTMLResource", htmlResourceVAST, `var w = 300;`, `top.location = 'https://scam.example/';`, "forced redirect")
	f("VAST HTMLResource, text", htmlResourceVAST, `<![CDATA[<div`, `&lt;script&gt;parent.location.href=u&lt;/script&gt;<![CDATA[<div`, "forced redirect")
	f("native jstracker", native11, `<script src=\"https://trk.dsp.example/nj.js\"></script>`, `<script>top.location=\"https://scam.example/\"<\/script>`, "forced redirect")
	f("script after a VAST document", vast4, `</VAST>`, `</VAST><script>top.location="https://scam.example/"</script>`, "forced redirect")
	// As HTML the script is `top.location=&quot;...`, a syntax error that
	// runs nothing; the VAST reading reads the whole adm, so that is the
	// HTML reading's syntax, not unreadable.
	f("script in VAST, references", vast4, `</VAST>`, `<script>top.location=&quot;https://scam.example/&quot;</script></VAST>`, "")
	f("script in VAST, CDATA", vast4, `</VAST>`, `<script><![CDATA[window.location.replace(u)]]></script></VAST>`, "")
	f("script in VAST, plain", vast4, `</VAST>`, `<script>window.location.replace(u)</script></VAST>`, "forced redirect")
	f("VAST text is not script", vast4, `<AdTitle>iabtechlab video ad</AdTitle>`, `<AdTitle>never write top.location = x</AdTitle>`, "")
	f("markup after a native object", native12+`<script>top.location="https://scam.example/"</script>`, "", "", "forced redirect")
	f("native object never closed", `{"native":{"ver":"1.2","assets":[]}<img src=x onerror="top.location='https://scam.example/'">`, "", "", "unreadable")
	f("XML prolog on a page, '<' in the script", "<?xml version=\"1.0\"?>"+adServerTag, script, `if (a <b) top.location = u`, "forced redirect")
	f("script double-escaped by <!--<script>", adServerTag, script, "<!--<script></script>\ntop.location = u", "forced redirect")
	f("noscript content a browser running script reads as raw text", adServerTag, `<p>`, `<noscript><p title="</noscript><img src=x onerror=top.location=u>"></noscript><p>`, "forced redirect")
	f("NBSP before =", adServerTag, script, "top.location\u00a0= u", "forced redirect")
	f("NBSP before .", adServerTag, script, "top\u00a0.location = u", "forced redirect")
	f("ideographic space", adServerTag, script, "window.location\u3000=\u3000u", "forced redirect")
	f("line separator ends a line comment", adServerTag, script, "// x\u2028top.location = u", "forced redirect")
	f("NBSP reference in a handler", adServerTag, `onload="this.style.opacity = 1"`, `onload="top.location&#xa0;=u"`, "forced redirect")
	f("U+2028 reference in a handler", adServerTag, `onload="this.style.opacity = 1"`, `onload="top&#x2028;.location=u"`, "forced redirect")
	f("template literal in brackets", adServerTag, script, "top[`loc` + 'ation'] = u", "forced redirect")
	f("in a string a timer runs", adServerTag, script, `setTimeout("top.location = 'https://scam.example/'", 10)`, "forced redirect")
	f("in strings eval runs, joined", adServerTag, script, `eval("top.loc" + "ation = u")`, "forced redirect")
	f("in a string Function runs, reached as a constructor", adServerTag, script, `[].constructor.constructor("top.location = u")()`, "forced redirect")
	f("in a string Function runs", adServerTag, script, `new Function("window.location.replace(u)")()`, "forced redirect")
	f("in markup document.write writes", adServerTag, script, `document.write('<scr' + 'ipt>top.location = "https://scam.example/"</scr' + 'ipt>')`, "forced redirect")
	f("meta refresh document.write writes", adServerTag, script, `document.write('<meta http-equiv="refresh" content="0;url=' + u + '">')`, "forced redirect")
	f("redirect wins over javascript url", adServerTag, script, `top.location = u; var x = 1;</script><a href="javascript:x()">x</a><script>`, "forced redirect")
	f("XML prolog on a page", "<?xml version=\"1.0\"?>"+adServerTag, "", "", "")
	f("double-escaped script closed before the text", adServerTag, `<p>`, "<script><!--<script></script>--></script><p>top.location = u</p><p>", "")
	f("non-ASCII names", adServerTag, script, "var tōp = 1; tōp.location = u; top.locatioñ = u", "")
	f("a string a timer passes on", adServerTag, script, `setTimeout(go, 10, "top.location = u")`, "")
	f("text document.write writes", adServerTag, script, `document.write('<p>location = here</p>')`, "")
	f("template literal with a substitution in brackets", adServerTag, script, "top[`${k}`] = u", "")
	f("a \\x escape ending a handler behind a reference", adServerTag, `onload="this.style.opacity = 1"`, `onload="'\x&#52;"`, "unreadable") // \x4 is a syntax error
	// Not redirects.
	f("comparison", adServerTag, script, `if (top.location == u || window.location === u) {}`, "")
	f("read", adServerTag, script, `var h = top.location.href; var l = window.location;`, "")
	f("top-level var location", adServerTag, script, `var location = 1; let href = 2;`, "forced redirect") // the window's location
	f("declarations", adServerTag, script, `function f() { var location = 1; let href = 2; }`, "")
	f("other object", adServerTag, script, `geo.location = "Paris"; a.href = u; frame.location.reload()`, "")
	f("in a string", adServerTag, script, `var s = "top.location = 'x'"; var c = '/* */'`, "")
	f("in a comment", adServerTag, script, "// top.location = u\n /* window.location = u */", "")
	f("in a regex", adServerTag, script, `var r = /top.location = u/g;`, "")
	f("in text", adServerTag, `<p>Tip`, `<p>top.location = "x"; eval(atob(y))</p><p>Tip`, "")
	f("meta other", adServerTag, `<div id=`, `<meta http-equiv="content-type" content="text/html; charset=utf-8"><meta name="refresh"><div id=`, "")

	// javascript: URLs that run without a gesture and navigate.
	const frame = `<iframe src="javascript:top.location=u"></iframe><p>`
	f("iframe", adServerTag, `<p>`, frame, "javascript url")
	f("upper case, spaces", adServerTag, `<p>`, `<iframe src="  JaVaScRiPt:top.location=u"></iframe><p>`, "javascript url")
	f("tab reference", adServerTag, `<p>`, `<iframe src="java&#x09;script:top.location=u"></iframe><p>`, "javascript url")
	f("newline reference", adServerTag, `<p>`, `<iframe src="jav&#10;ascript&colon;top.location=u"></iframe><p>`, "javascript url")
	f("encoded letter", adServerTag, `<p>`, `<iframe src="&#106;avascript:top.location=u"></iframe><p>`, "javascript url")
	f("raw tab", adServerTag, `<p>`, "<iframe src=\"java\tscript:top.location=u\"></iframe><p>", "javascript url")
	f("percent-encoded body", adServerTag, `<p>`, `<iframe src="javascript:top.location%3Du"></iframe><p>`, "javascript url")
	f("iframe src unquoted", adServerTag, `<p>`, `<iframe src=javascript:top.location=u></iframe><p>`, "javascript url")
	f("embed", adServerTag, `<p>`, `<embed src="javascript:eval(atob(name))"><p>`, "javascript url")
	f("written by document.write", adServerTag, script, `document.write('<iframe src="javascript:parent.location=u"></iframe>')`, "javascript url")
	f("VAST MediaFile", vast4, `https://iab-publicfiles.s3.amazonaws.com/vast/VAST-4.0-Short-Intro.mp4`, ` javascript:top.location=u`, "javascript url")
	f("native imptracker", native11, `https://trk.verifier.example/ni`, `javascript:top.location=u`, "javascript url")
	f("javascript url wins over decode-and-run", adServerTag, script, `eval(atob(x))</script>`+frame+`<script>`, "javascript url")
	// javascript: URLs that run on a click, or navigate nothing: they pass.
	f("a href", adServerTag, `href="https://click.dsp.example/c"`, `href="javascript:void(0)"`, "")
	f("a href opening the click tag", adServerTag, `href="https://click.dsp.example/c"`, `href="  JaVaScRiPt:window.open(clickTag)"`, "")
	f("a href navigating on a click", adServerTag, `href="https://click.dsp.example/c"`, `href="java&#x09;script:top.location=clickTag"`, "")
	f("iframe src javascript:false", adServerTag, `<p>`, `<iframe src=javascript:false></iframe><p>`, "")
	f("a data-* attribute is not a URL", adServerTag, `<p>`, `<div data-href="javascript:top.location=u"></div><p>`, "")
	f("svg xlink:href", adServerTag, `<p>`, `<svg><a xlink:href="javascript:top.location=u"><text>x</text></a></svg><p>`, "")
	f("VAST ClickThrough", vast2, `<![CDATA[http://www.brand.example/landing]]>`, `javascript:alert(1)`, "")
	f("native link.url", native11, `http://brand.example/landing`, `javascript:top.location=u`, "")
	// Not javascript: URLs.
	f("percent-encoded colon", adServerTag, `href="https://click.dsp.example/c"`, `href="javascript%3Aalert(1)"`, "")
	f("later in the value", adServerTag, `href="https://click.dsp.example/c"`, `href="https://x.example/?u=javascript:alert(1)"`, "")
	f("text", adServerTag, `<p>Tip`, `<p>javascript:alert(1)</p><p>Tip`, "")

	// Decode-and-run.
	f("eval(atob( of a constant: read as what it runs", adServerTag, script, `eval(atob("dG9wLmxvY2F0aW9uPSJodHRwczovL3NjYW0uZXhhbXBsZSI="))`, "forced redirect")
	f("window['eval']", adServerTag, script, `window['eval'](atob(p))`, "decode-and-run")
	f("e\\u0076al", adServerTag, script, `e\u0076al(atob(p))`, "decode-and-run")
	f("eval.call", adServerTag, script, `eval.call(null, decodeURIComponent(p))`, "decode-and-run")
	f("nested", adServerTag, script, `eval(run(decodeURIComponent(p)))`, "decode-and-run")
	f("new Function", adServerTag, script, `new Function(String.fromCharCode(116, c))()`, "decode-and-run")
	f("String['fromCharCode']", adServerTag, script, `Function(String [ 'fromCharCode' ] (n))()`, "decode-and-run")
	f("setTimeout(decoder", adServerTag, script, `setTimeout(unescape(p), 0)`, "decode-and-run")
	f("setInterval string", adServerTag, script, `setInterval("eval(atob(window.name))", 1000)`, "decode-and-run")
	f("setTimeout string with escapes", adServerTag, script, `setTimeout('ev\x61l(\x61tob(location.hash))')`, "decode-and-run")
	f("document.write(unescape", adServerTag, script, `document.write(unescape(p))`, "decode-and-run")
	f("document.writeln string", adServerTag, script, `document.writeln("<script>eval(atob(window.name))<\/script>")`, "decode-and-run")
	f("template argument", adServerTag, script, "eval(`${atob(p)}`)", "decode-and-run")
	f("unclosed call", adServerTag, script+"\n", "eval(atob(p)\n", "unreadable")
	f("comments between tokens", adServerTag, script, "eval /* a */ ( // b\n atob /**/ (p))", "decode-and-run")
	f("event handler", adServerTag, `onload="this.style.opacity = 1"`, `onload="eval(atob(this.dataset.p))"`, "decode-and-run")
	f("native jstracker", native11, `<script src=\"https://trk.dsp.example/nj.js\"></script>`, `<script>eval(atob(name))<\/script>`, "decode-and-run")
	// Not decode-and-run.
	f("a constant decoded is read as what it is", adServerTag, script, `document.write(unescape('%3Cscript%20src%3D%22https%3A%2F%2Fx%22%3E%3C/script%3E')); setTimeout(unescape("%74%6f%70"), 0)`, "")
	f("constant code a string runs that decodes and drops", adServerTag, script, "eval(\"atob\u00a0(p)\")", "")
	f("NBSP escape in code a string runs", adServerTag, script, `eval("eval\u00a0(atob(p))")`, "decode-and-run")
	f("timer with a function", adServerTag, script, `setTimeout(function () { eval; atob(p); }, 1); setInterval(async () => unescape(p))`, "")
	f("decoder alone", adServerTag, script, `var img = atob(p); var u = decodeURIComponent(q); new Image().src = img`, "")
	f("decoded binding run", adServerTag, script, `var img = atob(p); eval(img)`, "decode-and-run")
	f("write without decoder", adServerTag, script, `document.write('<img src="' + u + '">')`, "")
	f("decoder after the call", adServerTag, script, `eval(x); atob(y)`, "")
	f("decoder in a later timer argument", adServerTag, script, `setTimeout(f, atob(p))`, "")
}

// bidWithAdm is a bid holding adm.
func bidWithAdm(adm string) *openrtb2.Bid { return &openrtb2.Bid{ID: "b", ImpID: "1", AdM: adm} }

func TestMarkupSafetyOrderAndOptions(t *testing.T) {
	g := mustGate(t, "markupSafety", `{maxAdmBytes: 64, extraPatterns: ["coinhive\\.min\\.js", "(?i)crypto-?miner"]}`).(*markupSafety)
	f := func(b *engine.Bid, want string) {
		t.Helper()
		v := g.CheckBid(nil, b)
		if want == "" {
			require.False(t, v.Failed(), v.Reason)
			return
		}
		require.Equal(t, want, v.Reason)
	}
	big := strings.Repeat("x", 65)
	f(&engine.Bid{Bid: bidWithAdm(big), BadUTF8: true}, "unsafe markup: too large")
	f(&engine.Bid{Bid: bidWithAdm(strings.Repeat("x", 64)), BadUTF8: true}, "unsafe markup: invalid utf-8")
	f(&engine.Bid{Bid: bidWithAdm(""), BadUTF8: true}, "unsafe markup: invalid utf-8")
	f(&engine.Bid{Bid: bidWithAdm("<script>location='x'</script>")}, "unsafe markup: forced redirect")
	f(&engine.Bid{Bid: bidWithAdm(`<script src="coinhive.min.js"></script>`)}, "unsafe markup: pattern 0")
	f(&engine.Bid{Bid: bidWithAdm(`<iframe src="javascript:top.location=u"></iframe>CryptoMiner`)}, "unsafe markup: javascript url")
	f(&engine.Bid{Bid: bidWithAdm(`<a href="javascript:x">CryptoMiner</a>`)}, "unsafe markup: pattern 1")
	f(&engine.Bid{Bid: bidWithAdm(`<p>CryptoMiner coinhive.min.js</p>`)}, "unsafe markup: pattern 0")
	f(&engine.Bid{Bid: bidWithAdm(`<p>crypto-miner</p>`)}, "unsafe markup: pattern 1")
	f(&engine.Bid{Bid: bidWithAdm(`<p>coinhive.minXjs</p>`)}, "")
	f(&engine.Bid{Bid: bidWithAdm("")}, "")

	// The default size cap is 1 MiB.
	d := mustGate(t, "markupSafety", "").(*markupSafety)
	require.Equal(t, 1<<20, d.maxAdm)
	require.False(t, d.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(strings.Repeat("a", 1<<20))}).Failed())
	require.Equal(t, "unsafe markup: too large", d.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(strings.Repeat("a", 1<<20+1))}).Reason)

	configError(t, "markupSafety", `{maxAdmBytes: 0}`, "maxAdmBytes must be > 0, got 0")
	configError(t, "markupSafety", `{extraPatterns: ["ok", ""]}`, "extraPatterns[1] is empty")
	configError(t, "markupSafety", `{extraPatterns: ["a(b"]}`, "extraPatterns[0]: error parsing regexp")
	configError(t, "markupSafety", `{maxAdm: 5}`, `unknown option "maxAdm"`)
	configError(t, "markupSafety", `{maxDepth: 0}`, "maxDepth must be in 1..64, got 0")
	configError(t, "markupSafety", `{maxDepth: 65, maxDecodedBytes: -1}`, "maxDecodedBytes must be in 1..1073741824, got -1")

	// The nesting limit is an option: 3 srcdoc levels pass at maxDepth 3
	// (the document itself is level 0), 4 are unreadable.
	nest := func(n int) string {
		s := `<p>x</p>`
		for i := 0; i < n; i++ {
			s = `<iframe srcdoc="` + strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s) + `"></iframe>`
		}
		return s
	}
	shallow := mustGate(t, "markupSafety", `{maxDepth: 3}`).(*markupSafety)
	require.False(t, shallow.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(nest(3))}).Failed())
	require.Equal(t, "unsafe markup: unreadable", shallow.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(nest(4))}).Reason)
	require.False(t, d.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(nest(8))}).Failed())
	require.Equal(t, "unsafe markup: unreadable", d.CheckBid(nil, &engine.Bid{Bid: bidWithAdm(nest(9))}).Reason)
}

func TestMarkupSafetyBadUTF8FromTheDecoder(t *testing.T) {
	g := mustGate(t, "markupSafety", "").(engine.BidGate)
	in, release := secureInput(t, []byte(`{"id":"r","imp":[{"id":"1"}]}`),
		[]byte("{\"id\":\"r\",\"seatbid\":[{\"bid\":[{\"id\":\"a\",\"impid\":\"1\",\"price\":1,\"adm\":\"<p>ok</p>\"},"+
			"{\"id\":\"b\",\"impid\":\"1\",\"price\":1,\"adm\":\"<p>caf\xe9</p>\"}]}]}"))
	defer release()
	require.False(t, g.CheckBid(in, &in.Bids[0]).Failed())
	require.Equal(t, "unsafe markup: invalid utf-8", g.CheckBid(in, &in.Bids[1]).Reason)
}

func TestMarkupSafetyRegistered(t *testing.T) {
	fa, ok := Builtin()["markupSafety"]
	require.True(t, ok)
	require.Equal(t, "rtb.markup-safety", fa.ResultName)
	require.Equal(t, engine.PerBid, fa.Kind)
}

func BenchmarkMarkupSafety(b *testing.B) { benchBidGate(b, mustGate(b, "markupSafety", "")) }

// megabyteCreative is a realistic creative repeated to 1 MiB: HTML, inline
// script, event handlers, a VAST companion.
func megabyteCreative() []byte {
	unit := bannerHTML + adServerTag
	return []byte(strings.Repeat(unit, (1<<20)/len(unit)+1)[:1<<20])
}

// BenchmarkMarkupSafety1MiB scans a 1 MiB creative (bytes/s is the rate).
func BenchmarkMarkupSafety1MiB(b *testing.B) {
	adm := megabyteCreative()
	for _, size := range []int{1 << 16, 1 << 18, 1 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if markup.Judge(adm[:size], markup.HTML, markup.DefaultLimits) != 0 {
					b.Fatal("flagged")
				}
			}
		})
	}
}
