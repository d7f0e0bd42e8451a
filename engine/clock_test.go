package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
)

// TestOneClockReadPerGate: a timed run reads the clock once when it starts
// and once per gate it runs (the end of one gate is the start of the next),
// and each gate's latency is the time between two readings.
func TestOneClockReadPerGate(t *testing.T) {
	snap := defaultSnapshot(t)
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	ev.SetLatency(20)
	reads := 0
	defer engine.SetClock(func() time.Time { reads++; return now.Add(time.Duration(reads) * time.Microsecond) })()
	out := ev.Run(snap, engine.RunOptions{TimeGates: true})
	require.True(t, out.Passed())
	require.True(t, out.Timed)
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

// TestUntimedRunReadsTheClockByWork: without TimeGates the run reads the
// clock when it starts and then once per 64 units of judging (bids judged
// or scanned by a gate, response gates run); no latency is measured.
func TestUntimedRunReadsTheClockByWork(t *testing.T) {
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
	require.False(t, out.Timed)
	for _, g := range out.Gates {
		require.Zero(t, g.LatencyNs, g.Name)
	}
	// Three bids through some twenty gates: under a hundred units.
	require.GreaterOrEqual(t, reads, 1, "one read to start")
	require.LessOrEqual(t, reads, 2, "then one per 64 units")
}

// manyBidPair is a request with one imp and a response of n bids on it.
func manyBidPair(n int) (req, resp []byte) {
	var b strings.Builder
	b.WriteString(`{"id":"r","cur":"USD","seatbid":[{"seat":"s","bid":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"b%d","impid":"1","price":1,"adomain":["a.com"],"crid":"c%d"}`, i, i)
	}
	b.WriteString(`]}]}`)
	return []byte(`{"id":"r","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"domain":"example.com"}}`), []byte(b.String())
}

// TestUntimedRunNoticesTheDeadline: an untimed run still stops at the
// deadline, within 64 units of judging of it.
func TestUntimedRunNoticesTheDeadline(t *testing.T) {
	snap := defaultSnapshot(t)
	for _, timed := range []bool{false, true} {
		req, resp := manyBidPair(300)
		ev := engine.AcquireEval()
		require.NoError(t, ev.DecodeRequest(req))
		require.NoError(t, ev.DecodeResponse(resp, 1000))
		now := time.Now()
		ev.SetLatency(20)
		// Every reading is a millisecond after the last; D is at the
		// fifth, long before the judging of 300 bids by every gate ends.
		reads := 0
		restore := engine.SetClock(func() time.Time { reads++; return now.Add(time.Duration(reads) * time.Millisecond) })
		ev.SetDeadline(now, now.Add(5*time.Millisecond))
		out := ev.Run(snap, engine.RunOptions{TimeGates: timed})
		restore()
		require.True(t, out.DeadlineHit, "timed %v", timed)
		require.Less(t, reads, 10, "timed %v: stopped at the deadline", timed)
		engine.ReleaseEval(ev)
	}
}

// TestUntimedGuardRereadsAfterResponseGates: in an untimed run a guard
// after a response gate reads the clock again (the response gate was
// judging), so a deadline that passed meanwhile is seen.
func TestUntimedGuardRereadsAfterResponseGates(t *testing.T) {
	const yaml = "policy:\n  gates:\n    - gate: currency\n    - gate: tmaxGuard\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, "test.yaml", []byte(yaml), gates.Builtin())
	require.NoError(t, err)
	ev := typicalEval(t)
	defer engine.ReleaseEval(ev)
	now := time.Now()
	ev.SetLatency(20)
	reads := 0
	defer engine.SetClock(func() time.Time { reads++; return now.Add(time.Duration(reads) * time.Hour) })()
	ev.SetDeadline(now, now.Add(90*time.Minute)) // between the first reading and the second
	out := ev.Run(snap, engine.RunOptions{})
	require.Equal(t, 2, reads, "one read to start, one for the guard")
	require.True(t, out.DeadlineHit, "the guard sees the deadline passed during the response gate")
}
