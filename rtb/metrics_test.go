package rtb

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
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
	const n = 2*gateSampleEvery + 1
	for range n {
		m.record(snap, sm, ev, ev.Run(snap, engine.RunOptions{TimeGates: m.timeGates()}))
	}
	var b bytes.Buffer
	m.write(&b, false)
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

// TestRejectionsCreditedToTheirGate: when bid 0 and later bids are rejected
// by different gates, each bid's bidguard_bids_rejected_total is credited to
// the gate that rejected it; a response rejected as a whole credits its
// gate with the bids no gate of their own rejected.
func TestRejectionsCreditedToTheirGate(t *testing.T) {
	req := []byte(`{"id":"r1","imp":[{"id":"1"}]}`)
	// b0: unknown impid (impidMatch); b1 passes; b2: price over maxPrice
	// (bidSanity); b3: both, impidMatch first.
	resp := []byte(`{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b0","impid":"9","price":1},{"id":"b1","impid":"1","price":1},` +
		`{"id":"b2","impid":"1","price":40},{"id":"b3","impid":"8","price":40}]}]}`)
	judge := func(t *testing.T, config string, latencyMs float64) string {
		snap := compile(t, config, nil)
		m := newMeters()
		sm := m.forSnapshot(snap)
		ev := engine.AcquireEval()
		defer engine.ReleaseEval(ev)
		require.NoError(t, ev.DecodeRequest(req))
		require.NoError(t, ev.DecodeResponse(resp, 1000))
		now := time.Now()
		ev.SetDeadline(now, now.Add(time.Hour))
		ev.SetLatency(latencyMs)
		m.record(snap, sm, ev, ev.Run(snap, engine.RunOptions{}))
		var b bytes.Buffer
		m.write(&b, false)
		return b.String()
	}
	const gates = "  gates: [{gate: impidMatch}, {gate: bidSanity, options: {maxPrice: 10}}, {gate: latency, options: {maxMs: 10}}]\n"
	for _, failFast := range []bool{true, false} {
		t.Run(fmt.Sprintf("failFast %v", failFast), func(t *testing.T) {
			text := judge(t, fmt.Sprintf("policy:\n  failFast: %v\n%s", failFast, gates), 1)
			require.Contains(t, text, `bidguard_bids_rejected_total{seat="other",gate="rtb.impid-match",nbr="300"} 2`+"\n")
			require.Contains(t, text, `bidguard_bids_rejected_total{seat="other",gate="rtb.bid-sanity",nbr="300"} 1`+"\n")
			require.Contains(t, text, `bidguard_bids_total{seat="other",verdict="rejected"} 3`+"\n")
			require.Contains(t, text, `bidguard_bids_total{seat="other",verdict="passed"} 1`+"\n")
		})
	}
	t.Run("response rejected", func(t *testing.T) {
		text := judge(t, "policy:\n  failFast: false\n"+gates, 50)
		require.Contains(t, text, `bidguard_bids_rejected_total{seat="other",gate="rtb.impid-match",nbr="300"} 2`+"\n")
		require.Contains(t, text, `bidguard_bids_rejected_total{seat="other",gate="rtb.bid-sanity",nbr="300"} 1`+"\n")
		require.Contains(t, text, `bidguard_bids_rejected_total{seat="other",gate="latency",nbr="101"} 1`+"\n")
		require.Contains(t, text, `bidguard_bids_total{seat="other",verdict="rejected"} 4`+"\n")
	})
}

// BenchmarkHistogramObserve is one duration into a gate histogram, from
// every core at once (the bid path's case).
func BenchmarkHistogramObserve(b *testing.B) {
	h := newHistFamily("x_seconds", "k", gateBuckets).get("a")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ns := int64(0)
		for pb.Next() {
			ns = (ns + 377) % 20000
			h.observeNs(ns)
		}
	})
}

// TestCounterMap: concurrent first uses of a key get one counter and make
// one series; other keys keep theirs.
func TestCounterMap(t *testing.T) {
	m := newMeters()
	a := m.skippedCounter("g", "a")
	got := make(chan any, 8)
	for range cap(got) {
		go func() { got <- m.skippedCounter("g", "b") }()
	}
	b := m.skippedCounter("g", "b")
	for range cap(got) {
		require.Same(t, b, (<-got).(*metrics.Counter))
	}
	require.NotSame(t, a, b)
	require.Same(t, a, m.skippedCounter("g", "a"))
	require.Same(t, m.rejectedCounter("s", "g", 1), m.rejectedCounter("s", "g", 1))
	require.NotSame(t, m.rejectedCounter("s", "g", 1), m.rejectedCounter("s", "g", 2))
	a.Inc()
	b.Add(2)
	var out bytes.Buffer
	m.write(&out, false)
	require.Contains(t, out.String(), `bidguard_bids_skipped_total{gate="g",why="a"} 1`+"\n")
	require.Contains(t, out.String(), `bidguard_bids_skipped_total{gate="g",why="b"} 2`+"\n")
}
