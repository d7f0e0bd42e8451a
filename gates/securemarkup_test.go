package gates

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
	"github.com/stretchr/testify/require"
)

// Realistic creatives in which every loaded resource is https. Each test
// below swaps one URL for an http one and states the verdict.
const (
	bannerHTML = `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:og="http://ogp.me/ns#"><head><meta charset="utf-8">
<link rel="stylesheet" href="https://cdn.brand.example/ad.css">
<style>@import url("https://fonts.brand.example/css?family=Roboto"); .bg{background-image:url(https://cdn.brand.example/bg.jpg)}
/* fallback: url(http://old.brand.example/bg.jpg) */ .t:after{content:"http://brand.example"}</style></head>
<body style="margin:0;background:url('//cdn.brand.example/body.png')">
<a href="http://click.dsp.example/c?r=http%3A%2F%2Fbrand.example" target="_blank" title="http://brand.example">
<picture><source type="image/webp" srcset="https://cdn.brand.example/a.webp 1x, https://cdn.brand.example/a@2x.webp 2x">
<img src="https://cdn.brand.example/a.jpg" alt="Visit http://brand.example today" width="300" height="250"></picture></a>
<p>Offer at http://brand.example &mdash; terms apply.</p>
<video poster="https://cdn.brand.example/poster.jpg" muted autoplay><source src="https://cdn.brand.example/a.mp4" type="video/mp4"></video>
<object data="https://cdn.brand.example/anim.svg" type="image/svg+xml"></object>
<table background="https://cdn.brand.example/tile.png"><tr><td>x</td></tr></table>
<form action="https://survey.brand.example/s" method="post"><input type="image" src="https://cdn.brand.example/go.png"></form>
<!-- <img src="http://commented.example/out.png"> -->
<script src="https://cdn.dsp.example/tag.js" async></script>
<script>var u = "https://legacy.dsp.example/t"; document.write('<img src="' + u + '">');</script>
<noscript><img src="https://px.dsp.example/ns.gif" width="1" height="1"></noscript>
<iframe src="https://sync.dsp.example/frame" width="0" height="0" style="display:none"></iframe>
<img src="/relative/http://x.png"><img src="https://px.dsp.example/i.gif?u=http://brand.example">
</body></html>`

	vast2 = `<?xml version="1.0" encoding="UTF-8"?>
<VAST version="2.0">
 <Ad id="601364">
  <InLine>
   <AdSystem>Acudeo Compatible</AdSystem>
   <AdTitle>VAST 2.0 Instream Test 1</AdTitle>
   <Description><![CDATA[Learn more at http://brand.example]]></Description>
   <Error>https://err.dsp.example/e?code=[ERRORCODE]</Error>
   <Impression><![CDATA[https://imp.dsp.example/i?p=${AUCTION_PRICE}]]></Impression>
   <Impression id="third-party"> <![CDATA[ https://imp.verifier.example/i ]]> </Impression>
   <Creatives>
    <Creative AdID="601364">
     <Linear>
      <Duration>00:00:30</Duration>
      <TrackingEvents>
       <Tracking event="creativeView"><![CDATA[https://trk.dsp.example/cv]]></Tracking>
       <Tracking event="start">https://trk.dsp.example/start?a=1&amp;b=2</Tracking>
       <Tracking event="complete"><![CDATA[https://trk.dsp.example/complete]]></Tracking>
      </TrackingEvents>
      <VideoClicks>
       <ClickThrough><![CDATA[http://www.brand.example/landing]]></ClickThrough>
       <ClickTracking><![CDATA[https://trk.dsp.example/click]]></ClickTracking>
      </VideoClicks>
      <MediaFiles>
       <MediaFile delivery="progressive" type="video/mp4" bitrate="500" width="400" height="300" scalable="true" maintainAspectRatio="true"><![CDATA[https://cdn.dsp.example/v/30s.mp4]]></MediaFile>
      </MediaFiles>
     </Linear>
    </Creative>
    <Creative AdID="601364-Companion">
     <CompanionAds>
      <Companion width="300" height="250">
       <StaticResource creativeType="image/jpeg"><![CDATA[https://cdn.dsp.example/c/300x250.jpg]]></StaticResource>
       <TrackingEvents><Tracking event="creativeView"><![CDATA[https://trk.dsp.example/comp]]></Tracking></TrackingEvents>
       <CompanionClickThrough><![CDATA[http://www.brand.example/companion]]></CompanionClickThrough>
       <CompanionClickTracking><![CDATA[https://trk.dsp.example/cct]]></CompanionClickTracking>
      </Companion>
      <Companion width="728" height="90">
       <IFrameResource><![CDATA[https://cdn.dsp.example/c/728x90.html]]></IFrameResource>
      </Companion>
     </CompanionAds>
    </Creative>
   </Creatives>
  </InLine>
 </Ad>
</VAST>`

	vast3Wrapper = `<VAST version="3.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="vast3.xsd">
<Ad id="w1" sequence="1"><Wrapper><AdSystem version="3.0">DSP</AdSystem>
<VASTAdTagURI><![CDATA[https://ads.dsp.example/vast?id=1&cb=[CACHEBUSTING]]]></VASTAdTagURI>
<Error><![CDATA[https://err.dsp.example/w?c=[ERRORCODE]]]></Error>
<Impression><![CDATA[https://imp.dsp.example/w]]></Impression>
<Creatives><Creative><Linear><Icons><Icon program="AdChoices" width="60" height="20" xPosition="right" yPosition="top">
<StaticResource creativeType="image/png"><![CDATA[https://cdn.dsp.example/adchoices.png]]></StaticResource>
<IconClicks><IconClickThrough><![CDATA[http://optout.dsp.example/]]></IconClickThrough><IconClickTracking><![CDATA[https://trk.dsp.example/ict]]></IconClickTracking></IconClicks></Icon></Icons>
<TrackingEvents><Tracking event="progress" offset="00:00:05.000"><![CDATA[https://trk.dsp.example/p5]]></Tracking></TrackingEvents>
<VideoClicks><ClickTracking id="c1"><![CDATA[https://trk.dsp.example/wc]]></ClickTracking></VideoClicks></Linear></Creative></Creatives>
<Extensions><Extension type="waterfall"><![CDATA[{"fallback":"http://text.dsp.example/"}]]></Extension></Extensions>
</Wrapper></Ad></VAST>`

	vast4 = `<?xml version="1.0" encoding="UTF-8"?>
<VAST version="4.2" xmlns="http://www.iab.com/VAST">
<Ad id="20011" sequence="1" conditionalAd="false"><InLine>
<AdSystem version="4.2">iabtechlab</AdSystem>
<Error><![CDATA[https://example.com/error]]></Error>
<Impression id="Impression-ID"><![CDATA[https://example.com/track/impression]]></Impression>
<Pricing model="cpm" currency="USD"><![CDATA[ 25.00 ]]></Pricing>
<ViewableImpression id="1"><Viewable><![CDATA[https://example.com/viewable]]></Viewable><NotViewable><![CDATA[https://example.com/notviewable]]></NotViewable><ViewUndetermined><![CDATA[https://example.com/undetermined]]></ViewUndetermined></ViewableImpression>
<AdServingId>a532d16d-4d7f-4440-bd29-2ec05553fc80</AdServingId>
<AdTitle>iabtechlab video ad</AdTitle>
<AdVerifications><Verification vendor="company.com-omid"><JavaScriptResource apiFramework="omid" browserOptional="true"><![CDATA[https://verification.example.com/omid.js]]></JavaScriptResource>
<ExecutableResource apiFramework="omid" type="application/javascript"><![CDATA[https://verification.example.com/omid.exe]]></ExecutableResource>
<VerificationParameters><![CDATA[{"k":"http://text.example"}]]></VerificationParameters></Verification></AdVerifications>
<Creatives><Creative id="5480" sequence="1" adId="2447226"><UniversalAdId idRegistry="Ad-ID">8465</UniversalAdId><Linear>
<TrackingEvents>
<Tracking event="start"><![CDATA[https://example.com/tracking/start]]></Tracking>
<Tracking event="firstQuartile"><!-- moved --><![CDATA[https://example.com/tracking/firstQuartile]]></Tracking>
<Tracking event="complete"><![CDATA[https://example.com/tracking/complete]]></Tracking>
</TrackingEvents><Duration>00:00:16</Duration>
<MediaFiles><MediaFile id="5241" delivery="progressive" type="video/mp4" bitrate="2000" width="1280" height="720" codec="H.264"><![CDATA[https://iab-publicfiles.s3.amazonaws.com/vast/VAST-4.0-Short-Intro.mp4]]></MediaFile></MediaFiles>
<VideoClicks><ClickThrough id="blog"><![CDATA[http://iabtechlab.com]]></ClickThrough><ClickTracking><![CDATA[https://example.com/click]]></ClickTracking></VideoClicks>
</Linear></Creative></Creatives></InLine></Ad></VAST>`

	native11 = `{"native":{"ver":"1.1","assets":[{"id":1,"required":1,"title":{"text":"Learn about http://brand.example"}},` +
		`{"id":2,"img":{"url":"https://cdn.brand.example/n/1200x627.jpg","w":1200,"h":627}},{"id":3,"data":{"value":"Brand"}}],` +
		`"link":{"url":"http://brand.example/landing","clicktrackers":["https://trk.dsp.example/nc"]},` +
		`"imptrackers":["https://trk.dsp.example/ni?p=${AUCTION_PRICE}","https://trk.verifier.example/ni"],` +
		`"jstracker":"<script src=\"https://trk.dsp.example/nj.js\"></script><img src=\"https:\/\/trk.dsp.example\/nj.gif\">"}}`

	native12 = `{"ver":"1.2","assets":[{"id":1,"title":{"text":"Title"}},` +
		`{"id":2,"img":{"type":3,"url":"https:\/\/cdn.brand.example\/n\/main.jpg","w":1200,"h":627}},` +
		`{"id":4,"link":{"url":"http://brand.example/a"}}],"link":{"url":"https://brand.example/"},` +
		`"eventtrackers":[{"event":1,"method":1,"url":"https://trk.dsp.example/e1"},{"event":2,"method":2,"url":"https://trk.dsp.example/omid.js"}],` +
		`"privacy":"http://brand.example/privacy"}`
)

func TestSecureMarkupCreatives(t *testing.T) {
	f := func(name, adm, from, to string, want bool) {
		t.Helper()
		if from != "" {
			require.Contains(t, adm, from, name)
			adm = strings.Replace(adm, from, to, 1)
		}
		require.Equal(t, want, insecureAdm([]byte(adm)), "%s:\n%s", name, adm)
	}
	for name, adm := range map[string]string{"banner": bannerHTML, "vast2": vast2, "vast3": vast3Wrapper, "vast4": vast4, "native11": native11, "native12": native12} {
		f(name+" as served", adm, "", "", false)
	}

	// HTML: every loading attribute, CSS, and the escapes a URL may hide behind.
	f("link href", bannerHTML, `href="https://cdn.brand.example/ad.css"`, `href="http://cdn.brand.example/ad.css"`, true)
	f("@import url()", bannerHTML, `url("https://fonts`, `url("http://fonts`, true)
	f("@import string", bannerHTML, `@import url("https://fonts.brand.example/css?family=Roboto")`, `@import 'http://fonts.brand.example/css'`, true)
	f("style sheet url()", bannerHTML, `url(https://cdn.brand.example/bg.jpg)`, `url( http://cdn.brand.example/bg.jpg )`, true)
	f("style attribute url()", bannerHTML, `url('//cdn`, `url('http://cdn`, true)
	f("style attribute, entities", bannerHTML, `url('//cdn`, `url(&quot;http&#58;//cdn`, true)
	f("srcset first candidate", bannerHTML, `srcset="https://cdn.brand.example/a.webp`, `srcset="http://cdn.brand.example/a.webp`, true)
	f("srcset second candidate", bannerHTML, `https://cdn.brand.example/a@2x.webp`, `http://cdn.brand.example/a@2x.webp`, true)
	f("img src", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http://cdn.brand.example/a.jpg"`, true)
	f("img src, upper case", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `SRC='HTTP://cdn.brand.example/a.jpg'`, true)
	f("img src, unquoted", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src=http://cdn.brand.example/a.jpg`, true)
	f("img src, &#58;", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http&#58;//cdn.brand.example/a.jpg"`, true)
	f("img src, &#x3a;", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http&#x3a;//cdn.brand.example/a.jpg"`, true)
	f("img src, &colon;&sol;", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http&colon;&sol;&sol;cdn.brand.example/a.jpg"`, true)
	f("img src, %3A%2F%2F", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http%3a%2F%2Fcdn.brand.example/a.jpg"`, true)
	f("img src, tab inside", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src=" ht&#x09;tp://cdn.brand.example/a.jpg"`, true)
	f("img src, no slashes", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="http:cdn.brand.example/a.jpg"`, true)
	f("video poster", bannerHTML, `poster="https://`, `poster="http://`, true)
	f("source src", bannerHTML, `src="https://cdn.brand.example/a.mp4"`, `src="http://cdn.brand.example/a.mp4"`, true)
	f("object data", bannerHTML, `data="https://`, `data="http://`, true)
	f("table background", bannerHTML, `background="https://`, `background="http://`, true)
	f("form action", bannerHTML, `action="https://`, `action="http://`, true)
	f("input src", bannerHTML, `src="https://cdn.brand.example/go.png"`, `src="http://cdn.brand.example/go.png"`, true)
	f("script src", bannerHTML, `src="https://cdn.dsp.example/tag.js"`, `src="http://cdn.dsp.example/tag.js"`, true)
	f("noscript img", bannerHTML, `src="https://px.dsp.example/ns.gif"`, `src="http://px.dsp.example/ns.gif"`, true)
	f("iframe src", bannerHTML, `src="https://sync.dsp.example/frame"`, `src="http://sync.dsp.example/frame"`, true)
	f("base href", bannerHTML, `<head>`, `<head><base href="http://cdn.brand.example/">`, true)
	f("svg image href", bannerHTML, `<p>`, `<svg width="1" height="1"><image href="http://cdn.brand.example/a.svg"/></svg><p>`, true)
	f("svg image xlink:href", bannerHTML, `<p>`, `<svg><image xlink:href='http&#58;//cdn.brand.example/a.png' width="1"/></svg><p>`, true)
	f("svg use href", bannerHTML, `<p>`, `<svg><use href="HTTP://cdn.brand.example/sprite.svg#logo"></use></svg><p>`, true)
	f("svg use xlink:href", bannerHTML, `<p>`, `<svg><use xlink:href="http://cdn.brand.example/sprite.svg#logo"/></svg><p>`, true)
	f("tag cut off at the end", bannerHTML, `</body></html>`, `<img src="http://px.dsp.example/cut.gif`, true)
	// Never flagged.
	f("svg a xlink:href", bannerHTML, `<p>`, `<svg><a xlink:href="http://brand.example/"><text>x</text></a></svg><p>`, false)
	f("svg image, other attribute", bannerHTML, `<p>`, `<svg><image title="http://x.example/a.png" href="https://cdn.brand.example/a.png"/></svg><p>`, false)
	f("a href", bannerHTML, `href="http://click`, `href="HTTP://click`, false)
	f("area href", bannerHTML, `<p>`, `<map><area href="http://brand.example/x" shape="rect" coords="0,0,1,1"></map><p>`, false)
	f("data-src and longdesc", bannerHTML, `<p>`, `<img data-src="http://x.example/a.png" longdesc="http://x.example/d"><p>`, false)
	f("protocol-relative", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="//cdn.brand.example/a.jpg"`, false)
	f("NBSP before the scheme", bannerHTML, `src="https://cdn.brand.example/a.jpg"`, `src="&nbsp;http://cdn.brand.example/a.jpg"`, false)
	f("textarea text", bannerHTML, `<p>`, `<textarea><img src="http://x.example/a.png"></textarea><p>`, false)
	f("malformed tag is text", bannerHTML, `<p>`, `< img src="http://x.example/a.png"><p>`, false)
	f("link in plain text only", `<div>Go to http://brand.example or HTTP://x.example</div>`, "", "", false)

	// VAST 2: every URL element; ClickThrough, Description and entities in text.
	f("vast2 Error, text", vast2, `<Error>https://`, `<Error>http://`, true)
	f("vast2 Impression", vast2, `<![CDATA[https://imp.dsp.example`, `<![CDATA[http://imp.dsp.example`, true)
	f("vast2 Impression, spaces around CDATA", vast2, ` https://imp.verifier`, ` http://imp.verifier`, true)
	f("vast2 Tracking, text with entities", vast2, `<Tracking event="start">https://`, `<Tracking event="start">http&#x3A;//`, true)
	f("vast2 Impression, reference in CDATA", vast2, `<![CDATA[https://imp.dsp.example`, `<![CDATA[http&#58;//imp.dsp.example`, true)
	f("vast2 Tracking, CDATA", vast2, `https://trk.dsp.example/complete`, `http://trk.dsp.example/complete`, true)
	f("vast2 ClickTracking", vast2, `https://trk.dsp.example/click`, `http://trk.dsp.example/click`, true)
	f("vast2 MediaFile", vast2, `https://cdn.dsp.example/v/30s.mp4`, `Http://cdn.dsp.example/v/30s.mp4`, true)
	f("vast2 StaticResource", vast2, `https://cdn.dsp.example/c/300x250.jpg`, `http://cdn.dsp.example/c/300x250.jpg`, true)
	f("vast2 IFrameResource", vast2, `https://cdn.dsp.example/c/728x90.html`, `http%3A//cdn.dsp.example/c/728x90.html`, true)
	f("vast2 CompanionClickTracking", vast2, `https://trk.dsp.example/cct`, `http://trk.dsp.example/cct`, true)
	f("vast2 ClickThrough", vast2, `http://www.brand.example/landing`, `HTTP://www.brand.example/landing`, false)
	f("vast2 Description", vast2, `Learn more at http`, `http`, false)
	// VAST 3: the wrapper's tag URI, icons; xmlns and extensions are not loaded.
	f("vast3 VASTAdTagURI", vast3Wrapper, `https://ads.dsp.example/vast`, `http://ads.dsp.example/vast`, true)
	f("vast3 Error", vast3Wrapper, `https://err.dsp.example/w`, `http://err.dsp.example/w`, true)
	f("vast3 icon StaticResource", vast3Wrapper, `https://cdn.dsp.example/adchoices.png`, `http://cdn.dsp.example/adchoices.png`, true)
	f("vast3 Tracking", vast3Wrapper, `https://trk.dsp.example/p5`, `http://trk.dsp.example/p5`, true)
	f("vast3 ClickTracking", vast3Wrapper, `https://trk.dsp.example/wc`, `http://trk.dsp.example/wc`, true)
	f("vast3 IconClickTracking", vast3Wrapper, `https://trk.dsp.example/ict`, `http://trk.dsp.example/ict`, true)
	f("vast3 IconClickThrough", vast3Wrapper, `http://optout.dsp.example/`, `http://optout.dsp.example/x`, false)
	f("vast3 split CDATA", vast3Wrapper, `<![CDATA[https://imp.dsp.example/w]]>`, `http<!-- x --><![CDATA[://imp.dsp.example/w]]>`, true)
	// VAST 4.
	f("vast4 Impression", vast4, `https://example.com/track/impression`, `http://example.com/track/impression`, true)
	f("vast4 Tracking after a comment", vast4, `https://example.com/tracking/firstQuartile`, `http://example.com/tracking/firstQuartile`, true)
	f("vast4 MediaFile", vast4, `https://iab-publicfiles`, `http://iab-publicfiles`, true)
	f("vast4 Error", vast4, `https://example.com/error`, `http://example.com/error`, true)
	f("vast4 JavaScriptResource", vast4, `https://verification.example.com/omid.js`, `http://verification.example.com/omid.js`, true)
	f("vast4 ExecutableResource", vast4, `https://verification.example.com/omid.exe`, `http://verification.example.com/omid.exe`, true)
	f("vast4 Viewable", vast4, `https://example.com/viewable`, `http://example.com/viewable`, true)
	f("vast4 NotViewable", vast4, `https://example.com/notviewable`, `http://example.com/notviewable`, true)
	f("vast4 ViewUndetermined", vast4, `https://example.com/undetermined`, `http://example.com/undetermined`, true)
	f("vast4 VerificationParameters", vast4, `http://text.example`, `http://text.example/x`, false)
	f("vast4 ClickThrough", vast4, `http://iabtechlab.com`, `http://iabtechlab.com/x`, false)
	f("vast4 self-closing Impression", vast4, `<AdTitle>`, `<Impression id="x"/>http://text<AdTitle>`, false)
	f("vast4 malformed MediaFile tag", vast4, `<MediaFile id="5241"`, `< MediaFile id="5241"`, false)

	// Native: img.url, imptrackers, jstracker (as HTML), eventtrackers[].url.
	f("native11 img.url", native11, `https://cdn.brand.example/n/1200x627.jpg`, `http\u003a//cdn.brand.example/n/1200x627.jpg`, true)
	f("native11 imptrackers", native11, `https://trk.verifier.example/ni`, `http://trk.verifier.example/ni`, true)
	f("native11 jstracker script", native11, `https://trk.dsp.example/nj.js`, `http://trk.dsp.example/nj.js`, true)
	f("native11 jstracker img, JSON-escaped", native11, `https:\/\/trk.dsp.example\/nj.gif`, `http:\/\/trk.dsp.example\/nj.gif`, true)
	f("native11 link.clicktrackers", native11, `https://trk.dsp.example/nc`, `http://trk.dsp.example/nc`, true)
	f("native11 link.url", native11, `http://brand.example/landing`, `http://brand.example/other`, false)
	f("native11 title text", native11, `Learn about http`, `http`, false)
	f("XML prolog on a page", "<?xml version=\"1.0\"?>"+bannerHTML, "", "", false)
	f("XML prolog on a page, src in what XML reads as CDATA", "<?xml version=\"1.0\"?><![CDATA[ x]> <img src=\"http://px.dsp.example/p.gif\"> ]]><p>x</p>", "", "", true)
	f("XML prolog on a page, src in what XML reads as a PI", "<?xml version=\"1.0\"?><?x a=\"b>\" <img src=\"http://px.dsp.example/p.gif\"> ?><p>x</p>", "", "", true)
	// Without a media type, VAST is read as XML and as HTML (a browser given
	// it ends the "CDATA" bogus comment at the first '>').
	f("VAST of no known media type is read as HTML too", vast4, `</VAST>`, `<![CDATA[ x]> <img src="http://px.dsp.example/p.gif"> ]]></VAST>`, true)
	f("script-written markup of constant value", bannerHTML, `var u = "https://legacy`, `var u = "http://legacy`, true)
	f("noscript content a browser running script reads as raw text", bannerHTML, `</body>`, `<noscript><p title="</noscript><img src=http://px.dsp.example/p.gif>"></noscript></body>`, true)
	f("markup after a native object", native12+`<img src="http://px.dsp.example/p.gif">`, "", "", true)
	f("spaces after a native object", native12+" \n", "", "", false)
	f("native12 img.url, JSON-escaped", native12, `https:\/\/cdn.brand.example\/n\/main.jpg`, `http:\/\/cdn.brand.example\/n\/main.jpg`, true)
	f("native12 eventtrackers img", native12, `https://trk.dsp.example/e1`, `http://trk.dsp.example/e1`, true)
	f("native12 eventtrackers js", native12, `https://trk.dsp.example/omid.js`, `http%3A%2F%2Ftrk.dsp.example/omid.js`, true)
	f("native12 asset link.url", native12, `http://brand.example/a`, `http://brand.example/b`, false)
	f("native12 privacy", native12, `http://brand.example/privacy`, `http://brand.example/p`, false)
	f("native with leading space", " \n"+native12, `https://trk.dsp.example/e1`, `http://trk.dsp.example/e1`, true)
}

// secureInput decodes a pair into a pooled Eval; release returns it.
func secureInput(tb testing.TB, req, resp []byte) (*engine.Input, func()) {
	tb.Helper()
	ev := engine.AcquireEval()
	require.NoError(tb, ev.DecodeRequest(req))
	require.NoError(tb, ev.DecodeResponse(resp, 1000))
	return &ev.In, func() { engine.ReleaseEval(ev) }
}

func TestSecureMarkupCheckBid(t *testing.T) {
	g, err := secureMarkupFactory.New(nil, engine.Env{})
	require.NoError(t, err)
	gate := g.(*secureMarkup)
	req := `{"id":"r","imp":[{"id":"s","banner":{"w":1,"h":1},"secure":1},{"id":"n","banner":{"w":1,"h":1},"secure":0},{"id":"u","banner":{"w":1,"h":1}}]}`
	f := func(bid, reason string) {
		t.Helper()
		in, release := secureInput(t, []byte(req), []byte(`{"id":"r","seatbid":[{"bid":[`+bid+`]}]}`))
		defer release()
		require.Empty(t, gate.Prepare(in))
		v := gate.CheckBid(in, &in.Bids[0])
		if reason == "" {
			require.False(t, v.Failed(), bid)
			return
		}
		require.True(t, v.Failed(), bid)
		require.Equal(t, reason, v.Reason)
		require.Equal(t, 207, v.Loss)
		require.Equal(t, 352, v.NBR)
	}
	f(`{"id":"b","impid":"s","price":1,"nurl":"http://w","burl":"http://b","adm":"<img src=http://a>"}`, "insecure url in secure impression: nurl")
	f(`{"id":"b","impid":"s","price":1,"nurl":"https://w","burl":"http://b","lurl":"http://l"}`, "insecure url in secure impression: burl")
	f(`{"id":"b","impid":"s","price":1,"lurl":"HTTP://l","iurl":"http://i"}`, "insecure url in secure impression: lurl")
	f(`{"id":"b","impid":"s","price":1,"iurl":"http&#58;//i"}`, "insecure url in secure impression: iurl")
	f(`{"id":"b","impid":"s","price":1,"iurl":"https://i","adm":"<img src=http://a>"}`, "insecure url in secure impression: adm")
	f(`{"id":"b","impid":"s","price":1,"nurl":"http%3A%2F%2Fw"}`, "insecure url in secure impression: nurl")
	f(`{"id":"b","impid":"s","price":1,"nurl":"http: //w"}`, "insecure url in secure impression: nurl")
	f(`{"id":"b","impid":"s","price":1,"nurl":"https://w?r=http://x","adm":"<a href=http://c>x</a>"}`, "")
	// Not a secure imp: secure 0, absent, or no such imp.
	f(`{"id":"b","impid":"n","price":1,"nurl":"http://w","adm":"<img src=http://a>"}`, "")
	f(`{"id":"b","impid":"u","price":1,"nurl":"http://w"}`, "")
	f(`{"id":"b","impid":"x","price":1,"nurl":"http://w"}`, "")
}

func TestSecureMarkupPrepare(t *testing.T) {
	gate := &secureMarkup{}
	f := func(req, want string) {
		t.Helper()
		in, release := secureInput(t, []byte(req), []byte(`{"id":"r","seatbid":[{"bid":[{"id":"b","impid":"1","price":1}]}]}`))
		defer release()
		require.Equal(t, want, gate.Prepare(in))
	}
	f(`{"id":"r","imp":[{"id":"1","secure":1}]}`, "")
	f(`{"id":"r","imp":[{"id":"1","secure":0},{"id":"2","secure":1}]}`, "")
	f(`{"id":"r","imp":[{"id":"1","secure":0},{"id":"2"}]}`, "no secure imp in request")
	f(`{"id":"r","imp":[]}`, "no secure imp in request")
}

func TestSecureMarkupRegistered(t *testing.T) {
	fa, ok := Builtin()["secureMarkup"]
	require.True(t, ok)
	require.Equal(t, "rtb.secure-markup", fa.ResultName)
	require.Equal(t, engine.PerBid, fa.Kind)
	require.Nil(t, fa.Options)
}

func BenchmarkSecureMarkup(b *testing.B) {
	req, err := os.ReadFile(filepath.Join("testdata", "typical-request.json"))
	require.NoError(b, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "typical-response.json"))
	require.NoError(b, err)
	in, release := secureInput(b, req, resp)
	defer release()
	g := &secureMarkup{}
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				b.Fatal("rejected")
			}
		}
	}
}

// BenchmarkSecureMarkupCreatives scans each realistic creative (bytes/s is
// the scanning rate).
func BenchmarkSecureMarkupCreatives(b *testing.B) {
	for _, c := range []struct{ name, adm string }{
		{"banner", bannerHTML}, {"vast2", vast2}, {"vast4", vast4}, {"native11", native11}, {"native12", native12},
	} {
		adm := []byte(c.adm)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(adm)))
			for b.Loop() {
				if insecureAdm(adm) {
					b.Fatal("flagged")
				}
			}
		})
	}
}

// insecureAdm reads adm as the gate does when the media type is unknown.
func insecureAdm(adm []byte) bool {
	return markup.Insecure(adm, markup.Sniff(adm), markup.DefaultLimits)
}

// TestSecureMarkupImpInRun: inside a run secureMarkup and admReading read a
// bid's imp through Input.ImpOf, the engine's lookup; outside one ImpOf is
// ImpByID. Every bid gets the same verdict both ways, with imps whose ids
// repeat (the first one counts), bids for no imp, bids whose reading comes
// from their imp (no mtype) and more imps than ImpByID scans without its map.
func TestSecureMarkupImpInRun(t *testing.T) {
	snap := goldenSnapshot(t, "secureMarkup", goldenCase{})
	gate := &secureMarkup{}
	const html, vast = `<img src=http://a>`, `<VAST version=\"4.0\"><Ad><InLine><Impression>http://i</Impression></InLine></Ad></VAST>`
	imps := []string{
		`{"id":"s","banner":{"w":1,"h":1},"secure":1}`,
		`{"id":"s","video":{"mimes":["video/mp4"]},"secure":0}`,
		`{"id":"v","video":{"mimes":["video/mp4"]},"secure":1}`,
		`{"id":"v","banner":{"w":1,"h":1},"secure":1}`,
		`{"id":"d","banner":{"w":1,"h":1},"secure":0}`,
		`{"id":"d","banner":{"w":1,"h":1},"secure":1}`,
		`{"id":"n","native":{"request":"{}"},"secure":1}`,
	}
	for _, many := range []bool{false, true} {
		list := append([]string(nil), imps...)
		if many {
			for i := 0; i < 20; i++ {
				list = append(list, fmt.Sprintf(`{"id":"f%d","banner":{"w":1,"h":1},"secure":%d}`, i, i%2))
			}
			list = append(list, `{"id":"f3","video":{"mimes":["video/mp4"]},"secure":0}`)
		}
		var bids []string
		for _, id := range []string{"s", "v", "d", "n", "x", "f3", "f4", "f19"} {
			for _, adm := range []string{html, vast} {
				for _, mtype := range []string{"", `"mtype":1,`, `"mtype":2,`} {
					bids = append(bids, fmt.Sprintf(`{"id":"b%d","impid":%q,"price":1,%s"adm":"%s"}`, len(bids), id, mtype, adm))
				}
			}
		}
		req := []byte(`{"id":"r","imp":[` + strings.Join(list, ",") + `]}`)
		resp := []byte(`{"id":"r","seatbid":[{"bid":[` + strings.Join(bids, ",") + `]}]}`)

		rep, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: -1, All: true})
		require.NoError(t, err)
		inRun := map[string]string{}
		for _, h := range rep.Rejected {
			inRun[h.BidID] = h.Reason
		}
		engine.ReleaseEval(ev)

		in, release := secureInput(t, req, resp)
		rejected := 0
		for i := range in.Bids {
			b := &in.Bids[i]
			require.Equal(t, in.ImpByID(b.ImpID), in.ImpOf(b), "outside a run ImpOf is ImpByID")
			v := gate.CheckBid(in, b)
			reason := ""
			if v.Failed() {
				reason, rejected = v.Reason, rejected+1
			}
			require.Equal(t, reason, inRun[b.ID], "many %v: bid %s", many, bids[i])
		}
		release()
		require.Equal(t, rejected, len(inRun))
		// Each imp id has six bids: the HTML adm with no mtype, mtype 1,
		// mtype 2, then the VAST adm likewise. The first imp with an id
		// decides: s (secure banner), v (secure video), n (secure native),
		// f3 and f19 (secure banners); d's first imp is not secure.
		want := []string{"b0", "b1", "b5", "b7", "b9", "b11", "b19", "b23"}
		if many {
			want = append(want, "b30", "b31", "b35", "b42", "b43", "b47")
		}
		require.Len(t, inRun, len(want))
		for _, id := range want {
			require.Contains(t, inRun, id)
		}
	}
}
