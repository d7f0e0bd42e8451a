package rtb

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
)

// TestGateDurationsSampled: gate durations are observed for the first judged
// response and then one in gateSampleEvery; the bid counters count every
// response.
func TestGateDurationsSampled(t *testing.T) {
	snap := compile(t, fmt.Sprintf(baseConfig, "http://127.0.0.1:1/"), nil)
	m := newMeters()
	sm := m.forSnapshot(snap)
	ev := engine.AcquireEval()
	defer engine.ReleaseEval(ev)
	require.NoError(t, ev.DecodeRequest(readFile(t, "typical-request.json")))
	require.NoError(t, ev.DecodeResponse(readFile(t, "typical-response.json"), 1000))
	now := time.Now()
	ev.SetDeadline(now, now.Add(time.Hour))
	out := ev.Run(snap, engine.RunOptions{})
	const n = 2*gateSampleEvery + 1
	for range n {
		m.record(snap, sm, ev, out)
	}
	var b bytes.Buffer
	m.set.WritePrometheus(&b)
	require.Contains(t, b.String(), `bidguard_gate_duration_seconds_count{gate="rtb.impid-match"} 3`+"\n")
	require.Contains(t, b.String(), fmt.Sprintf(`bidguard_bids_total{seat="other",verdict="passed"} %d`+"\n", 3*n))
}

// recordFixture judges the typical pair under the embedded default policy
// and returns what record needs.
func recordFixture(b *testing.B) (*meters, *engine.Snapshot, *snapMeters, func() (*engine.Eval, *engine.Outcome)) {
	snap := compile(b, string(configs.Default), nil)
	m := newMeters()
	sm := m.forSnapshot(snap)
	req, resp := readFile(b, "typical-request.json"), readFile(b, "typical-response.json")
	judge := func() (*engine.Eval, *engine.Outcome) {
		ev := engine.AcquireEval()
		if ev.DecodeRequest(req) != nil || ev.DecodeResponse(resp, 1000) != nil {
			b.Fatal("typical pair does not decode")
		}
		now := time.Now()
		ev.SetDeadline(now, now.Add(time.Hour))
		return ev, ev.Run(snap, engine.RunOptions{})
	}
	return m, snap, sm, judge
}

// BenchmarkRecord is the metrics of one judged response (every gate's
// duration histogram, the bids by seat and verdict), one goroutine.
func BenchmarkRecord(b *testing.B) {
	m, snap, sm, judge := recordFixture(b)
	ev, out := judge()
	defer engine.ReleaseEval(ev)
	b.ReportAllocs()
	for b.Loop() {
		m.record(snap, sm, ev, out)
	}
}

// BenchmarkRecordParallel is the same from every core at once: the
// histograms' mutexes and the counters' cache lines are shared.
func BenchmarkRecordParallel(b *testing.B) {
	m, snap, sm, judge := recordFixture(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ev, out := judge()
		defer engine.ReleaseEval(ev)
		for pb.Next() {
			m.record(snap, sm, ev, out)
		}
	})
}
