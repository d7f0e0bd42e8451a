//go:build !race

package engine_test

import (
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

// TestRunPassPathAllocs proves the engine's pass path allocates nothing: the
// whole embedded default policy over the typical pair, decoding aside.
func TestRunPassPathAllocs(t *testing.T) {
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, configs.DefaultName, configs.Default, gates.Builtin())
	require.NoError(t, err)
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	ev.SetLatency(20)
	out := ev.Run(snap, engine.RunOptions{Upstream: "dsp"})
	require.True(t, out.Passed(), "%+v", out.Gates)
	require.Equal(t, engine.Forward, out.Action)
	allocs := testing.AllocsPerRun(200, func() {
		ev.Run(snap, engine.RunOptions{Upstream: "dsp"})
	})
	require.Zero(t, allocs)
}

// TestDecodeRunBodyAllocs proves the engine's whole share of a request
// allocates nothing once its pooled Eval is warm: validating and decoding
// the typical pair, the default policy, and writing the answer.
func TestDecodeRunBodyAllocs(t *testing.T) {
	snap := defaultSnapshot(t)
	req, resp := readTypical(t)
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	pass := func() {
		if err := ev.DecodeRequest(req); err != nil {
			t.Fatal(err)
		}
		if err := ev.DecodeResponse(resp, 1000); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ev.SetDeadline(now, now.Add(time.Hour))
		ev.SetLatency(20)
		if out := ev.Run(snap, engine.RunOptions{Upstream: "dsp"}); out.Action != engine.Forward {
			t.Fatalf("typical pair: %v", out.Action)
		}
		if ev.Body() == nil {
			t.Fatal("no body")
		}
	}
	pass()
	require.Zero(t, testing.AllocsPerRun(200, pass))
}

// TestOutcomeAllocs proves the typical reject path allocates nothing once
// the Eval is warm: a bid rejected by impidMatch (without details, which a
// gate builds only when it fails), a warn-mode hit, and every reader of the
// outcome (the verdicts, the response's, the hits).
func TestOutcomeAllocs(t *testing.T) {
	snap := snapshot(t, "policy:\n  gates: [{gate: impidMatch}, {gate: requiredFields, mode: warn}]\n")
	req := []byte(`{"id":"r1","imp":[{"id":"1"}]}`)
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1},{"id":"b2","price":1}]}]}`)
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	var rejected, kept, warned, hits int
	pass := func() {
		if ev.DecodeRequest(req) != nil || ev.DecodeResponse(resp, 1000) != nil {
			t.Fatal("pair does not decode")
		}
		now := time.Now()
		ev.SetDeadline(now, now.Add(time.Hour))
		out := ev.Run(snap, engine.RunOptions{})
		rejected, kept, warned, hits = 0, 0, 0, out.NumHits()
		for i := range out.Bids {
			v := &out.Bids[i]
			switch {
			case v.Rejected() && v.Rejection.Gate == snap.Default.Gates[0]:
				rejected++
			case v.Kept:
				kept++
			}
			if v.Warned() || out.Response.Warned() {
				warned++
			}
		}
		for i := range hits {
			if h, _ := out.Hit(i); h.Gate == "" {
				t.Fatal("hit without a gate")
			}
		}
		if ev.Body() == nil {
			t.Fatal("no body")
		}
	}
	pass()
	require.Equal(t, [2]int{1, 1}, [2]int{rejected, kept})
	require.Positive(t, warned, "requiredFields warns")
	require.Equal(t, 1+warned, hits)
	require.Zero(t, testing.AllocsPerRun(200, pass))
}
