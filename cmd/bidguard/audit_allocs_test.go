//go:build !race

package main

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/audit"
	"github.com/bidguard/bidguard/engine"
)

// TestAuditHitsAllocs: serve's audit hook allocates nothing for a response
// with rejected and warned bids once the queue's slots are warm.
func TestAuditHitsAllocs(t *testing.T) {
	dir := files(t, "cfg.yaml", "policy:\n  gates: [{gate: impidMatch}, {gate: bidSanity, mode: warn, options: {maxPrice: 1}}]\n")
	snap, err := loadSnapshot(filepath.Join(dir, "cfg.yaml"))
	require.NoError(t, err)
	req := []byte(`{"id":"r1","imp":[{"id":"1"}]}`)
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"7","price":1,"crid":"c","adomain":["a.com"]},{"id":"b2","impid":"1","price":2,"crid":"c","adomain":["a.com"]}]}]}`)
	_, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{})
	require.NoError(t, err)
	defer engine.ReleaseEval(ev)
	require.Len(t, ev.Out.Rejected, 1)
	require.Len(t, ev.Out.Warned, 1)

	var written countingMeter
	l, err := audit.Open(audit.Options{Path: filepath.Join(dir, "audit.log"), Queue: 64, Meters: audit.Meters{Written: &written},
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer l.Close()
	a := auditor{log: l}
	for range 32 {
		a.judged(snap, ev, &ev.Out)
	}
	require.Eventually(t, func() bool { return written.n.Load() == 65 }, 10e9, 1e6, "the writer drains the queue")
	require.Zero(t, testing.AllocsPerRun(1000, func() { a.judged(snap, ev, &ev.Out) }))
}
