package gates

import (
	"testing"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestTmaxGuardRemaining(t *testing.T) {
	g := mustGate(t, "tmaxGuard", "").(engine.DeadlineGate)
	arrival := time.Unix(100, 0)
	f := func(elapsed time.Duration, want string) {
		t.Helper()
		var in engine.Input
		in.Arrival, in.Deadline = arrival, arrival.Add(95*time.Millisecond)
		in.FreezeClock(arrival.Add(elapsed))
		v := g.CheckDeadline(&in)
		if want == "" {
			require.False(t, v.Expired(), elapsed)
			return
		}
		require.True(t, v.Expired(), elapsed)
		require.Equal(t, want, v.Reason)
	}
	f(90*time.Millisecond, "")
	f(91*time.Millisecond, "tmax budget exhausted (4ms left, buffer 5ms)")
	f(90500*time.Microsecond, "tmax budget exhausted (4.5ms left, buffer 5ms)")
	f(90123456*time.Nanosecond, "tmax budget exhausted (4.877ms left, buffer 5ms)")
	f(200*time.Millisecond, "tmax budget exhausted (-105ms left, buffer 5ms)")
}

func TestTmaxGuardOptions(t *testing.T) {
	configError(t, "tmaxGuard", "{bufferMs: -1}", "bufferMs must be >= 0")
	configError(t, "tmaxGuard", "{buffer: 3}", `unknown option "buffer"`)
	configError(t, "tmaxGuard", "{bufferMs: fast}", `policy.gates[0].options.bufferMs: want a number, got "fast"`)
	mustGate(t, "tmaxGuard", "{bufferMs: 0}")
}

func TestTmaxGuardRejectsWarnMode(t *testing.T) {
	text := "policy:\n  gates:\n    - {gate: tmaxGuard, mode: warn}\n"
	cfg, err := config.Parse("t.yaml", []byte(text))
	require.NoError(t, err)
	_, err = engine.Compile(cfg, "t.yaml", []byte(text), Builtin())
	require.ErrorContains(t, err, "tmaxGuard accepts only enforce and off")
}

func BenchmarkTmaxGuard(b *testing.B) {
	g := mustGate(b, "tmaxGuard", "").(engine.DeadlineGate)
	ev := typicalEval(b)
	defer engine.ReleaseEval(ev)
	ev.SetDeadline(time.Now(), time.Now().Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if g.CheckDeadline(&ev.In).Expired() {
			b.Fatal("expired")
		}
	}
}
