//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/rtb"
)

// BenchmarkCaptureHook is serve's capture hook on the typical pair
// (rtb/testdata), judged by the embedded policy: not sampled; sampled with
// the writer keeping up (when half the queue waits, the clock stops until
// the writer has written it: the bid path's own cost, the pair copied into
// a pooled entry and queued); sampled in a tight loop, where the writer
// falls behind and most entries are dropped before any copy (dropped/op).
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
	for _, bc := range []struct {
		name  string
		share float64
		wait  bool
	}{{"unsampled", 0, false}, {"sampled", 1, true}, {"sampled-overrun", 1, false}} {
		b.Run(bc.name, func(b *testing.B) {
			snap.Config.Capture.Sample = bc.share
			var dropped, written countingMeter
			c := &capturer{w: capture.New(capture.Options{Path: filepath.Join(b.TempDir(), "cap.jsonl"),
				Redact: capture.DefaultRedact, Meters: capture.Meters{Dropped: &dropped, Written: &written},
				Logger: slog.New(slog.DiscardHandler)})}
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				c.judged("default", snap, ev, &ev.Out)
				if n++; bc.wait && n-written.n.Load() >= capture.DefaultQueueEntries/2 {
					// Half the queue waits: let the writer catch up, off the clock.
					b.StopTimer()
					for written.n.Load() < n {
						time.Sleep(time.Millisecond)
					}
					b.StartTimer()
				}
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

// BenchmarkBidPathCapture is the whole bid path (exchange → bidguard →
// bidder over in-memory listeners, the embedded default policy, the typical
// pair) with capture off and at samples 0.01 and 1. cpu-ns/op is the
// process's CPU time per request, steadier than ns/op on a shared machine.
//
//	go test -run '^$' -bench BidPathCapture -benchmem ./cmd/bidguard/
func BenchmarkBidPathCapture(b *testing.B) {
	req, err := os.ReadFile("../../rtb/testdata/typical-request.json")
	if err != nil {
		b.Fatal(err)
	}
	req = bytes.Replace(req, []byte(`"tmax": 120`), []byte(`"tmax": 1000`), 1) // no deadline drops on a busy machine
	resp, err := os.ReadFile("../../rtb/testdata/typical-response.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, share := range []float64{-1, 0.01, 1} {
		name := fmt.Sprintf("sample=%g", share)
		if share < 0 {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			post, stop := captureBenchPath(b, resp, share)
			defer stop()
			b.ReportAllocs()
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				r, a := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				r.SetRequestURI("http://sidecar.invalid/")
				r.Header.SetMethod(fasthttp.MethodPost)
				r.Header.SetContentType("application/json")
				for i := 0; pb.Next(); i++ {
					// A new request id each time: sampling picks by id.
					r.SetBody(bytes.Replace(req, []byte(`"id": "`), fmt.Appendf(nil, `"id": "%d-%p-`, i, a), 1))
					post(r, a)
				}
			})
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// captureBenchPath serves the embedded policy with capture at share (< 0:
// off) in front of a bidder answering response.
func captureBenchPath(b *testing.B, response []byte, share float64) (post func(*fasthttp.Request, *fasthttp.Response), stop func()) {
	bidderLn := fasthttputil.NewInmemoryListener()
	// The bidder answers with the request's id (the first "id" of its
	// body), as the response-id gate wants.
	i := bytes.Index(response, []byte(`"req-typical-1"`))
	head, tail := response[:i+1], response[i+len(`"req-typical-1"`)-1:]
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		body := ctx.Request.Body()
		_, id, _ := bytes.Cut(body, []byte(`"id":`))
		id = bytes.TrimLeft(id, " ")
		id, _, _ = bytes.Cut(id[1:], []byte(`"`))
		ctx.SetContentType("application/json")
		ctx.Response.SetBodyRaw(nil)
		ctx.Response.AppendBody(head)
		ctx.Response.AppendBody(id)
		ctx.Response.AppendBody(tail)
	}}
	go func() { _ = bidder.Serve(bidderLn) }()
	snap, err := loadSnapshot("")
	if err != nil {
		b.Fatal(err)
	}
	snap.Config.Upstreams = []config.Upstream{{Name: "default", URL: "http://bidder.invalid/bid", Path: "/"}}
	var capt capturer
	opt := rtb.Options{Version: "bench", Logger: slog.New(slog.DiscardHandler), Dial: func(string) (net.Conn, error) { return bidderLn.Dial() }}
	if share >= 0 {
		snap.Config.Capture.Path, snap.Config.Capture.Sample = filepath.Join(b.TempDir(), "cap.jsonl"), share
		opt.Capture = capt.judged
	}
	var h engine.Holder
	h.Store(snap)
	srv, err := rtb.New(&h, opt)
	if err != nil {
		b.Fatal(err)
	}
	var dropped countingMeter
	capt.open("", snap.Config, capture.Meters{Dropped: &dropped}, slog.New(slog.DiscardHandler))
	sideLn := fasthttputil.NewInmemoryListener()
	go func() { _ = srv.Serve(sideLn) }()
	exchange := &fasthttp.HostClient{Addr: "sidecar.invalid", MaxConns: 1024, Dial: func(string) (net.Conn, error) { return sideLn.Dial() }}
	post = func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := exchange.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d", resp.StatusCode())
		}
	}
	stop = func() {
		_ = srv.Shutdown(context.Background())
		_ = bidder.Shutdown()
		capt.close(slog.New(slog.DiscardHandler))
		b.ReportMetric(float64(dropped.n.Load())/float64(b.N), "dropped/op")
	}
	return post, stop
}
