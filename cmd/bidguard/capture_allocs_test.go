//go:build !race

package main

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCaptureHookAllocs: an auction the sample does not pick costs the
// hook no allocation, nor does onlyRejected's skip of a passed one.
func TestCaptureHookAllocs(t *testing.T) {
	snap, c, ev, _, written := captureFixture(t, "{path: cap.jsonl, sample: 0.000001}")
	defer c.close(slog.New(slog.DiscardHandler))
	require.Zero(t, testing.AllocsPerRun(1000, func() { c.judged("up", snap, ev, &ev.Out) }))
	snap.Config.Capture.Sample = 0
	require.Zero(t, testing.AllocsPerRun(1000, func() { c.judged("up", snap, ev, &ev.Out) }))
	require.Zero(t, written.n.Load())
}
