package rtb

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

func hits(n int) *engine.Outcome {
	out := &engine.Outcome{}
	for i := range n {
		out.Rejected = append(out.Rejected, engine.Hit{Seat: "512", BidID: fmt.Sprintf("b%d", i), ImpID: "1", Gate: "rtb.bid-sanity", Reason: "bid missing price", Bid: i})
	}
	return out
}

// TestRejectionLogRateLimited: at most rate lines a second; the rest are
// counted and reported with the next line written.
func TestRejectionLogRateLimited(t *testing.T) {
	var buf syncBuffer
	m := newMeters()
	r := rejectLog{log: slog.New(slog.NewTextHandler(&buf, nil)), suppressed: m.logSuppressed}
	r.record(2, "dsp", "req-1", hits(5))
	lines := buf.lines()
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `msg="bid rejected" upstream=dsp req_id=req-1 seat=512 bid_id=b0 impid=1 gate=rtb.bid-sanity reason="bid missing price"`)
	require.NotContains(t, lines[0], "suppressed")
	require.EqualValues(t, 3, m.logSuppressed.Get())

	r.record(2, "dsp", "req-2", hits(1)) // the same second: suppressed
	require.Len(t, buf.lines(), 2)
	require.EqualValues(t, 4, m.logSuppressed.Get())

	r.mu.Lock()
	r.second-- // the next second
	r.mu.Unlock()
	r.record(2, "dsp", "req-3", hits(1))
	lines = buf.lines()
	require.Len(t, lines, 3)
	require.Contains(t, lines[2], "bid_id=b0")
	require.Contains(t, lines[2], "suppressed=4")

	r.record(0, "dsp", "req-4", hits(3)) // rejectionsPerSecond: 0 turns it off
	require.Len(t, buf.lines(), 3)
	r.flush()
	require.Len(t, buf.lines(), 3, "nothing pending")

	r.mu.Lock()
	r.second--
	r.mu.Unlock()
	r.record(1, "dsp", "req-5", hits(2))
	r.flush()
	lines = buf.lines()
	require.Len(t, lines, 5)
	require.Contains(t, lines[4], `msg="rejection log lines suppressed" suppressed=1`)
}

// TestRejectionLogLine: a served request's rejections and warnings are
// logged with the bidder text clipped and quoted.
func TestRejectionLogLine(t *testing.T) {
	long := strings.Repeat("é", 40) + "\n"
	resp := strings.Replace(allBad, `"id":"x1"`, fmt.Sprintf(`"id":%q`, long), 1)
	sc, _ := setup(t, testbidder.Answer(200, []byte(resp)), "    - {gate: impidMatch, name: impid-warn, mode: warn}\n  failFast: false\n")
	var buf syncBuffer
	sc.srv.rejects.log = slog.New(slog.NewTextHandler(&buf, nil))
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 204, a.status)
	lines := buf.lines()
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], `msg="bid rejected" upstream=dsp req_id=req-typical-1 seat=512 bid_id=`+strings.Repeat("é", 32)+` impid=1 gate=rtb.bid-sanity reason="bid missing price"`)
	require.Contains(t, lines[1], `msg="bid rejected" upstream=dsp req_id=req-typical-1 seat=512 bid_id=x2 impid=nope gate=rtb.impid-match`)
	require.Contains(t, lines[2], `msg="bid warned" upstream=dsp req_id=req-typical-1 seat=512 bid_id=x2 impid=nope gate=impid-warn`)
}
