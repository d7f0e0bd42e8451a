//go:build unix

package main

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
)

// BenchmarkJudged is the detector's cost on the bid path per judged
// response of four bids from three seats: finding each seat, sorting out
// what counts as a rejection, observing each bid. cpu-ns/op is CPU time,
// not wall time.
func BenchmarkJudged(b *testing.B) {
	q, snap, ev := judgedFixture(b)
	defer engine.ReleaseEval(ev)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		q.judged("dsp", snap, ev, &ev.Out)
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/4, "cpu-ns/bid")
}
