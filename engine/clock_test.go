package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
)

// TestOneClockReadPerGate: the run reads the clock once when it starts and
// once per gate it runs (the end of one gate is the start of the next), and
// each gate's latency is the time between two readings.
func TestOneClockReadPerGate(t *testing.T) {
	snap := defaultSnapshot(t)
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	ev.SetLatency(20)
	reads := 0
	defer engine.SetClock(func() time.Time { reads++; return now.Add(time.Duration(reads) * time.Microsecond) })()
	out := ev.Run(snap, engine.RunOptions{})
	require.True(t, out.Passed())
	ran := 0
	for _, g := range out.Gates {
		if g.LatencyNs != 0 { // the engine ran it (it may have skipped itself)
			ran++
			require.Equal(t, int64(time.Microsecond), g.LatencyNs, "%s: the time between two readings", g.Name)
		}
	}
	require.Greater(t, ran, 10)
	require.Equal(t, ran+1, reads, "one read to start, one per gate run")
}
