//go:build unix

package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/engine"
)

// BenchmarkCaptureHook is serve's capture hook on the typical pair
// (rtb/testdata), judged by the embedded policy: not sampled, and sampled
// (the pair copied into a pooled entry and queued; the writer redacts and
// writes on its own goroutine, which shares the machine).
//
//	go test -run '^$' -bench CaptureHook -benchmem ./cmd/bidguard/
func BenchmarkCaptureHook(b *testing.B) {
	req, err := os.ReadFile("../../rtb/testdata/typical-request.json")
	if err != nil {
		b.Fatal(err)
	}
	resp, err := os.ReadFile("../../rtb/testdata/typical-response.json")
	if err != nil {
		b.Fatal(err)
	}
	snap, err := loadSnapshot("")
	if err != nil {
		b.Fatal(err)
	}
	_, ev, err := engine.Check(snap, req, resp, engine.CheckOptions{LatencyMs: 20})
	if err != nil {
		b.Fatal(err)
	}
	defer engine.ReleaseEval(ev)
	for _, share := range []float64{0, 1} {
		b.Run(fmt.Sprintf("sample=%g", share), func(b *testing.B) {
			snap.Config.Capture.Sample = share
			var dropped countingMeter
			c := &capturer{w: capture.New(capture.Options{Path: filepath.Join(b.TempDir(), "cap.jsonl"),
				Redact: capture.DefaultRedact, Meters: capture.Meters{Dropped: &dropped}, Logger: slog.New(slog.DiscardHandler)})}
			b.ReportAllocs()
			for b.Loop() {
				c.judged("default", snap, ev, &ev.Out)
			}
			c.close(slog.New(slog.DiscardHandler))
			b.ReportMetric(float64(dropped.n.Load())/float64(b.N), "dropped/op")
		})
	}
}

// BenchmarkReplay judges typical pairs (rtb/testdata's, one request id
// each) read from a capture file under the embedded policy, on every core;
// pairs/s is the throughput, pairs/s/2cpu what two idle cores would do (from
// the CPU time used: the wall clock of a shared machine counts waiting).
//
//	go test -run '^$' -bench Replay -benchtime 5x ./cmd/bidguard/
func BenchmarkReplay(b *testing.B) {
	req, err := os.ReadFile("../../rtb/testdata/typical-request.json")
	if err != nil {
		b.Fatal(err)
	}
	resp, err := os.ReadFile("../../rtb/testdata/typical-response.json")
	if err != nil {
		b.Fatal(err)
	}
	const pairs = 20000
	var file bytes.Buffer
	red := capture.NewRedactor(nil)
	for i := range pairs {
		r := bytes.Replace(req, []byte(`"id": "`), fmt.Appendf(nil, `"id": "%d-`, i), 1)
		file.WriteString(`{"time":"2026-11-28T00:00:00Z","upstream":"default","latencyMs":20,"request":`)
		file.Write(red.Append(nil, r))
		file.WriteString(`,"response":`)
		file.Write(red.Append(nil, resp))
		file.WriteString("}\n")
	}
	path := filepath.Join(b.TempDir(), "cap.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	snap, err := loadSnapshot("")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		rep := (&replayer{cand: snap, examples: 5}).run([]string{path})
		if rep.Pairs != pairs || rep.Malformed != 0 {
			b.Fatalf("%d pairs, %d malformed", rep.Pairs, rep.Malformed)
		}
	}
	b.ReportMetric(float64(pairs*b.N)/b.Elapsed().Seconds(), "pairs/s")
	// On a shared machine: the throughput two cores of their own would
	// give, from the CPU time spent.
	b.ReportMetric(2*float64(pairs*b.N)/(cpuTime()-cpu).Seconds(), "pairs/s/2cpu")
}
