package markup

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// verdict names the first finding as the gate orders them.
func verdict(f Finding) string {
	switch {
	case f&Unreadable != 0:
		return "unreadable"
	case f&ForcedRedirect != 0:
		return "forced redirect"
	case f&JavascriptURL != 0:
		return "javascript url"
	case f&DecodeAndRun != 0:
		return "decode-and-run"
	}
	return "pass"
}

func TestJudge(t *testing.T) {
	f := func(r Reading, adm, want string) {
		t.Helper()
		require.Equal(t, want, verdict(Judge([]byte(adm), r, DefaultLimits)), adm)
	}
	h := func(adm, want string) { t.Helper(); f(HTML, adm, want) }

	// Legitimate creatives.
	h(`<a href="javascript:window.open(window.clickTag)"><img src="https://c.example/a.jpg"></a>`, "pass")
	h(`<a href="javascript:void(0)" onclick="window.open(clickTag,'_blank')">x</a>`, "pass")
	h(`<div onclick="top.location.href='%%CLICK_URL_UNESC%%https://brand.example/'">x</div>`, "pass")
	h(`<script>var clickTag="https://c.example/";document.getElementById("ad").addEventListener("click",function(){window.location=clickTag})</script>`, "pass")
	h(`<iframe src="javascript:false"></iframe>`, "pass")
	h(`<script>function go(location){location="x"} class A { location = 1 } (function(){var location="y"})()</script>`, "pass")
	h(`<div data-title="JavaScript: The Definitive Guide">x</div>`, "pass")
	h(`<script>document.write(unescape("%3Cscript%20src%3D%22https%3A//cdn.example/a.js%22%3E%3C/script%3E"))</script>`, "pass")
	h(`<script>function go(){top.location.href=clickTag}</script><a href="javascript:go()">x</a><div onclick="go()">y</div>`, "pass")
	h(`<script>var ref; try { ref = top.location.href } catch (e) {} if (top.location != self.location) {}</script>`, "pass")
	h(`<script>$('#ad').on('click touchend', function(){ top.location = u })</script>`, "pass")
	h(`<script>el.onclick = function(){ parent.location.replace(u) }</script>`, "pass")

	// Forced navigation in every spelling.
	h(`<script>top.location = u</script>`, "forced redirect")
	h(`<script>(top).location=u</script>`, "forced redirect")
	h(`<script>[top.location]=[u]</script>`, "forced redirect")
	h(`<script>top.location&&=u</script>`, "forced redirect")
	h(`<sCript/>top.location=u</script>`, "forced redirect") // the self-closing flag is ignored (FuzzHTML)
	h(`<script>var location=u</script>`, "forced redirect")
	h(`<script>location.replace.call(location,u)</script>`, "forced redirect")
	h(`<script>location.assign.apply(location,[u])</script>`, "forced redirect")
	h(`<script>var w = top; w.location.href = u</script>`, "forced redirect")
	h(`<script>window["loc"+"ation"]="u"</script>`, "forced redirect")
	h(`<script>globalThis.top['location'].href = u</script>`, "forced redirect")
	h(`<script>window.open(u, '_top')</script>`, "forced redirect")
	h(`<script>Reflect.set(top.location, 'href', u)</script>`, "forced redirect")
	h(`<script>Object.assign(top.location, {href: u})</script>`, "forced redirect")
	h(`<script>Object.assign(window, {location: u})</script>`, "forced redirect")
	h(`<meta http-equiv="Refresh" content="0;url=https://x.example/">`, "forced redirect")
	h(`<body onload="top.location=u">`, "forced redirect")
	h(`<img src=x onerror="document.location='https://x.example'">`, "forced redirect")
	h(`<script>window.addEventListener('load', function(){ top.location = u })</script>`, "forced redirect")
	h(`<script>setTimeout(function(){ top.location = u }, 10)</script>`, "forced redirect")
	h(`<script>function go(){top.location=u} go()</script>`, "forced redirect")
	h(`<script>function go(){top.location=u}</script>`, "forced redirect") // callers unknown
	h(`<script>function go(){top.location=u} setTimeout(go, 5)</script><a onclick="go()">x</a>`, "forced redirect")
	h(`<script>a++ /1;top.location=u</script>`, "forced redirect")
	h(`<script>with(top.location){href=u}</script>`, "forced redirect")
	h(`<svg><style><img src=x onerror="top.location=u"></style></svg>`, "forced redirect")
	h(`<svg><title><img src=x onerror="top.location=u"></title></svg>`, "forced redirect")
	h(`<svg><script>top&#46;location&#x3d;u</script></svg>`, "forced redirect")
	h(`<VAST><![CDATA[><img src=x onerror="top.location=u">]]></VAST>`, "forced redirect")
	h(`<iframe srcdoc="&lt;script&gt;top.location=u&lt;/script&gt;"></iframe>`, "forced redirect")
	h(`<script>eval(atob("dG9wLmxvY2F0aW9uPSJ1Ig=="))</script>`, "forced redirect")
	h(`<script>(0,eval)("top.location='u'")</script>`, "forced redirect")
	h(`<script>document.write('<script>top.location="'+u+'"<\/script>')</script>`, "forced redirect")
	h(`<body onload="location.replace&lpar;u&rpar;">`, "forced redirect")

	// javascript: and data: URLs that run without a gesture.
	h(`<iframe src="javascript:top.location='u'"></iframe>`, "javascript url")
	h(`<iframe src="data:text/html,%3Cscript%3Etop.location%3D'u'%3C/script%3E"></iframe>`, "javascript url")
	h(`<object data="data:text/html;base64,PHNjcmlwdD50b3AubG9jYXRpb249J3UnPC9zY3JpcHQ+"></object>`, "javascript url")

	// Decode-and-run of run-time values.
	h(`<script>eval(atob(x))</script>`, "decode-and-run")
	h(`<script>(0,eval)(atob(x))</script>`, "decode-and-run")
	h(`<script>Function(unescape(x))()</script>`, "decode-and-run")
	h("<script>Function`${atob(x)}`</script>", "decode-and-run")
	h(`<script>(function(){}).constructor(atob(x))()</script>`, "decode-and-run")
	h(`<script>document.open().write(atob(x))</script>`, "decode-and-run")
	h(`<script>with(document){write(decodeURIComponent(x))}</script>`, "decode-and-run")
	h(`<script>el.innerHTML = atob(x)</script>`, "decode-and-run")
	h(`<script>el.insertAdjacentHTML('beforeend', String.fromCharCode(a,b))</script>`, "decode-and-run")
	h(`<script>setTimeout(atob(x), 10)</script>`, "decode-and-run")
	h(`<script>var d = atob(x); eval(d)</script>`, "decode-and-run")

	// Unreadable.
	h("<script>x=`$</script>", "unreadable")
	h(`<script>var = ;</script>`, "unreadable")
	h(strings.Repeat(`<iframe srcdoc="`, 1)+strings.Repeat("&lt;iframe srcdoc=&quot;", 0)+`"></iframe>`, "pass")
	f(VAST, `<!DOCTYPE VAST [<!ENTITY x "y">]><VAST version="4.0"></VAST>`, "unreadable")
	f(VAST, `<VAST version="4.0"><Ad>`, "unreadable")
	f(VAST, `<VAST version="4.0"></VAST><script>top.location=u</script>`, "unreadable") // junk after the root
	f(VAST, "<?xml version=\"1.0\"?><!-- c --><VAST version=\"4.0\"></VAST>\n<!-- c -->\n", "pass")
	f(Native, `{"native":{}}<script>top.location=u</script>`, "unreadable")
	f(Native|HTML, `{"native":{}}<script>top.location=u</script>`, "forced redirect")
	f(Native, `{"native": {"link": {"url": "https://x"}`, "unreadable")

	// VAST and native are read as what renders them.
	f(VAST, `<VAST version="3.0"><Ad><InLine><Creatives><Creative><Linear><MediaFiles><MediaFile><![CDATA[<meta http-equiv=refresh>]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`, "pass")
	f(VAST, `<VAST version="3.0"><Ad><InLine><Creatives><Creative><CompanionAds><Companion><HTMLResource><![CDATA[<script>top.location=u</script>]]></HTMLResource></Companion></CompanionAds></Creative></Creatives></InLine></Ad></VAST>`, "forced redirect")
	f(VAST, `<VAST><Ad><InLine><Impression>java<?pi x?>script:top.location='u'</Impression></InLine></Ad></VAST>`, "javascript url")
	f(VAST, `<VAST><Ad><InLine><Impression>java<!-- c -->script&#58;top.location='u'</Impression></InLine></Ad></VAST>`, "javascript url")
	f(VAST, `<VAST><Ad><InLine><Impression>java<x/>script:top.location='u'</Impression></InLine></Ad></VAST>`, "javascript url")
	f(VAST, `<VAST><Ad><InLine><Impression>java<Error>script:top.location='u'</Error></Impression></InLine></Ad></VAST>`, "javascript url")
	f(Native, `{"native":{"jstracker":"<script>top.location='u'</script>"}}`, "forced redirect")
	f(Native, `{"native":{"assets":[{"video":{"vasttag":"<VAST><Ad><InLine><Impression>javascript:top.location='u'</Impression></InLine></Ad></VAST>"}}]}}`, "javascript url")
	f(Native, `{"ad":"<img src=x onerror=\"top.location='u'\">"}`, "pass")
	f(HTML, `{"ad":"<img src=x onerror=top.location='u'>"}`, "forced redirect")
	f(HTML, `{"ad":"<img src=x onerror=\"top.location='u'\">"}`, "unreadable") // the handler is \"...\": a syntax error
}

func TestLimits(t *testing.T) {
	nest := func(n int) string {
		s := `<script>top.location=u</script>`
		for i := 0; i < n; i++ {
			s = `<iframe srcdoc="` + strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s) + `"></iframe>`
		}
		return s
	}
	require.Equal(t, "forced redirect", verdict(Judge([]byte(nest(4)), HTML, DefaultLimits)))
	require.Equal(t, "unreadable", verdict(Judge([]byte(nest(9)), HTML, DefaultLimits)))
	lim := DefaultLimits
	lim.MaxDepth = 3
	require.Equal(t, "unreadable", verdict(Judge([]byte(nest(4)), HTML, lim)))
	evals := `top.location=u`
	for i := 0; i < 10; i++ {
		evals = `eval(` + jsQuote(evals) + `)`
	}
	require.Equal(t, "unreadable", verdict(Judge([]byte("<script>"+evals+"</script>"), HTML, DefaultLimits)))
	lim = DefaultLimits
	lim.MaxDecodedBytes = 100
	require.Equal(t, "unreadable", verdict(Judge([]byte(`<script>document.write("`+strings.Repeat("a", 200)+`")</script>`), HTML, lim)))
	require.Error(t, Limits{}.Validate())
	require.NoError(t, DefaultLimits.Validate())
	// The bounds themselves are valid: one level (the adm alone), 64
	// levels, one byte of decoding, MaxDecodedBytesLimit.
	require.NoError(t, Limits{MaxDepth: 1, MaxDecodedBytes: 1}.Validate())
	require.NoError(t, Limits{MaxDepth: 64, MaxDecodedBytes: MaxDecodedBytesLimit}.Validate())
	require.Error(t, Limits{MaxDepth: 65, MaxDecodedBytes: 1}.Validate())
	require.Error(t, Limits{MaxDepth: 1, MaxDecodedBytes: MaxDecodedBytesLimit + 1}.Validate())
}

func jsQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestInsecure(t *testing.T) {
	f := func(r Reading, adm string, want bool) {
		t.Helper()
		require.Equal(t, want, Insecure([]byte(adm), r, DefaultLimits), adm)
	}
	f(HTML, `<img src="https://x">`, false)
	f(HTML, `<img src="http://x">`, true)
	f(HTML, `<a href="http://x">x</a>`, false)
	f(HTML, `<svg><filter><feImage href="http://x"/></filter></svg>`, true)
	f(HTML, `<svg><image xlink:href="http://x"/></svg>`, true)
	f(HTML, `<div style="background:image-set('http://x' 1x)"></div>`, true)
	f(HTML, `<div style="background:url(\68ttp://x)"></div>`, true)
	f(HTML, `<style>@import "http://x/a.css";</style>`, true)
	f(HTML, `<iframe srcdoc="&lt;img src=http://x&gt;"></iframe>`, true)
	f(HTML, `<script>document.write('<img src="http://x/p">')</script>`, true)
	f(HTML, `<svg><style>.a{background:url(http://x)}</style></svg>`, true)
	f(VAST, `<VAST version="4.1"><Ad><InLine><Creatives><Creative><Linear><MediaFiles><InteractiveCreativeFile>http://x/i.js</InteractiveCreativeFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`, true)
	f(VAST, `<VAST version="4.1"><Ad><InLine><Creatives><Creative><Linear><MediaFiles><ClosedCaptionFiles><ClosedCaptionFile>http://x/c.vtt</ClosedCaptionFile></ClosedCaptionFiles><Mezzanine>https://x/m.mp4</Mezzanine></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`, true)
	f(VAST, `<VAST version="4.1"><Ad><InLine><Creatives><Creative><Linear><Icons><Icon><IconViewTracking>http://x/v</IconViewTracking></Icon></Icons></Linear></Creative></Creatives></InLine></Ad></VAST>`, true)
	f(VAST, `<VAST version="4.1"><Ad><InLine><Creatives><Creative><CompanionAds><Companion><HTMLResource><![CDATA[<img src="http://x">]]></HTMLResource></Companion></CompanionAds></Creative></Creatives></InLine></Ad></VAST>`, true)
	f(VAST, `<VAST><Ad><InLine><Impression>ht<x/>tp://x</Impression></InLine></Ad></VAST>`, true)
	f(VAST, `<VAST version="4.1"><Ad><InLine><Creatives><Creative><Linear><VideoClicks><ClickThrough>http://x</ClickThrough></VideoClicks></Linear></Creative></Creatives></InLine></Ad></VAST>`, false)
	f(Native, `{"native":{"assets":[{"video":{"vasttag":"<VAST><Ad><InLine><Impression>http://x</Impression></InLine></Ad></VAST>"}}]}}`, true)
	f(Native, `{"native":{"link":{"url":"http://x"}}}`, false)
	f(Native, `{"native":{"link":{"url":"https://x","clicktrackers":["http://x"]}}}`, true)
}

// Behaviours pinned on the readers (each test fails when the behaviour is
// broken).
func TestReaderPins(t *testing.T) {
	// CSS escapes read at most 6 hex digits: \0000068 is 'h' (6 digits)
	// then '8'... so the 7th digit is a character of its own.
	require.Equal(t, "h8", cssUnescape(`\0000688`))
	require.Equal(t, "http:", cssUnescape(`\000068 ttp:`))
	// &rpar; is decoded: the handler parses, and navigates.
	require.Equal(t, "forced redirect", verdict(Judge([]byte(`<body onload="location.replace&lpar;u&rpar;">`), HTML, DefaultLimits)))
	// An identifier with non-ASCII letters is one identifier.
	require.Equal(t, "pass", verdict(Judge([]byte(`<script>xlocation = 1; ålocation = u; locationå = u</script>`), HTML, DefaultLimits)))
	// A regex after a division is read as a regex.
	require.Equal(t, "forced redirect", verdict(Judge([]byte(`<script>a++ /1;top.location=u</script>`), HTML, DefaultLimits)))
	require.Equal(t, "pass", verdict(Judge([]byte(`<script>x = a / 2 / /top.location=u/.source.length</script>`), HTML, DefaultLimits)))
	// A template literal whose last byte is $ does not panic.
	require.Equal(t, "unreadable", verdict(Judge([]byte("<script>`$"), HTML, DefaultLimits)))
	require.Equal(t, "unreadable", verdict(Judge([]byte("<a onclick=\"`${\">"), HTML, DefaultLimits)))
}

// TestEveryReading: with no media type, HTML is always one of the readings;
// when the VAST or native reading reads the whole adm, a script that does
// not parse as HTML's is that reading's syntax, not unreadable.
func TestEveryReading(t *testing.T) {
	f := func(adm, want string) {
		t.Helper()
		require.Equal(t, want, verdict(Judge([]byte(adm), Sniff([]byte(adm)), DefaultLimits)), adm)
	}
	f(`{"ad":"<img src=x onerror=top.location='u'>"}`, "forced redirect")
	f(`{"native":{"jstracker":"<script>var a = \"x\";<\/script>"}}`, "pass")
	f(`{"native":{"jstracker":"<script>var a = \"x\";<\/script>"`, "unreadable")
	f(`<VAST version="4.0"><Ad><InLine><AdTitle><![CDATA[<img src=x onerror="top.location='u'">]]></AdTitle></InLine></Ad></VAST>`, "pass")
	f(`<VAST version="4.0"><![CDATA[><img src=x onerror="top.location='u'">]]></VAST>`, "forced redirect")
}

// TestLegitimateCreatives: patterns of ordinary ad tags (loaders, frame
// checks, referrer reads, click handlers, macros) pass.
func TestLegitimateCreatives(t *testing.T) {
	for _, s := range []string{
		`<script>var proto = (document.location.protocol == "https:") ? "https:" : "http:"; document.write('<scr'+'ipt src="'+proto+'//ads.example/t.js?ord='+Math.random()+'"></scr'+'ipt>');</script>`,
		`<script>(function(){ var u = 'https://x.example/?ref=' + encodeURIComponent(window.location.href); var i = new Image(); i.src = u; })();</script>`,
		`<a href="javascript:void(window.open('https://click.example/c'))">x</a>`,
		`<script>var cl = function(){ window.open(window.clickTag || "https://brand.example/", "_blank"); }; document.getElementById("bg").onclick = cl;</script>`,
		`<script>window.onload = function () { document.getElementById("ad").className = "loaded"; };</script>`,
		`<script type="text/javascript">//<![CDATA[
var dv = {tagtype: "video"}; document.write('<script src="https://cdn.doubleverify.com/dvtp_src.js?' + 'ctx=1"><\/script>');
//]]></script>`,
		`<script>function handleClick(){ top.location.href = clickTAG; } </script><div onclick="handleClick()"></div>`,
		`<script>var ad = document.getElementById("ad"); ad.addEventListener("touchend", go); function go(e){ e.preventDefault(); window.top.location = window.clickTag; }</script>`,
		`<script>if (window.location.hash === "#debug") { console.log(1) } var loc = window.location; var q = loc.search;</script>`,
		`<script src="https://securepubads.g.doubleclick.net/tag/js/gpt.js"></script><script>googletag.cmd.push(function(){googletag.display("x")})</script>`,
		`<noscript><a href="https://click.example/c"><img src="https://px.example/i.gif"></a></noscript>`,
		`<script>try { if (window.top !== window.self) { window.parent.postMessage({type: 'resize', h: 250}, '*'); } } catch (e) {}</script>`,
		`<script>var s = document.createElement('script'); s.src = 'https://cdn.example/a.js'; document.head.appendChild(s);</script>`,
		`<script>document.getElementById('x').innerHTML = '<img src="https://px.example/p.gif">';</script>`,
		`<script>var clickTag = "%%CLICK_URL_UNESC%%%%DEST_URL%%"; var w = window; w.clickTag = clickTag;</script>`,
		`<script>var imp = '${AUCTION_PRICE}'; new Image().src = 'https://w.example/?p=' + imp;</script>`,
		`<script>eval("var cfg = " + JSON.stringify({a:1}));</script>`,
		`<script>setTimeout("document.getElementById('a').style.display='none'", 3000);</script>`,
	} {
		if f := Judge([]byte(s), HTML, DefaultLimits); f != 0 {
			t.Errorf("%s: %q", verdict(f), s)
		}
	}
}

// TestEvasiveSpellings: more spellings of a navigation without a gesture
// and of decode-and-run, each rejected.
func TestEvasiveSpellings(t *testing.T) {
	for _, s := range []string{
		`<script>location['href'] = u</script>`,
		`<script>self['location']['assign'](u)</script>`,
		`<script>var l = location; l.replace(u)</script>`,
		`<script>var l = top.location; l.href = u</script>`,
		`<script>window.addEventListener('DOMContentLoaded', () => top.location.replace(u))</script>`,
		`<script>document.addEventListener('visibilitychange', function(){ parent.location = u })</script>`,
		`<script>requestAnimationFrame(function(){ top.location = u })</script>`,
		`<script>Promise.resolve().then(() => { top.location = u })</script>`,
		`<script>var go = function(){ top.location = u }; go();</script>`,
		`<script>var go = () => top.location.assign(u); window.onload = go;</script>`,
		`<body onpageshow="top.location=u">`,
		`<script>top.location.href = u + ''</script>`,
		`<script>window.top.location.href=u</script>`,
		`<script>frames.top.location = u</script>`,
		`<script>globalThis.location.href = u</script>`,
		`<script>eval('top' + '.location=u')</script>`,
		`<script>new Function('top.loc' + 'ation.href = u')()</script>`,
		`<script>setTimeout('top.location = u')</script>`,
		`<script>document.write(String.fromCharCode(60,115,99,114,105,112,116,62) + 'top.location=u' + '<\/script>')</script>`,
		`<script>window["eval"](unescape("%74%6f%70%2e%6c%6f%63%61%74%69%6f%6e%3d%75"))</script>`,
		`<object data="javascript:top.location='u'"></object>`,
		`<embed src="data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' onload='top.location=1'/>">`,
	} {
		if f := Judge([]byte(s), HTML, DefaultLimits); f == 0 {
			t.Errorf("pass: %q", s)
		}
	}
}
