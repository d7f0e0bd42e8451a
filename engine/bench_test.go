package engine_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
	"github.com/stretchr/testify/require"
)

func readTypical(tb testing.TB) (req, resp []byte) {
	tb.Helper()
	req, err := os.ReadFile("testdata/typical-request.json")
	require.NoError(tb, err)
	resp, err = os.ReadFile("testdata/typical-response.json")
	require.NoError(tb, err)
	return req, resp
}

func typicalEval(tb testing.TB) *engine.Eval {
	tb.Helper()
	req, resp := readTypical(tb)
	ev := engine.AcquireEval()
	require.NoError(tb, ev.DecodeRequest(req))
	require.NoError(tb, ev.DecodeResponse(resp, 1000))
	return ev
}

func defaultSnapshot(tb testing.TB) *engine.Snapshot {
	tb.Helper()
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(tb, err)
	snap, err := engine.Compile(cfg, configs.DefaultName, configs.Default, gates.Builtin())
	require.NoError(tb, err)
	return snap
}

// compact is doc without white space, as exchanges and bidders send it.
func compact(tb testing.TB, doc []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, json.Compact(&buf, doc))
	return buf.Bytes()
}

// benchDecode runs decode on doc again and again into one Eval.
func benchDecode(b *testing.B, doc []byte, decode func(*engine.Eval, []byte) error) {
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := decode(ev, doc); err != nil {
			b.Fatal(err)
		}
	}
}

func decodeRequest(ev *engine.Eval, doc []byte) error  { return ev.DecodeRequest(doc) }
func decodeResponse(ev *engine.Eval, doc []byte) error { return ev.DecodeResponse(doc, 1000) }

// BenchmarkDecodeRequest decodes the typical request again and again into
// one Eval: validation and decoding into the pooled structs.
func BenchmarkDecodeRequest(b *testing.B) {
	req, _ := readTypical(b)
	benchDecode(b, req, decodeRequest)
}

// BenchmarkDecodeRequestCompact is BenchmarkDecodeRequest on the typical
// request without white space, as exchanges send it.
func BenchmarkDecodeRequestCompact(b *testing.B) {
	req, _ := readTypical(b)
	benchDecode(b, compact(b, req), decodeRequest)
}

// BenchmarkDecodeResponse is the same for the typical response (3 bids).
func BenchmarkDecodeResponse(b *testing.B) {
	_, resp := readTypical(b)
	benchDecode(b, resp, decodeResponse)
}

// BenchmarkDecodeResponseCompact is BenchmarkDecodeResponse on the typical
// response without white space, as bidders send it.
func BenchmarkDecodeResponseCompact(b *testing.B) {
	_, resp := readTypical(b)
	benchDecode(b, compact(b, resp), decodeResponse)
}

// BenchmarkBody writes the answer of the typical pair (all 3 bids passed).
func BenchmarkBody(b *testing.B) {
	snap := defaultSnapshot(b)
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	if !ev.Run(snap, engine.RunOptions{}).Passed() {
		b.Fatal("typical pair rejected")
	}
	b.ReportAllocs()
	for b.Loop() {
		if ev.Body() == nil {
			b.Fatal("no body")
		}
	}
}

// BenchmarkDefaultPolicy runs the embedded default policy on the decoded
// typical pair: the engine's own cost, decoding excluded.
func BenchmarkDefaultPolicy(b *testing.B) {
	snap := defaultSnapshot(b)
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if !ev.Run(snap, engine.RunOptions{}).Passed() {
			b.Fatal("typical pair rejected")
		}
	}
}

// BenchmarkCheck is the whole `check` evaluation: decode both, run, encode.
func BenchmarkCheck(b *testing.B) {
	snap := defaultSnapshot(b)
	req, resp := readTypical(b)
	b.ReportAllocs()
	for b.Loop() {
		rep, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: -1})
		if err != nil || !rep.Passed {
			b.Fatal(err)
		}
		engine.ReleaseEval(ev)
	}
}

// BenchmarkDefaultPolicyEnforced is the default policy without its warn-mode
// scanning gates (pii, content): the 10 µs budget.
func BenchmarkDefaultPolicyEnforced(b *testing.B) {
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(b, err)
	kept := cfg.Policy.Gates[:0]
	for _, g := range cfg.Policy.Gates {
		if g.Mode != "warn" {
			kept = append(kept, g)
		}
	}
	cfg.Policy.Gates = kept
	snap, err := engine.Compile(cfg, configs.DefaultName, configs.Default, gates.Builtin())
	require.NoError(b, err)
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if !ev.Run(snap, engine.RunOptions{}).Passed() {
			b.Fatal("typical pair rejected")
		}
	}
}
