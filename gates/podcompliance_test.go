package gates

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// podRun judges the pair through the engine with the policy's gates (YAML
// list items) and returns, per bid in response order, "<id> pass" or
// "<id> <gate>: <reason> (<loss>/<nbr>)".
func podRun(t *testing.T, gatesYAML, req, resp string, all bool) []string {
	t.Helper()
	text := "policy:\n  gates:\n" + gatesYAML
	cfg, err := config.Parse("test.yaml", []byte(text))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(text), Builtin())
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap, []byte(req), []byte(resp), engine.CheckOptions{LatencyMs: -1, All: all})
	require.NoError(t, err)
	defer engine.ReleaseEval(ev)
	var out []string
	for i := range ev.In.Bids {
		line := ev.In.Bids[i].ID + " pass"
		for _, h := range rep.Rejected {
			if h.Bid == i {
				line = fmt.Sprintf("%s %s: %s (%d/%d)", h.BidID, h.Gate, h.Reason, h.Loss, h.NBR)
				break
			}
		}
		out = append(out, line)
	}
	return out
}

func podGate(options string) string {
	s := "    - gate: podCompliance\n"
	if options != "" {
		s += "      options: " + options + "\n"
	}
	return s
}

func TestPodComplianceSkips(t *testing.T) {
	g := mustGate(t, "podCompliance", "").(engine.BidGate)
	f := func(imps []string, bids []string, want ...string) {
		t.Helper()
		require.Equal(t, want, mediaJudge(t, g, mediaReq(imps...), mediaResp(bids...)))
	}
	f([]string{`{"id":"1","video":{"maxduration":30}}`, `{"id":"2","audio":{}}`}, []string{`{"id":"b","impid":"1","mtype":2}`},
		"prepare skip no pod in request")
	f([]string{`{"id":"1","video":{"podid":"p"}}`, `{"id":"2","video":{}}`, `{"id":"3","banner":{"w":1,"h":1}}`, `{"id":"4","video":{"poddur":60},"audio":{}}`},
		[]string{
			`{"id":"b1","impid":"1"}`,
			`{"id":"b2","impid":"2"}`,
			`{"id":"b3","impid":"3"}`,
			`{"id":"b4","impid":"4"}`,
			`{"id":"b5","impid":"4","mtype":3}`,
			`{"id":"b6","impid":"1","mtype":3}`,
			`{"id":"b7","impid":"x","mtype":2}`,
		}, "pass", "skip imp not in a pod (pod)", "skip not a video or audio bid (media)",
		"skip bid has no mtype and imp offers several media types (media)", "skip imp not in a pod (pod)",
		"skip imp offers no audio (media)", "skip bid matches no imp (imp)")
	// In a pod by any of podid, poddur, maxseq, slotinpod.
	for _, imp := range []string{`{"podid":"x"}`, `{"poddur":1}`, `{"maxseq":1}`, `{"slotinpod":-1}`, `{"slotinpod":7}`} {
		f([]string{`{"id":"1","audio":` + imp + `}`}, []string{`{"id":"b","impid":"1"}`}, "pass")
	}
}

func TestPodComplianceSlot(t *testing.T) {
	g := mustGate(t, "podCompliance", "").(engine.BidGate)
	f := func(impSlot, bidSlot string, pass bool) {
		t.Helper()
		imp := `{"id":"s1","video":{"podid":"p","slotinpod":` + impSlot + `}}`
		got := mediaJudge(t, g, mediaReq(imp), mediaResp(`{"id":"b","impid":"s1","mtype":2,"slotinpod":`+bidSlot+`}`))
		want := "pass"
		if !pass {
			want = "reject slotinpod " + bidSlot + " not guaranteed by imp s1 (slotinpod " + impSlot + ") (3/300)"
		}
		require.Equal(t, []string{want}, got, "imp %s bid %s", impSlot, bidSlot)
	}
	// Position sets: bid -1 last, 1 first, 2 first or last; imp 1 first,
	// -1 last, 2 both, 0 and unknown none.
	for _, c := range []struct {
		imp, bid string
		pass     bool
	}{
		{"0", "0", true}, {"1", "0", true}, {"0", "1", false}, {"0", "-1", false}, {"0", "2", false},
		{"1", "1", true}, {"1", "-1", false}, {"1", "2", true},
		{"-1", "-1", true}, {"-1", "1", false}, {"-1", "2", true},
		{"2", "1", true}, {"2", "-1", true}, {"2", "2", true},
		{"1", "3", false}, {"2", "-2", false}, {"5", "1", false}, {"5", "2", false},
	} {
		f(c.imp, c.bid, c.pass)
	}
}

func TestPodComplianceFit(t *testing.T) {
	imp := `{"id":"d","video":{"podid":"brk","poddur":60,"maxseq":3}}`
	bids := mediaResp(
		`{"id":"b1","impid":"d","mtype":2,"dur":30}`,
		`{"id":"b2","impid":"d","mtype":2,"dur":61}`,
		`{"id":"b3","impid":"d","mtype":2,"dur":20}`,
		`{"id":"b4","impid":"d","mtype":2,"dur":15}`,
		`{"id":"b5","impid":"d","mtype":2,"adm":`+jsonString(vastAd("4.0", "00:00:05"))+`}`,
		`{"id":"b6","impid":"d","mtype":2}`,
	)
	// each: only a bid longer than the whole break.
	require.Equal(t, []string{"b1 pass", "b2 rtb.pod-compliance: pod of imp d exceeds poddur 60s (61s) (3/300)", "b3 pass", "b4 pass", "b5 pass", "b6 pass"},
		podRun(t, podGate(""), mediaReq(imp), bids, false))
	// all: in response order; a failed bid takes no place; a bid without
	// a duration counts toward maxseq only.
	require.Equal(t, []string{
		"b1 pass", "b2 rtb.pod-compliance: pod of imp d exceeds poddur 60s (91s) (3/300)", "b3 pass",
		"b4 rtb.pod-compliance: pod of imp d exceeds poddur 60s (65s) (3/300)", "b5 pass",
		"b6 rtb.pod-compliance: pod of imp d exceeds maxseq 3 (3/300)",
	}, podRun(t, podGate("{podFit: all}"), mediaReq(imp), bids, false))
	// A bid an earlier gate removed takes no place, with --all too.
	removed := mediaResp(
		`{"id":"b1","impid":"d","mtype":2,"dur":30,"price":-1}`,
		`{"id":"b2","impid":"d","mtype":2,"dur":30,"price":1}`,
		`{"id":"b3","impid":"d","mtype":2,"dur":30,"price":1}`,
	)
	twoGates := "    - gate: bidSanity\n" + podGate("{podFit: all}")
	for _, all := range []bool{false, true} {
		require.Equal(t, []string{"b1 rtb.bid-sanity: bid price is negative (3/300)", "b2 pass", "b3 pass"},
			podRun(t, twoGates, mediaReq(imp), removed, all))
	}
	// Another imp's bids are another pod's fit.
	two := mediaReq(`{"id":"d","video":{"podid":"brk","maxseq":1}}`, `{"id":"e","video":{"podid":"brk","maxseq":1}}`)
	require.Equal(t, []string{"b1 pass", "b2 pass", "b3 rtb.pod-compliance: pod of imp d exceeds maxseq 1 (3/300)"},
		podRun(t, podGate("{podFit: all}"), two, mediaResp(
			`{"id":"b1","impid":"d","mtype":2}`, `{"id":"b2","impid":"e","mtype":2}`, `{"id":"b3","impid":"d","mtype":2}`), false))
}

func TestPodComplianceSeparation(t *testing.T) {
	// Hybrid pod "brk": structured slots s1, s2 and the dynamic imp d; imp
	// x is alone (no podid), not dynamic.
	req := mediaReq(
		`{"id":"s1","video":{"podid":"brk","slotinpod":1}}`,
		`{"id":"s2","video":{"podid":"brk","slotinpod":-1}}`,
		`{"id":"d","video":{"podid":"brk","poddur":120,"maxseq":4}}`,
		`{"id":"one","video":{"podid":"other","poddur":30,"maxseq":1}}`,
		`{"id":"x","video":{"slotinpod":2}}`,
	)
	resp := mediaResp(
		`{"id":"b1","impid":"s1","mtype":2,"adomain":["Brand.com"],"cat":["IAB2"]}`,
		`{"id":"b2","impid":"s1","mtype":2,"adomain":["brand.com"],"cat":["IAB2"]}`,
		`{"id":"b3","impid":"s2","mtype":2,"adomain":["shop.brand.com."],"cat":["IAB3"]}`,
		`{"id":"b4","impid":"d","mtype":2,"adomain":["other.com"],"cat":["iab2-3"]}`,
		`{"id":"b5","impid":"d","mtype":2,"adomain":["third.com"],"cat":["IAB5"],"cattax":2}`,
		`{"id":"b6","impid":"d","mtype":2,"adomain":["fourth.com"],"cat":["iab5"],"cattax":2}`,
		`{"id":"b7","impid":"one","mtype":2,"adomain":["brand.com"],"cat":["IAB2"]}`,
		`{"id":"b8","impid":"one","mtype":2,"adomain":["brand.com"],"cat":["IAB2"]}`,
		`{"id":"b9","impid":"x","mtype":2,"adomain":["brand.com"],"cat":["IAB2"]}`,
		`{"id":"b10","impid":"x","mtype":2,"adomain":["brand.com"],"cat":["IAB2"]}`,
		`{"id":"b11","impid":"d","mtype":2,"adomain":["","notbrand.com"],"cat":["","IAB25"]}`,
	)
	const adomainCodes, catCodes = " (205/355)", " (209/357)"
	require.Equal(t, []string{
		"b1 pass",
		"b2 pass", // the same structured slot: an alternative
		"b3 rtb.pod-compliance: competitive separation: adomain shop.brand.com shared with bid b1" + adomainCodes,
		"b4 rtb.pod-compliance: competitive separation: cat iab2-3 shared with bid b1" + catCodes,
		"b5 pass",
		"b6 rtb.pod-compliance: competitive separation: cat iab5 shared with bid b5" + catCodes,
		"b7 pass", "b8 pass", // maxseq 1: one slot
		"b9 pass", "b10 pass", // not a dynamic pod: one slot
		"b11 pass",
	}, podRun(t, podGate("{exclusive: [adomain, cat]}"), req, resp, false))
	// Fields in the order listed.
	got := podRun(t, podGate("{exclusive: [cat, adomain]}"), req, resp, false)
	require.Equal(t, "b3 rtb.pod-compliance: competitive separation: adomain shop.brand.com shared with bid b1"+adomainCodes, got[2])
	require.Equal(t, "b4 rtb.pod-compliance: competitive separation: cat iab2-3 shared with bid b1"+catCodes, got[3])
	// Without exclusive, nothing is separated.
	for _, line := range podRun(t, podGate(""), req, resp, false) {
		require.Contains(t, line, " pass")
	}
	// Only adomain.
	got = podRun(t, podGate("{exclusive: [adomain]}"), req, resp, false)
	require.Equal(t, "b4 pass", got[3])
	require.Equal(t, "b3 rtb.pod-compliance: competitive separation: adomain shop.brand.com shared with bid b1"+adomainCodes, got[2])
}

func TestPodComplianceOptions(t *testing.T) {
	configError(t, "podCompliance", "{exclusive: [adomain, crid]}", "exclusive[1] must be adomain or cat")
	configError(t, "podCompliance", "{podFit: some}", "podFit must be each or all")
	configError(t, "podCompliance", "{podfit: all}", "podfit")
}

// ctvPodPair decodes the 20-bid pod pair (testdata/ctv-pod-*.json: a
// hybrid break of one dynamic imp and two structured slots) into an Eval
// released when the test ends.
func ctvPodPair(tb testing.TB) *engine.Eval {
	tb.Helper()
	req, err := os.ReadFile(filepath.Join("testdata", "ctv-pod-request.json"))
	require.NoError(tb, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "ctv-pod-response.json"))
	require.NoError(tb, err)
	ev := engine.AcquireEval()
	tb.Cleanup(func() { engine.ReleaseEval(ev) })
	require.NoError(tb, ev.DecodeRequest(req))
	require.NoError(tb, ev.DecodeResponse(resp, 1000))
	return ev
}

// ctvPolicy is a policy of both gates with every option that costs.
const ctvPolicy = "policy:\n  gates:\n    - gate: videoCompliance\n      options: {requireDuration: true}\n" +
	"    - gate: podCompliance\n      options: {podFit: all, exclusive: [adomain, cat]}\n"

func ctvSnapshot(tb testing.TB) *engine.Snapshot {
	tb.Helper()
	cfg, err := config.Parse("test.yaml", []byte(ctvPolicy))
	require.NoError(tb, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(ctvPolicy), Builtin())
	require.NoError(tb, err)
	return snap
}

func TestCTVPodPairPasses(t *testing.T) {
	ev := ctvPodPair(t)
	ev.SetDeadline(time.Now(), time.Now().Add(time.Hour))
	out := ev.Run(ctvSnapshot(t), engine.RunOptions{})
	require.True(t, out.Passed(), "%+v", out.Rejected)
	require.Len(t, ev.In.Bids, 20)
	raw, _ := json.Marshal(out.Gates)
	require.NotContains(t, string(raw), `"skipped":true`)
}

func BenchmarkPodCompliance(b *testing.B) {
	benchAVGate(b, mustGate(b, "podCompliance", "{podFit: all, exclusive: [adomain, cat]}"))
}

// BenchmarkCTVPodEngine runs both gates over the 20-bid pod pair through
// the engine (the cost of the pod gate's comparisons with kept bids).
func BenchmarkCTVPodEngine(b *testing.B) {
	ev := ctvPodPair(b)
	ev.SetDeadline(time.Now(), time.Now().Add(time.Hour))
	snap := ctvSnapshot(b)
	b.ReportAllocs()
	for b.Loop() {
		if !ev.Run(snap, engine.RunOptions{}).Passed() {
			b.Fatal("rejected")
		}
	}
}

// benchAVGate measures Prepare and CheckBid over every bid of the 20-bid
// pod pair (per pair; divide by 20 for a bid).
func benchAVGate(b *testing.B, g engine.Gate) {
	ev := ctvPodPair(b)
	bg := g.(engine.BidGate)
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if bg.Prepare(in) != "" {
			b.Fatal("skipped")
		}
		for i := range in.Bids {
			if v := bg.CheckBid(in, &in.Bids[i]); v.Failed() || v.Skipped() {
				b.Fatal(v.Reason)
			}
		}
	}
}

// TestCTVSeatFileExample loads configs/seats/ctv.yaml through seatsDir:
// seat ctv-dsp's bids are judged by both gates, other seats' are not.
func TestCTVSeatFileExample(t *testing.T) {
	name := filepath.Join("..", "configs", "test.yaml")
	text := []byte("seatsDir: seats/\npolicy:\n  gates:\n    - gate: impidMatch\n")
	cfg, err := config.Parse(name, text)
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, name, text, Builtin())
	require.NoError(t, err)
	desc := snap.Describe()
	require.Contains(t, desc, "rtb.video-compliance")
	require.Contains(t, desc, "rtb.pod-compliance")

	req, err := os.ReadFile(filepath.Join("testdata", "ctv-pod-request.json"))
	require.NoError(t, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "ctv-pod-response.json"))
	require.NoError(t, err)
	check := func(resp string) *engine.Report {
		t.Helper()
		rep, ev, err := engine.Check(snap, req, []byte(resp), engine.CheckOptions{LatencyMs: -1})
		require.NoError(t, err)
		engine.ReleaseEval(ev)
		return rep
	}
	// Seat 901's first bid shares p2's advertiser: judged
	// only once seat 901 is the CTV seat.
	bad := strings.Replace(string(resp), `"brand-1.com"`, `"brand-2.com"`, 1)
	bad = strings.Replace(bad, `"seat": "902"`, `"seat": "ctv-dsp"`, 1)
	good := check(string(resp))
	require.True(t, good.Passed, "%+v", good.Rejected)
	require.True(t, check(bad).Passed, "seat 901 is not the CTV seat")
	bad = strings.Replace(bad, `"seat": "901"`, `"seat": "ctv-dsp"`, 1)
	rep := check(bad)
	require.Len(t, rep.Rejected, 1)
	require.Equal(t, "p2", rep.Rejected[0].BidID)
	require.Equal(t, "competitive separation: adomain brand-2.com shared with bid p1", rep.Rejected[0].Reason)
	require.Equal(t, "rtb.pod-compliance", rep.Rejected[0].Gate)

	long := strings.Replace(string(resp), `"dur": 15,`, `"dur": 16,`, 1)
	long = strings.Replace(long, `"seat": "901"`, `"seat": "ctv-dsp"`, 1)
	rep = check(long)
	require.Len(t, rep.Rejected, 1)
	require.Equal(t, "dur 16 does not match VAST duration 15", rep.Rejected[0].Reason)
	require.Equal(t, "rtb.video-compliance", rep.Rejected[0].Gate)
}
