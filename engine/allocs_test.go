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
