package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/engine"
)

// captureFixture is a snapshot with capture configured by block, its
// capturer open in a temporary directory, and the evaluation of a pair
// with one bid rejected (impid) and one passed.
func captureFixture(t testing.TB, block string) (*engine.Snapshot, *capturer, *engine.Eval, string, *countingMeter) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "cfg.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("capture: "+block+"\npolicy:\n  gates: [{gate: impidMatch}]\n"), 0o600))
	snap, err := loadSnapshot(cfgPath)
	require.NoError(t, err)
	req := []byte(`{"id":"r1","imp":[{"id":"1"}],"user":{"id":"u"}}`)
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"7","price":1},{"id":"b2","impid":"1","price":2}]}]}`)
	_, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: 12})
	require.NoError(t, err)
	t.Cleanup(func() { engine.ReleaseEval(ev) })
	written := new(countingMeter)
	c := &capturer{}
	c.open(cfgPath, snap.Config, capture.Meters{Written: written}, slog.New(slog.DiscardHandler))
	return snap, c, ev, filepath.Join(dir, "cap.jsonl"), written
}

// The hook captures what the snapshot's sample and onlyRejected pick, with
// the verdicts as the engine gave them.
func TestCaptureHook(t *testing.T) {
	snap, c, ev, path, written := captureFixture(t, "{path: cap.jsonl, sample: 1, onlyRejected: true}")
	c.judged("up", snap, ev, &ev.Out)
	snap.Config.Capture.Sample = 0 // a reload to sample 0
	c.judged("up", snap, ev, &ev.Out)
	c.close(slog.New(slog.DiscardHandler))
	require.Equal(t, int64(1), written.n.Load())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	rec, err := capture.ParseRecord(bytes.TrimSpace(data))
	require.NoError(t, err)
	require.Equal(t, "up", rec.Upstream)
	require.Equal(t, 12.0, rec.LatencyMs)
	require.JSONEq(t, `{"id":"r1","imp":[{"id":"1"}],"user":{"id":null}}`, string(rec.Request))
	s, ok := rec.Summary()
	require.True(t, ok)
	require.Equal(t, snap.Version, s.Config)
	require.Equal(t, "filter", s.Action)
	require.Equal(t, 1, s.Kept)
	require.Equal(t, capture.Judged{Status: "passed"}, s.Response)
	require.Len(t, s.Bids, 2)
	require.Equal(t, capture.Judged{ID: "b1", Seat: "s", Status: "rejected", Gate: "rtb.impid-match", Reason: s.Bids[0].Reason}, s.Bids[0])
	require.NotEmpty(t, s.Bids[0].Reason)
	require.Equal(t, capture.Judged{ID: "b2", Seat: "s", Status: "passed"}, s.Bids[1])
}

// onlyRejected skips an auction where nothing failed; sampling follows the
// request id.
func TestCaptureHookSkips(t *testing.T) {
	snap, c, _, _, written := captureFixture(t, "{path: cap.jsonl, sample: 0.5, onlyRejected: true}")
	req := []byte(`{"id":"%s","imp":[{"id":"1"}]}`)
	resp := []byte(`{"id":"x","seatbid":[{"seat":"s","bid":[{"id":"b2","impid":"1","price":2}]}]}`)
	for i := range 20 {
		_, ev, err := engine.Check(snap, fmt.Appendf(nil, string(req), fmt.Sprint(i)), resp, engine.CheckOptions{})
		require.NoError(t, err)
		require.True(t, ev.Out.Passed())
		c.judged("up", snap, ev, &ev.Out)
		engine.ReleaseEval(ev)
	}
	snap.Config.Capture.OnlyRejected = false
	want := 0
	for i := range 200 {
		id := fmt.Sprint(i)
		_, ev, err := engine.Check(snap, fmt.Appendf(nil, string(req), id), resp, engine.CheckOptions{})
		require.NoError(t, err)
		c.judged("up", snap, ev, &ev.Out)
		engine.ReleaseEval(ev)
		if capture.Sampled(id, 0.5) {
			want++
		}
	}
	c.close(slog.New(slog.DiscardHandler))
	require.Equal(t, int64(want), written.n.Load())
	require.InDelta(t, 100, want, 30)
}
