package gates

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// typicalEval decodes the typical pair (a 2 KB response with 3 bids answering
// a matching request) into an Eval the caller releases.
func typicalEval(tb testing.TB) *engine.Eval {
	tb.Helper()
	req, err := os.ReadFile(filepath.Join("testdata", "typical-request.json"))
	require.NoError(tb, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "typical-response.json"))
	require.NoError(tb, err)
	ev := engine.AcquireEval()
	require.NoError(tb, ev.DecodeRequest(req))
	require.NoError(tb, ev.DecodeResponse(resp, 1000))
	return ev
}

// buildGate builds one gate from YAML options ("" for none), as a config
// load does, and returns the gate or the config error.
func buildGate(tb testing.TB, factory, options string) (engine.Gate, error) {
	tb.Helper()
	text := "policy:\n  gates:\n    - gate: " + factory + "\n"
	if options != "" {
		text += "      options: " + options + "\n"
	}
	cfg, err := config.Parse("test.yaml", []byte(text))
	require.NoError(tb, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(text), Builtin())
	if err != nil {
		return nil, err
	}
	return snap.Default.Gates[0].Gate, nil
}

// mustGate is buildGate that fails the test on a config error.
func mustGate(tb testing.TB, factory, options string) engine.Gate {
	tb.Helper()
	g, err := buildGate(tb, factory, options)
	require.NoError(tb, err)
	return g
}

// configError asserts that the options are rejected at load with msg in the error.
func configError(t *testing.T, factory, options, msg string) {
	t.Helper()
	_, err := buildGate(t, factory, options)
	require.Error(t, err, options)
	require.Contains(t, err.Error(), msg)
}

// benchBidGate measures CheckBid over every bid of the typical pair.
func benchBidGate(b *testing.B, g engine.Gate) {
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	bg := g.(engine.BidGate)
	in := &ev.In
	b.ReportAllocs()
	for b.Loop() {
		if bg.Prepare(in) != "" {
			continue
		}
		for i := range in.Bids {
			if v := bg.CheckBid(in, &in.Bids[i]); v.Failed() {
				b.Fatal(v.Reason)
			}
		}
	}
}
