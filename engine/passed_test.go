package engine_test

import (
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// passedProbe is a per-bid gate that records, for each bid it judges, the
// bids before it that Input.Passed reports, and fails the bids named in
// fail.
type passedProbe struct {
	fail map[string]bool
	seen *[]string
}

func (p *passedProbe) Kind() engine.Kind            { return engine.PerBid }
func (p *passedProbe) Prepare(*engine.Input) string { return "" }
func (p *passedProbe) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	var kept []string
	for j := range in.Bids {
		if &in.Bids[j] == b {
			break
		}
		if in.Passed(j) {
			kept = append(kept, in.Bids[j].ID)
		}
	}
	*p.seen = append(*p.seen, b.ID+":"+strings.Join(kept, ","))
	if p.fail[b.ID] {
		return engine.Reject("probe", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

// TestPassedSeesStandingBids: Passed holds the bids the running gate
// passed, never one an earlier gate rejected, and is empty outside a run.
func TestPassedSeesStandingBids(t *testing.T) {
	run := func(yaml string, fail ...string) []string {
		t.Helper()
		var seen []string
		reg := gates.Builtin()
		probe := &passedProbe{fail: map[string]bool{}, seen: &seen}
		for _, id := range fail {
			probe.fail[id] = true
		}
		reg["probe"] = engine.Factory{Name: "probe", ResultName: "probe", Kind: engine.PerBid,
			New: func(any, engine.Env) (engine.Gate, error) { return probe, nil }}
		cfg, err := config.Parse("test.yaml", []byte(yaml))
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, "test.yaml", []byte(yaml), reg)
		require.NoError(t, err)
		rep, ev, err := engine.Check(snap, []byte(pairReq), []byte(pairResp), engine.CheckOptions{LatencyMs: -1})
		require.NoError(t, err)
		require.NotNil(t, rep)
		require.False(t, ev.In.Passed(0), "nothing is passed outside a gate's run")
		engine.ReleaseEval(ev)
		return seen
	}
	// b2 names no imp: impidMatch rejects it first. With failFast it is
	// not judged; without, it is judged but never passed.
	const ff = "policy:\n  gates:\n    - gate: impidMatch\n    - gate: probe\n"
	require.Equal(t, []string{"b1:", "b3:b1"}, run(ff))
	const all = "policy:\n  failFast: false\n  gates:\n    - gate: impidMatch\n    - gate: probe\n"
	require.Equal(t, []string{"b1:", "b2:b1", "b3:b1"}, run(all))
	// A bid the gate fails is not passed, in mode warn too.
	require.Equal(t, []string{"b1:", "b2:", "b3:b2"}, run("policy:\n  gates:\n    - gate: probe\n      mode: warn\n", "b1"))
	// Each run starts empty.
	require.Equal(t, []string{"b1:", "b2:b1", "b3:b1,b2", "b1:", "b2:b1", "b3:b1,b2"},
		run("policy:\n  gates:\n    - gate: probe\n    - gate: probe\n      name: probe2\n"))
}

// skipProbe is a per-bid gate that skips the bids named in skip (with the
// reason given there) and fails the bids named in fail.
type skipProbe struct {
	skip map[string]string
	fail map[string]bool
}

func (p *skipProbe) Kind() engine.Kind            { return engine.PerBid }
func (p *skipProbe) Prepare(*engine.Input) string { return "" }
func (p *skipProbe) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	if why, ok := p.skip[b.ID]; ok {
		return engine.Skip(why)
	}
	if p.fail[b.ID] {
		return engine.Reject("probe", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

// TestBidGateSkipReason: a per-bid gate that judged no bid is skipped, and
// says why: the first bid's own skip reason, failFast when every bid was
// already rejected, "no bids" otherwise.
func TestBidGateSkipReason(t *testing.T) {
	run := func(yaml string, probes map[string]*skipProbe) map[string]engine.GateResult {
		t.Helper()
		reg := gates.Builtin()
		for name, p := range probes {
			reg[name] = engine.Factory{Name: name, ResultName: name, Kind: engine.PerBid,
				New: func(any, engine.Env) (engine.Gate, error) { return p, nil }}
		}
		cfg, err := config.Parse("test.yaml", []byte(yaml))
		require.NoError(t, err)
		snap, err := engine.Compile(cfg, "test.yaml", []byte(yaml), reg)
		require.NoError(t, err)
		rep := check(t, snap, engine.CheckOptions{})
		got := map[string]engine.GateResult{}
		for _, r := range rep.Gates {
			got[r.Name] = r
		}
		return got
	}
	every := map[string]bool{"b1": true, "b2": true, "b3": true}

	got := run("policy:\n  gates:\n    - gate: skipper\n", map[string]*skipProbe{
		"skipper": {skip: map[string]string{"b1": "b1 has no adm", "b2": "b2 has no adm", "b3": "b3 has no adm"}}})
	require.True(t, got["skipper"].Skipped)
	require.Equal(t, "b1 has no adm", got["skipper"].Reason, "the first bid's skip reason")

	got = run("policy:\n  gates:\n    - gate: skipper\n", map[string]*skipProbe{
		"skipper": {skip: map[string]string{"b2": "b2 has no adm", "b3": "b3 has no adm"}}})
	require.False(t, got["skipper"].Skipped, "one bid judged: the gate ran")
	require.True(t, got["skipper"].Passed)

	got = run("policy:\n  gates:\n    - gate: rejecter\n    - gate: skipper\n", map[string]*skipProbe{
		"rejecter": {fail: every}, "skipper": {}})
	require.False(t, got["rejecter"].Passed)
	require.True(t, got["skipper"].Skipped)
	require.Equal(t, engine.ReasonSkipFailFast, got["skipper"].Reason, "every bid already rejected")

	got = run("policy:\n  failFast: false\n  gates:\n    - gate: rejecter\n    - gate: skipper\n", map[string]*skipProbe{
		"rejecter": {fail: every}, "skipper": {}})
	require.False(t, got["skipper"].Skipped, "without failFast the rejected bids are judged")
}
