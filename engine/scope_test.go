package engine_test

import (
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// scripted is a scanning gate that reports a fixed list of entries, in
// order: bid >= 0 a bid hit, -1 a response-level hit, -2 a response-level
// scan limit overrun.
type scripted struct{ script []scriptHit }

type scriptHit struct {
	bid    int
	reason string
}

func (g *scripted) Kind() engine.Kind { return engine.Scan }

func (g *scripted) Scan(_ *engine.Input, sc *engine.Scope) {
	for _, h := range g.script {
		v := engine.Reject(h.reason, 1, 1)
		switch {
		case h.bid == -2:
			sc.Overrun(-1, v)
		case !sc.Hit(h.bid, v):
			return
		}
	}
}

// scriptedCheck runs the pair under a default policy holding only the
// scripted gate: policy adds policy keys, mode is the gate's mode.
func scriptedCheck(t *testing.T, policy, mode string, all bool, script ...scriptHit) *engine.Report {
	t.Helper()
	reg := gates.Builtin()
	reg["scripted"] = engine.Factory{Name: "scripted", ResultName: "scripted", Kind: engine.Scan,
		New: func(any, engine.Env) (engine.Gate, error) { return &scripted{script: script}, nil }}
	yaml := "policy:\n" + policy + "  gates:\n    - gate: scripted\n      mode: " + mode + "\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(yaml), reg)
	require.NoError(t, err)
	rep, ev, err := engine.Check(snap, []byte(pairReq), []byte(pairResp), engine.CheckOptions{LatencyMs: -1, All: all})
	require.NoError(t, err)
	engine.ReleaseEval(ev)
	return rep
}

func TestScopeResponseHitIsTheOnlyEntry(t *testing.T) {
	bidsThenResp := []scriptHit{{0, "a"}, {2, "c"}, {-1, "r"}}
	respThenBids := []scriptHit{{-1, "r"}, {0, "a"}, {2, "c"}}
	every := []brief{{"b1", "scripted", "a"}, {"b3", "scripted", "c"}, {"", "scripted", "r"}}
	for _, script := range [][]scriptHit{bidsThenResp, respThenBids} {
		for _, policy := range []string{"", "  failFast: false\n"} {
			rep := scriptedCheck(t, policy, "enforce", false, script...)
			require.Equal(t, []brief{{"", "scripted", "r"}}, briefs(rep.Rejected), "%v %q", script, policy)
			require.Equal(t, "r", gate(rep, "default", "scripted").Reason)
		}
		// Under shadow the would-be rejection is the only warning.
		rep := scriptedCheck(t, "  action: shadow\n", "enforce", false, script...)
		require.Equal(t, []brief{{"", "scripted", "r"}}, briefs(rep.Warned))
		// check --all lists every hit, by bid, the response last.
		rep = scriptedCheck(t, "", "enforce", true, script...)
		require.Equal(t, every, briefs(rep.Rejected))
		// In warn mode nothing is rejected: every hit is warned.
		rep = scriptedCheck(t, "", "warn", false, script...)
		require.Empty(t, rep.Rejected)
		require.Equal(t, every, briefs(rep.Warned))
		require.Equal(t, "r", gate(rep, "default", "scripted").Reason)
	}
}

func TestScopeOverrunKeepsTheBidsHits(t *testing.T) {
	rep := scriptedCheck(t, "", "enforce", false, scriptHit{0, "a"}, scriptHit{0, "again"}, scriptHit{-2, "limit"})
	require.Equal(t, []brief{{"b1", "scripted", "a"}, {"", "scripted", "limit"}}, briefs(rep.Rejected))
	require.Equal(t, "a", gate(rep, "default", "scripted").Reason)
	// A response-level hit wins over a later overrun.
	rep = scriptedCheck(t, "  failFast: false\n", "enforce", true, scriptHit{-1, "r"}, scriptHit{-2, "limit"})
	require.Equal(t, []brief{{"", "scripted", "r"}}, briefs(rep.Rejected))
	// The overrun alone names the gate's reason.
	rep = scriptedCheck(t, "", "enforce", false, scriptHit{-2, "limit"})
	require.Equal(t, "limit", gate(rep, "default", "scripted").Reason)
}
