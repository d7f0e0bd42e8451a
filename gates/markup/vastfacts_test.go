package markup

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const vast42Inline = `<?xml version="1.0" encoding="UTF-8"?>
<VAST version="4.2" xmlns="http://www.iab.com/VAST">
  <Ad id="20001" sequence="1">
    <InLine>
      <AdSystem version="1">iabtechlab</AdSystem>
      <Error><![CDATA[https://example.com/error]]></Error>
      <Impression id="Impression-ID"><![CDATA[https://example.com/track/impression]]></Impression>
      <AdTitle>Inline Simple Ad &amp; more</AdTitle>
      <AdServingId>a532d16d-4d7f-4440-bd29-2ec05553fc80</AdServingId>
      <Creatives>
        <Creative id="5480" sequence="1" adId="2447226">
          <UniversalAdId idRegistry="Ad-ID">8465</UniversalAdId>
          <Linear>
            <Duration>00:00:15.015</Duration>
            <TrackingEvents>
              <Tracking event="start"><![CDATA[https://example.com/tracking/start]]></Tracking>
              <Tracking event="complete"><![CDATA[https://example.com/tracking/complete]]></Tracking>
            </TrackingEvents>
            <MediaFiles>
              <MediaFile id="5241" delivery="progressive" type="Video/MP4; codecs=avc1" bitrate="2000" width="1280" height="720" minBitrate="1500" maxBitrate="2500" scalable="1" maintainAspectRatio="1" codec="H.264"><![CDATA[https://iab-publicfiles.s3.amazonaws.com/vast/VAST-4.0-Short-Intro.mp4]]></MediaFile>
              <MediaFile id="5244" delivery="progressive" type="video/webm" bitrate="1000" width="854" height="480"><![CDATA[https://iab-publicfiles.s3.amazonaws.com/vast/VAST-4.0-Short-Intro-mid-resolution.webm]]></MediaFile>
            </MediaFiles>
          </Linear>
        </Creative>
      </Creatives>
    </InLine>
  </Ad>
</VAST>
`

func TestReadVAST(t *testing.T) {
	type want struct {
		kind     VASTKind
		daast    bool
		version  string
		proto    int
		dur      int
		types    int
		first    string
		accepted bool
	}
	f := func(adm string, w want) {
		t.Helper()
		got := ReadVAST(adm, []string{"", " VIDEO/WebM ; codecs=vp9"})
		require.Equal(t, w, want{got.Kind, got.DAAST, got.Version, got.Protocol, got.Duration, got.MediaTypes, got.FirstMediaType, got.MediaTypeAccepted}, adm)
	}
	none := want{}
	f(vast42Inline, want{VASTInLine, false, "4.2", 13, 15, 2, "Video/MP4", true})

	// Versions and kinds, AdCOM codes 1-16.
	ad := func(root, version, kind string) string {
		v := ""
		if version != "-" {
			v = ` version="` + version + `"`
		}
		return `<` + root + v + `><Ad><` + kind + `><Creatives><Creative><Linear><Duration>00:00:30</Duration><MediaFiles><MediaFile type="video/mp4">u</MediaFile></MediaFiles></Linear></Creative></Creatives></` + kind + `></Ad></` + root + `>`
	}
	for _, c := range []struct {
		root, version string
		inline, wrap  int
	}{
		{"VAST", "1.0", 1, 4}, {"VAST", "2.0", 2, 5}, {"VAST", "2", 2, 5}, {"VAST", "3.0", 3, 6},
		{"VAST", "4.0", 7, 8}, {"VAST", "4", 7, 8}, {"VAST", "4.0.1", 7, 8}, {"VAST", "4.1", 11, 12},
		{"VAST", "4.2", 13, 14}, {"VAST", "4.3", 15, 16}, {"DAAST", "1.0", 9, 10}, {"DAAST", "1.1", 9, 10},
		{"VAST", "4.4", 0, 0}, {"VAST", "5.0", 0, 0}, {"VAST", "abc", 0, 0}, {"VAST", "4.", 0, 0},
		{"VAST", ".4", 0, 0}, {"VAST", "0.9", 0, 0}, {"DAAST", "2.0", 0, 0},
		{"VideoAdServingTemplate", "-", 1, 4}, {"VideoAdServingTemplate", "9.9", 1, 4},
	} {
		v := c.version
		if c.root == "VideoAdServingTemplate" {
			v = "1.0"
		}
		dur := 30
		if c.root == "VideoAdServingTemplate" {
			dur = 0 // VAST 1.0 reads Video/Duration, not Linear
		}
		f(ad(c.root, c.version, "InLine"), want{VASTInLine, c.root == "DAAST", v, c.inline, dur, 1, "video/mp4", false})
		f(ad(c.root, c.version, "Wrapper"), want{VASTWrapper, c.root == "DAAST", v, c.wrap, 0, 0, "", false})
	}
	// The version is trimmed, and written as sent.
	f(`<VAST version=" 3.0&#x20;"><Ad><InLine/></Ad></VAST>`, want{VASTInLine, false, "3.0&#x20;", 3, 0, 0, "", false})
	f(`<VAST version="&#52;.1"><Ad><Wrapper/></Ad></VAST>`, want{VASTWrapper, false, "&#52;.1", 12, 0, 0, "", false})

	// VAST 1.0: InLine/.../Video/Duration.
	f(`<VideoAdServingTemplate><Ad id="1"><InLine><Video><Duration>00:00:10</Duration><MediaFiles><MediaFile type="video/x-flv"><URL>u</URL></MediaFile></MediaFiles></Video></InLine></Ad></VideoAdServingTemplate>`,
		want{VASTInLine, false, "1.0", 1, 10, 1, "video/x-flv", false})

	// The first Ad holding an InLine or a Wrapper is read.
	f(`<VAST version="3.0"><Ad id="empty"/><Ad><Wrapper><VASTAdTagURI>u</VASTAdTagURI></Wrapper></Ad><Ad><InLine><Creatives><Creative><Linear><Duration>00:00:05</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`,
		want{VASTWrapper, false, "3.0", 6, 0, 0, "", false})
	f(`<VAST version="3.0"><Ad><Extensions/></Ad><Ad><InLine><Creatives><Creative><Linear><Duration>00:00:05</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`,
		want{VASTInLine, false, "3.0", 3, 5, 0, "", false})
	// A Duration in a wrapper is not read; an Ad must be the root's child,
	// the InLine the Ad's.
	f(`<VAST version="3.0"><Ad><Wrapper><Creatives><Creative><Linear><Duration>00:00:05</Duration><MediaFiles><MediaFile type="video/mp4"/></MediaFiles></Linear></Creative></Creatives></Wrapper></Ad></VAST>`,
		want{VASTWrapper, false, "3.0", 6, 0, 0, "", false})
	f(`<VAST version="3.0"><X><Ad><InLine/></Ad></X></VAST>`, none)
	f(`<VAST version="3.0"><Ad><X><InLine/></X></Ad></VAST>`, none)
	f(`<VAST version="3.0"></VAST>`, none)

	// The first Duration child of the first Linear only.
	f(`<VAST version="4.0"><Ad><InLine><Creatives><Creative><Linear><X><Duration>00:00:05</Duration></X><Duration> 00:00:06 </Duration><Duration>00:00:07</Duration></Linear><Linear><Duration>00:00:08</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`,
		want{VASTInLine, false, "4.0", 7, 6, 0, "", false})
	f(`<VAST version="4.0"><Ad><InLine><Creatives><Creative><Linear></Linear><Linear><Duration>00:00:08</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`,
		want{VASTInLine, false, "4.0", 7, 0, 0, "", false})
	// Text in pieces: character data, references and CDATA, in order.
	f(`<VAST version="4.0"><Ad><InLine><Linear><Duration> 00:00<![CDATA[:2]]>&#57;.5<!-- c --> </Duration></Linear></InLine></Ad></VAST>`,
		want{VASTInLine, false, "4.0", 7, 30, 0, "", false})
	// Namespace prefixes are dropped.
	f(`<v:VAST xmlns:v="x" v:version="2.0"><v:Ad><v:InLine><v:Linear><v:Duration>00:01:00</v:Duration></v:Linear></v:InLine></v:Ad></v:VAST>`,
		want{VASTInLine, false, "2.0", 2, 60, 0, "", false})
	// Names are case-sensitive.
	f(`<vast version="2.0"><Ad><InLine/></Ad></vast>`, none)
	f(`<VAST version="2.0"><ad><InLine/></ad></VAST>`, none)
	f(`<VAST Version="2.0"><Ad><InLine/></Ad></VAST>`, none)

	// MediaFile types: parameters dropped, trimmed, empties left out.
	f(`<VAST version="4.1"><Ad><InLine><Linear><MediaFiles><MediaFile type=""/><MediaFile type=" ; x"/><MediaFile type=" Audio/MPEG ;rate=1"/><MediaFile type="video/&#119;ebm"/></MediaFiles></Linear></InLine></Ad></VAST>`,
		want{VASTInLine, false, "4.1", 11, 0, 2, "Audio/MPEG", true})
	f(`<VAST version="4.1"><Ad><InLine><Creatives><Creative><NonLinearAds><NonLinear><StaticResource creativeType="image/png">u</StaticResource></NonLinear></NonLinearAds></Creative></Creatives></InLine></Ad></VAST>`,
		want{VASTInLine, false, "4.1", 11, 0, 0, "", false})

	// Prolog, BOM, whitespace, comments and PIs around the root.
	f("\ufeff \n<?xml version='1.0' encoding='ISO-8859-1'?><!-- a --><?pi x?>\n"+ad("VAST", "2.0", "Wrapper")+"\n<!-- b -->\n",
		want{VASTWrapper, false, "2.0", 5, 0, 0, "", false})
}

func TestReadVASTDuration(t *testing.T) {
	f := func(text string, want int) {
		t.Helper()
		adm := `<VAST version="3.0"><Ad><InLine><Creatives><Creative><Linear><Duration>` + text + `</Duration></Linear></Creative></Creatives></InLine></Ad></VAST>`
		got := ReadVAST(adm, nil)
		require.Equal(t, VASTInLine, got.Kind, text)
		require.Equal(t, want, got.Duration, text)
	}
	f("00:00:15", 15)
	f("00:00:15.015", 15)
	f("00:00:30.5", 31)
	f("00:00:30.499", 30)
	f("00:00:14.5", 15)
	f("0:01:00", 60)
	f("01:00:00.000", 3600)
	f("99:59:59.999", 99*3600+59*60+60)
	f("00:00:00.4", 0)
	f("00:00:00.5", 1)
	f(" \n00:00:15\t", 15)
	for _, bad := range []string{"15", "00:15", "00:00:75", "00:60:00", "00:00:15,5", "000:00:15", "00:0:15", "00:00:15.", "00:00:15.1234",
		"00:00:1a", "00:00: 15", "00:00:15 x", "-0:00:15", "+0:00:15", "", "00:00:15.5.5", "0x:00:15", "00:00:15&#x2003;"} {
		f(bad, 0)
	}
}

func TestReadVASTMalformed(t *testing.T) {
	good := `<VAST version="3.0"><Ad><InLine/></Ad></VAST>`
	require.Equal(t, VASTInLine, ReadVAST(good, nil).Kind)
	for _, adm := range []string{
		"",
		"   ",
		"https://ads.example/vast.xml",
		`{"native":{}}`,
		`<div>ad</div>`,
		`<html><body><VAST version="3.0"><Ad><InLine/></Ad></VAST></body></html>`,
		`<![CDATA[` + good + `]]>`,
		`&lt;VAST version="3.0"&gt;&lt;Ad&gt;&lt;InLine/&gt;&lt;/Ad&gt;&lt;/VAST&gt;`,
		`<!DOCTYPE VAST [<!ENTITY x "y">]>` + good,
		`<!DOCTYPE VAST>` + good,
		`<VAST version="3.0"><Ad><InLine>&x;</InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>&nbsp;</InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>& </InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>&#0;</InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>&#xD800;</InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>&#x110000;</InLine></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine>]]></InLine></Ad></VAST>`,
		`<VAST><Ad><InLine/></Ad></VAST>`,
		`<VAST version=""><Ad><InLine/></Ad></VAST>`,
		`<VAST version=" "><Ad><InLine/></Ad></VAST>`,
		`<DAAST><Ad><InLine/></Ad></DAAST>`,
		`<VAST version=3.0><Ad><InLine/></Ad></VAST>`,
		`<VAST version="3.0" version="4.0"><Ad><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad id="1" id="2"><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad a="<"><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad a="&bad;"><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad a="1"b="2"><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine></Ad></InLine></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VAST></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VASTX>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VAS>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VAST><VAST version="3.0"/>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VAST>trailing`,
		`text<VAST version="3.0"><Ad><InLine/></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><!-- a -- b --></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><!-- a ---></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><!-- a </VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><![CDATA[x</VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><!ELEMENT x></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><?xml version="1.0"?></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><? x?></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><?x y</VAST>`,
		`<?xml version="1.0"?><?xml version="1.0"?>` + good,
		`<VAST version="3.0"><Ad><InLine/></Ad><1a/></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad><a:b:c/></VAST>`, // encoding/xml refuses two colons
		`<VAST version="3.0"><Ad a:b:c="1"><InLine/></Ad></VAST>`,
		`<v:v:VAST version="3.0"><Ad><InLine/></Ad></v:v:VAST>`,
		`<VAST version="3.0"><Ad><InLine/ ></Ad></VAST>`,
		`<VAST version="3.0"><Ad><InLine/></Ad></VAST`,
		`<VAST version="3.0"`,
		`<VAST version="3.0`,
		"<VAST version=\"3.0\"><Ad><InLine>\x01</InLine></Ad></VAST>",
		"<VAST version=\"3.0\"><Ad><InLine>\xff</InLine></Ad></VAST>",
		"<VAST version=\"3.0\"><Ad><InLine>\uffff</InLine></Ad></VAST>",
		"\ufeff\ufeff" + good,
		strings.Repeat("<a>", maxVASTDepth) + good,
	} {
		require.Equal(t, VASTFacts{}, ReadVAST(adm, nil), adm)
	}
	// The limits: nesting and attributes.
	deep := `<VAST version="3.0"><Ad><InLine>` + strings.Repeat("<x>", maxVASTDepth-3) + strings.Repeat("</x>", maxVASTDepth-3) + `</InLine></Ad></VAST>`
	require.Equal(t, VASTInLine, ReadVAST(deep, nil).Kind)
	deeper := `<VAST version="3.0"><Ad><InLine>` + strings.Repeat("<x>", maxVASTDepth-2) + strings.Repeat("</x>", maxVASTDepth-2) + `</InLine></Ad></VAST>`
	require.Equal(t, NoVAST, ReadVAST(deeper, nil).Kind)
	attrs := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(" a")
			b.WriteString(strings.Repeat("x", i))
			b.WriteString(`="1"`)
		}
		return `<VAST version="3.0"><Ad` + b.String() + `><InLine/></Ad></VAST>`
	}
	require.Equal(t, VASTInLine, ReadVAST(attrs(maxVASTAttrs), nil).Kind)
	require.Equal(t, NoVAST, ReadVAST(attrs(maxVASTAttrs+1), nil).Kind)
}

func TestReadVASTAllocatesNothing(t *testing.T) {
	accept := []string{"video/mp4", "Video/WebM"}
	for _, adm := range []string{vast42Inline, `<div>x</div>`, `<VAST version="4.0"><Ad><Wrapper/></Ad></VAST>`, `<VAST version="&#52;.0"><Ad><Wrapper/></Ad></VAST>`[:0] + `<VAST version="4.0"><Ad><InLine/></Ad></VAST>`} {
		require.Zero(t, testing.AllocsPerRun(100, func() { ReadVAST(adm, accept) }), adm)
	}
}

// refFacts reads the facts with encoding/xml (strict, no entities): the
// reference FuzzVASTFacts compares with. ok is false when encoding/xml
// refuses the document.
func refFacts(adm string) (f VASTFacts, ok bool) {
	adm = strings.TrimPrefix(adm, "\ufeff")
	d := xml.NewDecoder(strings.NewReader(adm))
	d.Strict = true
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var stack []string
	var root string
	var inAd, kindSet bool
	inlineDepth, linearDepth, durDepth := 0, 0, 0
	linearSeen, durSeen := false, false
	var dur strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return VASTFacts{}, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			depth := len(stack)
			switch {
			case depth == 1:
				root = t.Name.Local
				for _, a := range t.Attr {
					if a.Name.Local == "version" {
						f.Version = a.Value
					}
				}
			case depth == 2:
				inAd = t.Name.Local == "Ad"
			case depth == 3 && inAd && !kindSet && (t.Name.Local == "InLine" || t.Name.Local == "Wrapper"):
				kindSet = true
				f.Kind = VASTWrapper
				if t.Name.Local == "InLine" {
					f.Kind, inlineDepth = VASTInLine, depth
				}
			case inlineDepth > 0 && !linearSeen && (t.Name.Local == "Linear" && root != "VideoAdServingTemplate" || t.Name.Local == "Video" && root == "VideoAdServingTemplate"):
				linearSeen, linearDepth = true, depth
			case linearDepth > 0 && depth == linearDepth+1 && !durSeen && t.Name.Local == "Duration":
				durSeen, durDepth = true, depth
			}
			if inlineDepth > 0 && t.Name.Local == "MediaFile" {
				for _, a := range t.Attr {
					if a.Name.Local == "type" {
						v, _, _ := strings.Cut(a.Value, ";")
						if v = trimXMLSpace(v); v != "" {
							f.MediaTypes++
							if f.MediaTypes == 1 {
								f.FirstMediaType = v
							}
						}
					}
				}
			}
		case xml.CharData:
			if durDepth > 0 && len(stack) == durDepth {
				dur.Write(t)
			}
		case xml.EndElement:
			switch len(stack) {
			case durDepth:
				durDepth = 0
				f.Duration = parseVASTDuration(trimXMLSpace(dur.String()))
			case linearDepth:
				linearDepth = 0
			case inlineDepth:
				inlineDepth = 0
			}
			stack = stack[:len(stack)-1]
		}
	}
	if root == "VideoAdServingTemplate" {
		f.Version = "1.0"
	}
	f.DAAST = root == "DAAST"
	return f, true
}

// FuzzVASTFacts: the reader never panics, reads only documents encoding/xml
// also reads, and finds the same facts in them; its own invariants hold.
func FuzzVASTFacts(f *testing.F) {
	for _, s := range []string{
		vast42Inline,
		`<VAST version="3.0"><Ad><Wrapper><VASTAdTagURI>u</VASTAdTagURI></Wrapper></Ad></VAST>`,
		`<VideoAdServingTemplate><Ad><InLine><Video><Duration>00:00:10</Duration></Video></InLine></Ad></VideoAdServingTemplate>`,
		`<DAAST version="1.0"><Ad><InLine><Creatives><Creative><Linear><Duration>00:00:30.5</Duration><MediaFiles><MediaFile type="audio/mpeg"/></MediaFiles></Linear></Creative></Creatives></InLine></Ad></DAAST>`,
		`<!DOCTYPE VAST [<!ENTITY x "y">]><VAST version="3.0"/>`,
		`<v:VAST xmlns:v="x" version="2.0"><v:Ad><v:InLine/></v:Ad></v:VAST>`,
		`<div>ad</div>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, adm string) {
		got := ReadVAST(adm, []string{"x/y"})
		again := ReadVAST(adm, nil)
		if got != again {
			t.Fatalf("accept changed the facts: %+v vs %+v", got, again)
		}
		if got.Kind == NoVAST {
			if got != (VASTFacts{}) {
				t.Fatalf("facts without VAST: %+v", got)
			}
			return
		}
		if got.Protocol < 0 || got.Protocol > 16 || got.Duration < 0 || got.Version == "" || got.MediaTypeAccepted {
			t.Fatalf("bad facts %+v", got)
		}
		if !strings.Contains(adm, got.Version) && got.Version != "1.0" {
			t.Fatalf("version %q not in the markup", got.Version)
		}
		if strings.Contains(adm, "<!DOCTYPE") {
			t.Fatal("a DOCTYPE read as VAST")
		}
		ref, ok := refFacts(adm)
		if !ok && strings.Contains(adm, "<?xml") {
			return // encoding/xml accepts only version="1.0" in the XML declaration
		}
		if !ok {
			t.Fatalf("encoding/xml refuses what was read as VAST: %q", adm)
		}
		if got.Kind == VASTInLine && ref.Kind != VASTInLine || got.Kind == VASTWrapper && ref.Kind != VASTWrapper {
			t.Fatalf("kind %v, encoding/xml %v", got.Kind, ref.Kind)
		}
		if got.Duration != ref.Duration || got.MediaTypes != ref.MediaTypes || got.DAAST != ref.DAAST ||
			got.FirstMediaType != ref.FirstMediaType && !strings.ContainsAny(got.FirstMediaType, "\r&") {
			t.Fatalf("facts %+v, encoding/xml %+v", got, ref)
		}
		if !strings.ContainsAny(got.Version, "\r&") && trimXMLSpace(ref.Version) != got.Version {
			t.Fatalf("version %q, encoding/xml %q", got.Version, ref.Version)
		}
	})
}

func BenchmarkVASTFacts(b *testing.B) {
	accept := []string{"video/mp4", "video/webm"}
	b.ReportAllocs()
	b.SetBytes(int64(len(vast42Inline)))
	for b.Loop() {
		if ReadVAST(vast42Inline, accept).Duration != 15 {
			b.Fatal("duration")
		}
	}
}
