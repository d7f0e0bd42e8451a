package engine_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

func snapshot(t testing.TB, yaml string) *engine.Snapshot {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	require.NoError(t, err)
	s, err := engine.Compile(cfg, "test.yaml", []byte(yaml), gates.Builtin())
	require.NoError(t, err)
	return s
}

func compileErr(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		return err.Error()
	}
	_, err = engine.Compile(cfg, "test.yaml", []byte(yaml), gates.Builtin())
	require.Error(t, err, yaml)
	return err.Error()
}

const pairReq = `{"id":"r1","tmax":100,"imp":[{"id":"1","bidfloor":0.5},{"id":"2"}]}`

// pairResp: b1 is good; b2 has an unknown impid and no price; b3 (seat 777) costs 40.
const pairResp = `{"id":"r1","seatbid":[
 {"seat":"512","bid":[{"id":"b1","impid":"1","price":1,"ext":{ "k" : [1, 2] }},{"id":"b2","impid":"9"}]},
 {"seat":"777","bid":[{"id":"b3","impid":"2","price":40,"adm":"<a href=\"x\">&</a>"}]}]}`

func check(t *testing.T, snap *engine.Snapshot, opt engine.CheckOptions) *engine.Report {
	t.Helper()
	if opt.LatencyMs == 0 {
		opt.LatencyMs = -1
	}
	rep, ev, err := engine.Check(snap, []byte(pairReq), []byte(pairResp), opt)
	require.NoError(t, err)
	engine.ReleaseEval(ev)
	return rep
}

type brief struct{ bid, gate, reason string }

func briefs(h []engine.Hit) []brief {
	out := []brief{}
	for _, x := range h {
		out = append(out, brief{x.BidID, x.Gate, x.Reason})
	}
	return out
}

func gate(rep *engine.Report, policy, name string) engine.GateResult {
	for _, g := range rep.Gates {
		if g.Policy == policy && g.Name == name {
			return g
		}
	}
	return engine.GateResult{Name: "missing"}
}

const twoGates = `
policy:
  failFast: %s
  gates:
    - gate: impidMatch
    - gate: bidSanity
`

func TestFailFastSkipsRejectedBids(t *testing.T) {
	rep := check(t, snapshot(t, strings.Replace(twoGates, "%s", "true", 1)), engine.CheckOptions{})
	require.False(t, rep.Passed)
	require.Equal(t, "filter", rep.Action)
	require.Equal(t, []brief{{"b2", "rtb.impid-match", "bid impid not present in request"}}, briefs(rep.Rejected))
	// bidSanity never saw b2, so it passed the bids it judged.
	require.True(t, gate(rep, "default", "rtb.bid-sanity").Passed)
}

func TestNoFailFastRunsEveryGate(t *testing.T) {
	snap := snapshot(t, strings.Replace(twoGates, "%s", "false", 1))
	rep := check(t, snap, engine.CheckOptions{})
	// One entry per removed bid without --all ...
	require.Equal(t, []brief{{"b2", "rtb.impid-match", "bid impid not present in request"}}, briefs(rep.Rejected))
	// ... but the gate that also failed reports it.
	g := gate(rep, "default", "rtb.bid-sanity")
	require.False(t, g.Passed)
	require.Equal(t, "bid missing price", g.Reason)

	all := check(t, snapshot(t, strings.Replace(twoGates, "%s", "true", 1)), engine.CheckOptions{All: true})
	require.Equal(t, []brief{
		{"b2", "rtb.impid-match", "bid impid not present in request"},
		{"b2", "rtb.bid-sanity", "bid missing price"},
	}, briefs(all.Rejected), "--all: one entry per bid and failing gate, by bid then gate")
}

func TestModes(t *testing.T) {
	rep := check(t, snapshot(t, `
policy:
  gates:
    - {gate: impidMatch, mode: warn}
    - {gate: bidSanity, mode: "off"}
`), engine.CheckOptions{})
	require.True(t, rep.Passed)
	require.Equal(t, "forward", rep.Action)
	require.Equal(t, []brief{{"b2", "rtb.impid-match", "bid impid not present in request"}}, briefs(rep.Warned))
	g := gate(rep, "default", "rtb.impid-match")
	require.False(t, g.Passed, "a warn-mode hit shows passed: false")
	off := gate(rep, "default", "rtb.bid-sanity")
	require.True(t, off.Skipped)
	require.Equal(t, "off", off.Reason)
	require.Equal(t, "warn", g.Mode)
}

// A gate in mode off is listed as skipped with reason off, never run, also
// when a stop before it (failFast, a timeout, tmaxGuard, the bids limit)
// skips every other later gate (docs/gates.md "Modes", docs/design.md "check").
func TestOffAfterAStopIsOff(t *testing.T) {
	const cfg = `
limits: {maxBids: %d}
policy:
  gates:
    - gate: tmaxGuard
    - gate: responseId
    - {gate: impidMatch, mode: "off"}
    - gate: bidSanity
seats:
  "777":
    addGates: [{gate: floor, mode: "off"}]
`
	f := func(maxBids int, elapsedMs int64, resp string, stop string) {
		t.Helper()
		snap := snapshot(t, strings.Replace(cfg, "%d", fmt.Sprint(maxBids), 1))
		rep, ev, err := engine.Check(snap, []byte(pairReq), []byte(resp), engine.CheckOptions{ElapsedMs: elapsedMs, LatencyMs: -1})
		require.NoError(t, err)
		defer engine.ReleaseEval(ev)
		for _, g := range rep.Gates {
			if g.Name == "rtb.impid-match" || g.Name == "rtb.floor" {
				require.Equal(t, "off", g.Reason, "%s:%s after %s", g.Policy, g.Name, stop)
				require.True(t, g.Skipped)
				require.True(t, g.Passed)
			}
			if g.Name == "rtb.bid-sanity" && g.Policy == "default" {
				require.Equal(t, stop, g.Reason, "the gates that are not off report the stop")
			}
		}
	}
	wrongID := strings.Replace(pairResp, `"id":"r1"`, `"id":"other"`, 1)
	f(1000, 0, wrongID, "bidguard:skipped (failFast)")
	f(1000, 92, pairResp, "bidguard:skipped (tmax)")
	f(1, 0, pairResp, "bidguard:skipped (bids limit)")

	snap := snapshot(t, "policy:\n  gates:\n    - gate: responseId\n    - {gate: impidMatch, mode: \"off\"}\n")
	rep := check(t, snap, engine.CheckOptions{ElapsedMs: 96})
	require.Equal(t, "bidguard:timeout", gate(rep, "default", "rtb.response-id").Reason)
	require.Equal(t, "off", gate(rep, "default", "rtb.impid-match").Reason)
}

func TestShadow(t *testing.T) {
	rep := check(t, snapshot(t, `
policy:
  action: shadow
  gates:
    - gate: impidMatch
    - gate: bidSanity
`), engine.CheckOptions{})
	require.True(t, rep.Passed)
	require.Empty(t, rep.Rejected)
	require.Equal(t, "forward", rep.Action)
	// failFast skips as if the would-be rejection had been made.
	require.Equal(t, []brief{{"b2", "rtb.impid-match", "bid impid not present in request"}}, briefs(rep.Warned))
	var body struct {
		SeatBid []struct {
			Bid []map[string]any `json:"bid"`
		} `json:"seatbid"`
	}
	require.NoError(t, json.Unmarshal(rep.Response, &body))
	require.Len(t, body.SeatBid[0].Bid, 2, "shadow forwards everything")
}

func TestDeadlineInsideGates(t *testing.T) {
	cfg := `
policy:
  onDeadline: %s
  gates:
    - gate: impidMatch
    - gate: bidSanity
`
	rep := check(t, snapshot(t, strings.Replace(cfg, "%s", "drop", 1)), engine.CheckOptions{ElapsedMs: 95})
	require.False(t, rep.Passed)
	require.Equal(t, "no-bid", rep.Action)
	g := gate(rep, "default", "rtb.impid-match")
	require.Equal(t, "bidguard:timeout", g.Reason)
	require.False(t, g.Passed)
	require.Equal(t, "bidguard:skipped (timeout)", gate(rep, "default", "rtb.bid-sanity").Reason)
	require.Equal(t, []engine.Hit{{Gate: "rtb.impid-match", Reason: "bidguard:timeout", Loss: 2, NBR: 101, Bid: -1, Policy: "default"}}, rep.Rejected)

	fwd := check(t, snapshot(t, strings.Replace(cfg, "%s", "forward", 1)), engine.CheckOptions{ElapsedMs: 95})
	require.True(t, fwd.Passed)
	require.Equal(t, "forward", fwd.Action)

	early := check(t, snapshot(t, strings.Replace(cfg, "%s", "drop", 1)), engine.CheckOptions{ElapsedMs: 94})
	require.Equal(t, "filter", early.Action, "1ms before D the gates run")
}

func TestSeatPolicies(t *testing.T) {
	snap := snapshot(t, `
upstreams: [{name: up, url: "http://127.0.0.1:1/", path: /}]
policy:
  gates:
    - gate: tmaxGuard
    - gate: impidMatch
    - gate: bidSanity
seats:
  "777":
    gateOptions: {rtb.bid-sanity: {options: {maxPrice: 30}}}
  up/777:
    failFast: false
    replaceGates: true
    gates: [{gate: bidSanity, options: {maxPrice: 10}}]
`)
	rep := check(t, snap, engine.CheckOptions{})
	require.Equal(t, []brief{
		{"b2", "rtb.impid-match", "bid impid not present in request"},
		{"b3", "rtb.bid-sanity", "bid price 40 exceeds maxPrice 30"},
	}, briefs(rep.Rejected), "check has no upstream: the bare seat key applies")
	var names []string
	for _, g := range rep.Gates {
		names = append(names, g.Policy+":"+g.Name)
	}
	require.Equal(t, []string{"default:rtb.tmax-guard", "default:rtb.impid-match", "default:rtb.bid-sanity",
		"777:rtb.impid-match", "777:rtb.bid-sanity"}, names, "seat policies inherit per-bid gates, not tmaxGuard")
	require.Equal(t, "777", snap.PolicyFor("", "777").Key)
	require.Equal(t, "up/777", snap.PolicyFor("up", "777").Key)
	require.Equal(t, "777", snap.PolicyFor("other", "777").Key)
	require.Equal(t, "default", snap.PolicyFor("up", "512").Key)
}

func TestBidsLimit(t *testing.T) {
	snap := snapshot(t, "limits: {maxBids: 2}\npolicy:\n  gates: [{gate: impidMatch}]\n")
	rep := check(t, snap, engine.CheckOptions{})
	require.Equal(t, "no-bid", rep.Action)
	require.Equal(t, []engine.Hit{{Gate: "limits.maxBids", Reason: "bids limit exceeded", Loss: 3, NBR: 300, Bid: -1, Policy: "default"}}, rep.Rejected)
	require.Equal(t, "bidguard:skipped (bids limit)", gate(rep, "default", "rtb.impid-match").Reason)
}

func TestForwardedBody(t *testing.T) {
	snap := snapshot(t, "policy:\n  gates: [{gate: impidMatch}]\n")
	rep := check(t, snap, engine.CheckOptions{})
	body := string(rep.Response)
	require.Contains(t, body, `"ext":{ "k" : [1, 2] }`, "ext kept byte for byte")
	require.Contains(t, body, `<a href=\"x\">&</a>`, "adm not HTML-escaped")
	var out map[string]any
	require.NoError(t, json.Unmarshal(rep.Response, &out))
	ids := []string{}
	for _, sb := range out["seatbid"].([]any) {
		for _, b := range sb.(map[string]any)["bid"].([]any) {
			ids = append(ids, b.(map[string]any)["id"].(string))
		}
	}
	require.Equal(t, []string{"b1", "b3"}, ids)
}

func TestSeatNonBid(t *testing.T) {
	snap := snapshot(t, "policy:\n  seatNonBid: true\n  gates: [{gate: impidMatch}, {gate: latency, options: {maxMs: 10}}]\n")
	rep := check(t, snap, engine.CheckOptions{LatencyMs: 50})
	require.Equal(t, "no-bid", rep.Action)
	var out struct {
		ID      string `json:"id"`
		SeatBid []any  `json:"seatbid"`
		Ext     struct {
			SeatNonBid []struct {
				Seat   string `json:"seat"`
				NonBid []struct {
					ImpID      string `json:"impid"`
					StatusCode int    `json:"statuscode"`
					Ext        struct {
						Bidguard struct{ Gate, Reason, BidID string } `json:"bidguard"`
					} `json:"ext"`
				} `json:"nonbid"`
			} `json:"seatnonbid"`
		} `json:"ext"`
	}
	require.NoError(t, json.Unmarshal(rep.Response, &out))
	require.Equal(t, "r1", out.ID)
	require.Empty(t, out.SeatBid)
	// b2's own rejection, then the response-level one under every seat for every imp.
	require.Len(t, out.Ext.SeatNonBid, 2)
	require.Equal(t, "512", out.Ext.SeatNonBid[0].Seat)
	require.Len(t, out.Ext.SeatNonBid[0].NonBid, 3)
	require.Equal(t, "9", out.Ext.SeatNonBid[0].NonBid[0].ImpID)
	require.Equal(t, 300, out.Ext.SeatNonBid[0].NonBid[0].StatusCode)
	require.Equal(t, "latency", out.Ext.SeatNonBid[0].NonBid[1].Ext.Bidguard.Gate)
	require.Equal(t, 101, out.Ext.SeatNonBid[1].NonBid[0].StatusCode)
}

// TestCompileErrors: the errors only the gate registry can find (the
// config's own are config.TestConfigErrors).
func TestCompileErrors(t *testing.T) {
	f := func(yaml string, msgs ...string) {
		t.Helper()
		got := compileErr(t, yaml)
		for _, m := range msgs {
			require.Contains(t, got, m)
		}
	}
	f("policy:\n  gates: [{gate: nope}]\n", `unknown gate "nope"`)
	f("policy:\n  gates: [{gate: impidMatch}, {gate: impidMatch}]\n", `two gates have the result name "rtb.impid-match"`)
	f("policy:\n  gates: [{gate: impidMatch, mode: loud}]\n", `mode: "loud" is not enforce, warn or off`)
	f("policy:\n  gates: [{gate: bidSanity, options: {maxPrice: -1}}, {gate: latency}]\n", "maxPrice must be > 0", "maxMs is required")
	base := "policy:\n  gates: [{gate: tmaxGuard}, {gate: impidMatch}, {gate: latency, options: {maxMs: 5}}]\nseats:\n"
	f(base+"  a: {addGates: [{gate: latency, options: {maxMs: 1}}]}\n", `latency is a response gate`)
	f(base+"  a: {addGates: [{gate: tmaxGuard}]}\n", `tmaxGuard is a response gate`)
	f(base+"  a: {gateOptions: {rtb.bid-sanity: {mode: warn}}}\n", `gateOptions names "rtb.bid-sanity", which the seat does not inherit`)
	f(base+"  a: {gateOptions: {latency: {mode: warn}}}\n", `gateOptions names "latency"`)
	f("policy:\n  currencyRates: {EURUSD: 1, USD/EUR: 0}\n", `"EURUSD" is not BASE/QUOTE`, `"USD/EUR" must be > 0`)
	f("policy:\n  gates: [{gate: tmaxGuard, options: {bufferMs: 7}}]\n", "deadline.gateReserveMs: 7 must be at least tmaxGuard bufferMs + 1 (8)")
	f("upstreams: [{name: a, url: 'http://127.0.0.1:1/', deadline: {gateReserveMs: 3}}]\npolicy:\n  gates: [{gate: tmaxGuard}]\n",
		"upstreams[0].deadline.gateReserveMs: 3 must be at least tmaxGuard bufferMs + 1 (6)")
}

func TestValidConfigWithoutGatesWarns(t *testing.T) {
	snap := snapshot(t, "listen: 127.0.0.1:8081\npolicy:\n  gates: []\n")
	require.Equal(t, []string{"policy.gates is empty: every bid is forwarded unjudged"}, snap.Warnings)
	rep := check(t, snap, engine.CheckOptions{})
	require.True(t, rep.Passed)
	require.Equal(t, "forward", rep.Action)
}

func TestVersionIsStable(t *testing.T) {
	a := snapshot(t, "policy:\n  gates: [{gate: bidSanity}]\n")
	b := snapshot(t, "policy:\n  gates: [{gate: bidSanity}]\n")
	c := snapshot(t, "policy:\n  gates: [{gate: bidSanity, options: {maxPrice: 3}}]\n")
	require.Len(t, a.Version, 12)
	require.Equal(t, a.Version, b.Version)
	require.NotEqual(t, a.Version, c.Version)
	d := snapshot(t, "policy:\n  gates: [{gate: bidSanity, options: {maxPrice: 3}}]\n")
	require.Equal(t, c.Version, d.Version, "options holding pointers hash by value")
}
