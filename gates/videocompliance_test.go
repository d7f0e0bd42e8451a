package gates

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// vastAd writes an inline (or, with dur "", a wrapper) VAST ad of the
// version, with a Linear Duration when dur is set and a MediaFile per type.
func vastAd(version, dur string, types ...string) string {
	if dur == "" && len(types) == 0 {
		return `<VAST version="` + version + `"><Ad><Wrapper><VASTAdTagURI><![CDATA[https://ads.example/w]]></VASTAdTagURI></Wrapper></Ad></VAST>`
	}
	var b strings.Builder
	b.WriteString(`<VAST version="` + version + `"><Ad><InLine><Creatives><Creative><Linear>`)
	if dur != "-" {
		b.WriteString(`<Duration>` + dur + `</Duration>`)
	}
	b.WriteString(`<MediaFiles>`)
	for _, t := range types {
		b.WriteString(`<MediaFile type="` + t + `"><![CDATA[https://cdn.example/a]]></MediaFile>`)
	}
	b.WriteString(`</MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`)
	return b.String()
}

// avBidJSON writes a bid with adm (JSON-escaped) and extra fields.
func avBidJSON(id, extra, adm string) string {
	s := `{"id":"` + id + `","impid":"1","price":10,"crid":"c"` + extra
	if adm != "" {
		s += `,"adm":` + jsonString(adm)
	}
	return s + `}`
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func TestVideoCompliance(t *testing.T) {
	g := mustGate(t, "videoCompliance", "").(engine.BidGate)
	f := func(imp string, bids []string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, g, mediaReq(imp), mediaResp(bids...)))
	}
	const fmt353 = " (204/353)"
	v15 := vastAd("4.0", "00:00:15", "video/mp4")

	f(`{"id":"1","banner":{"w":1,"h":1}}`, []string{avBidJSON("b", `,"mtype":2`, v15)}, "prepare skip no video or audio in request")

	// Which bids are judged, and against which object.
	multi := `{"id":"1","video":{"rqddurs":[30]},"audio":{"rqddurs":[15]},"banner":{"w":1,"h":1}}`
	f(multi, []string{
		avBidJSON("b1", `,"mtype":2`, v15),
		avBidJSON("b2", `,"mtype":3`, v15),
		avBidJSON("b3", ``, v15),
		avBidJSON("b4", `,"mtype":1`, v15),
		avBidJSON("b5", `,"mtype":7`, v15),
		`{"id":"b6","impid":"9","price":1,"mtype":2}`,
	}, "reject creative duration 15s not in rqddurs 30"+fmt353, "pass",
		"skip bid has no mtype and imp offers several media types (media)", "skip not a video or audio bid (media)",
		"skip not a video or audio bid (media)", "skip bid matches no imp (imp)")
	f(`{"id":"1","video":{"maxduration":10}}`, []string{avBidJSON("b1", ``, v15), avBidJSON("b2", `,"mtype":3`, v15)},
		"reject creative duration 15s above maxduration 10"+fmt353, "skip imp offers no audio (media)")
	f(`{"id":"1","audio":{"maxduration":10}}`, []string{avBidJSON("b1", ``, v15), avBidJSON("b2", `,"mtype":2`, v15)},
		"reject creative duration 15s above maxduration 10"+fmt353, "skip imp offers no video (media)")
	f(`{"id":"1","banner":{"w":1,"h":1}},{"id":"2","video":{}}`, []string{avBidJSON("b1", ``, v15)}, "skip not a video or audio bid (media)")

	// 1-3: negative dur, dur against VAST, no duration.
	f(`{"id":"1","video":{"minduration":5,"maxduration":30}}`, []string{
		avBidJSON("b1", `,"dur":-1`, v15),
		avBidJSON("b2", `,"dur":16`, v15),
		avBidJSON("b3", `,"dur":15`, vastAd("4.0", "00:00:15.015")),
		avBidJSON("b4", `,"dur":31`, vastAd("4.0", "00:00:30.5")),
		avBidJSON("b5", `,"dur":20`, vastAd("4.0", "-", "video/mp4")),
		avBidJSON("b6", `,"dur":20`, vastAd("3.0", "")),
		avBidJSON("b7", ``, vastAd("3.0", "")),
		avBidJSON("b8", ``, `<div>not vast</div>`),
		avBidJSON("b9", `,"dur":40`, ``),
	}, "reject bid duration is negative (3/300)", "reject dur 16 does not match VAST duration 15"+fmt353, "pass",
		"reject creative duration 31s above maxduration 30"+fmt353, "pass", "pass",
		"pass", "pass", "reject creative duration 40s above maxduration 30"+fmt353)
	req := mustGate(t, "videoCompliance", "{requireDuration: true}").(engine.BidGate)
	require.Equal(t, []string{"reject creative duration missing" + fmt353, "pass", "reject creative duration missing" + fmt353},
		mediaJudge(t, req, mediaReq(`{"id":"1","video":{}}`), mediaResp(
			avBidJSON("b1", ``, vastAd("3.0", "")), avBidJSON("b2", `,"dur":5`, vastAd("3.0", "")), avBidJSON("b3", ``, vastAd("4.0", "00:00:00.4")))))

	// 4: rqddurs wins over min/max; entries <= 0 ignored; bounds inclusive;
	// minduration > maxduration fails every duration, minduration first.
	f(`{"id":"1","video":{"rqddurs":[0,15,-3,30],"minduration":20,"maxduration":25}}`, []string{
		avBidJSON("b1", `,"dur":15`, ``), avBidJSON("b2", `,"dur":22`, ``),
	}, "pass", "reject creative duration 22s not in rqddurs 15,30"+fmt353)
	f(`{"id":"1","video":{"rqddurs":[0,-1],"minduration":20,"maxduration":25}}`, []string{
		avBidJSON("b1", `,"dur":20`, ``), avBidJSON("b2", `,"dur":25`, ``), avBidJSON("b3", `,"dur":19`, ``), avBidJSON("b4", `,"dur":26`, ``),
	}, "pass", "pass", "reject creative duration 19s below minduration 20"+fmt353, "reject creative duration 26s above maxduration 25"+fmt353)
	f(`{"id":"1","video":{"minduration":30,"maxduration":15}}`, []string{
		avBidJSON("b1", `,"dur":20`, ``), avBidJSON("b2", `,"dur":40`, ``), avBidJSON("b3", `,"dur":10`, ``),
	}, "reject creative duration 20s below minduration 30"+fmt353, "reject creative duration 40s above maxduration 15"+fmt353,
		"reject creative duration 10s below minduration 30"+fmt353)

	// 5: protocols, the 2.5 protocol, then bid.protocol.
	f(`{"id":"1","video":{"protocols":[2,3,5,6,7,8]}}`, []string{
		avBidJSON("b1", ``, v15),
		avBidJSON("b2", ``, vastAd("4.1", "00:00:15")),
		avBidJSON("b3", ``, vastAd(" 4.2 ", "")),
		avBidJSON("b4", ``, vastAd("4.4", "00:00:15")),
		avBidJSON("b5", `,"protocol":7`, `https://ads.example/vast.xml`),
		avBidJSON("b6", `,"protocol":11`, `https://ads.example/vast.xml`),
		avBidJSON("b7", `,"protocol":11`, v15),
		avBidJSON("b8", `,"dur":15`, `<DAAST version="1.0"><Ad><InLine/></Ad></DAAST>`),
	}, "pass", "reject VAST 4.1 inline not in protocols 2,3,5,6,7,8"+fmt353, "reject VAST 4.2 wrapper not in protocols 2,3,5,6,7,8"+fmt353,
		"reject VAST 4.4 inline not in protocols 2,3,5,6,7,8"+fmt353, "pass", "reject protocol 11 not in protocols 2,3,5,6,7,8"+fmt353,
		"reject protocol 11 not in protocols 2,3,5,6,7,8"+fmt353, "reject DAAST 1.0 inline not in protocols 2,3,5,6,7,8"+fmt353)
	f(`{"id":"1","video":{"protocol":3}}`, []string{avBidJSON("b1", ``, vastAd("3.0", "00:00:15")), avBidJSON("b2", ``, v15)},
		"pass", "reject VAST 4.0 inline not in protocols 3"+fmt353)
	f(`{"id":"1","audio":{"protocols":[9,10]}}`, []string{avBidJSON("b1", `,"dur":15`, `<DAAST version="1.0"><Ad><Wrapper/></Ad></DAAST>`), avBidJSON("b2", ``, v15)},
		"pass", "reject VAST 4.0 inline not in protocols 9,10"+fmt353)
	f(`{"id":"1","video":{}}`, []string{avBidJSON("b1", `,"protocol":99`, vastAd("9.9", "00:00:15"))}, "pass")

	// 6: mimes normalised as MediaFile types; the first type is reported.
	f(`{"id":"1","video":{"mimes":[" Video/MP4 ; codecs=x",""]}}`, []string{
		avBidJSON("b1", ``, vastAd("4.0", "00:00:15", "video/webm", "VIDEO/mp4")),
		avBidJSON("b2", ``, vastAd("4.0", "00:00:15", "Video/WebM;codecs=vp9", "application/javascript")),
		avBidJSON("b3", ``, vastAd("4.0", "00:00:15", "")),
		avBidJSON("b4", `,"dur":15`, vastAd("4.0", "")),
	}, "pass", "reject MediaFile type video/webm not in mimes"+fmt353, "pass", "pass")
	f(`{"id":"1","video":{"mimes":["", " "]}}`, []string{avBidJSON("b1", ``, vastAd("4.0", "00:00:15", "video/webm"))}, "pass")
}

func TestVideoCompliancePerSecondFloor(t *testing.T) {
	rates, err := engine.CompileRates(map[string]float64{"EUR/USD": 1.08})
	require.NoError(t, err)
	snapRates := func(in *engine.Input) { in.Rates = rates }
	f := func(g engine.BidGate, imp, resp string, want ...string) {
		t.Helper()
		in := mediaEval(t, mediaReq(imp), resp)
		snapRates(in)
		var got []string
		require.Empty(t, g.Prepare(in))
		for i := range in.Bids {
			v := g.CheckBid(in, &in.Bids[i])
			switch {
			case v.Failed():
				got = append(got, v.Reason+" "+itoa(v.Loss)+"/"+itoa(v.NBR))
			case v.Skipped():
				got = append(got, "skip "+v.Reason)
			default:
				got = append(got, "pass")
			}
		}
		require.Equal(t, want, got)
	}
	g := mustGate(t, "videoCompliance", "").(engine.BidGate)
	imp := `{"id":"1","video":{"mincpmpersec":0.5},"bidfloor":1,"pmp":{"deals":[{"id":"d1","mincpmpersec":1,"bidfloorcur":"EUR"},{"id":"d2","bidfloor":2},{"id":"d3","durfloors":[{"mindur":1,"bidfloor":3}]},{"id":"d4"}]}}`
	f(g, imp, mediaResp(
		`{"id":"b1","impid":"1","price":7,"dur":15}`,
		`{"id":"b2","impid":"1","price":7.5,"dur":15}`,
		`{"id":"b3","impid":"1","dur":15}`,
		`{"id":"b4","impid":"1","price":3}`,
		`{"id":"b5","impid":"1","price":16,"dur":15,"dealid":"d1"}`,
		`{"id":"b6","impid":"1","price":0.1,"dur":15,"dealid":"d2"}`,
		`{"id":"b7","impid":"1","price":0.1,"dur":15,"dealid":"d3"}`,
		`{"id":"b8","impid":"1","price":7,"dur":15,"dealid":"d4"}`,
		`{"id":"b9","impid":"1","price":7,"dur":15,"dealid":"nope"}`,
	),
		"bid price 7 below floor 7.5 (mincpmpersec 0.5 x 15s) 100/301", "pass",
		"bid price 0 below floor 7.5 (mincpmpersec 0.5 x 15s) 100/301", "pass",
		"bid price 16 below deal floor 16.2 (mincpmpersec 1 x 15s) 101/304", "pass", "pass",
		"bid price 7 below floor 7.5 (mincpmpersec 0.5 x 15s) 100/301", "bid price 7 below floor 7.5 (mincpmpersec 0.5 x 15s) 100/301")
	// Converted into the response currency; no rate.
	eur := `{"id":"1","video":{"mincpmpersec":0.3333333},"bidfloorcur":"eur"}`
	f(g, eur, `{"id":"r","cur":"USD","seatbid":[{"bid":[{"id":"b1","impid":"1","price":5.39,"dur":15},{"id":"b2","impid":"1","price":5.4,"dur":15}]}]}`,
		"bid price 5.39 below floor 5.399999 (mincpmpersec 0.3333333 x 15s) 100/301", "pass")
	f(g, `{"id":"1","audio":{"mincpmpersec":1},"bidfloorcur":"GBP"}`, `{"id":"r","seatbid":[{"bid":[{"id":"b1","impid":"1","price":50,"dur":15}]}]}`,
		`no rate for USD/GBP 3/301`)
	pass := mustGate(t, "videoCompliance", "{onMissingRate: pass}").(engine.BidGate)
	f(pass, `{"id":"1","audio":{"mincpmpersec":1},"bidfloorcur":"GBP"}`, `{"id":"r","seatbid":[{"bid":[{"id":"b1","impid":"1","price":50,"dur":15},{"id":"b2","impid":"1","price":50}]}]}`,
		`skip no rate for USD/GBP`, "pass")
	// No per-second floor (mincpmpersec 0, or a deal guiding the floor with
	// a bidfloor only): nothing to convert, so no rate is needed.
	f(g, `{"id":"1","audio":{"mincpmpersec":0},"bidfloorcur":"GBP"}`, `{"id":"r","seatbid":[{"bid":[{"id":"b1","impid":"1","price":50,"dur":15}]}]}`,
		"pass")
	f(g, `{"id":"1","audio":{"mincpmpersec":1},"bidfloorcur":"GBP","pmp":{"deals":[{"id":"d","bidfloor":2,"bidfloorcur":"JPY"}]}}`,
		`{"id":"r","seatbid":[{"bid":[{"id":"b1","impid":"1","price":50,"dur":15,"dealid":"d"}]}]}`, "pass")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestVideoComplianceOptions(t *testing.T) {
	configError(t, "videoCompliance", "{onMissingRate: skip}", "onMissingRate must be fail or pass")
	configError(t, "videoCompliance", "{requireDuration: maybe}", "options.requireDuration: want true or false, got \"maybe\"")
	configError(t, "videoCompliance", "{rqddurs: [15]}", "rqddurs")
}

func BenchmarkVideoCompliance(b *testing.B) {
	benchAVGate(b, mustGate(b, "videoCompliance", ""))
}

// BenchmarkVideoComplianceTypical: the typical pair, whose one video bid
// (VAST 4.0 inline, 15 s) is judged and banner bids skipped.
func BenchmarkVideoComplianceTypical(b *testing.B) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	in := &ev.In
	in.Request.Imp[2].Video.Protocols = append(in.Request.Imp[2].Video.Protocols, 7)
	g := mustGate(b, "videoCompliance", "").(engine.BidGate)
	b.ReportAllocs()
	for b.Loop() {
		if g.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := g.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}
