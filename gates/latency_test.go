package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestLatencyThreshold(t *testing.T) {
	g := mustGate(t, "latency", "{maxMs: 100}").(engine.ResponseGate)
	f := func(ms float64, known bool, want string, skip bool) {
		t.Helper()
		in := engine.Input{LatencyMs: ms, LatencyKnown: known}
		v := g.CheckResponse(&in)
		require.Equal(t, skip, v.Skipped())
		require.Equal(t, want, v.Reason)
		if want != "" && !skip {
			require.True(t, v.Failed())
			require.Equal(t, [2]int{2, 101}, [2]int{v.Loss, v.NBR})
		}
	}
	f(100, true, "", false)
	f(99.9, true, "", false)
	f(100.25, true, "latency 100.25ms exceeds 100ms threshold", false)
	f(143, true, "latency 143ms exceeds 100ms threshold", false)
	f(0, false, "no latency_ms provided", true)
}

func TestLatencyOptions(t *testing.T) {
	configError(t, "latency", "", "maxMs is required")
	configError(t, "latency", "{maxMs: 0}", "maxMs is required and must be > 0")
	configError(t, "latency", "{maxMs: -5}", "must be > 0")
	configError(t, "latency", "{maxMs: .inf}", "finite")
	configError(t, "latency", "{maxMS: 5}", `unknown option "maxMS"`)
}

func BenchmarkLatency(b *testing.B) {
	g := mustGate(b, "latency", "{maxMs: 100}").(engine.ResponseGate)
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	ev.SetLatency(42)
	b.ReportAllocs()
	for b.Loop() {
		if g.CheckResponse(&ev.In).Failed() {
			b.Fatal("failed")
		}
	}
}
