package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/audit"
	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/rtb"
)

// BenchmarkBidPathAudit is the whole bid path (exchange → bidguard → bidder
// over in-memory listeners, the embedded default policy) on the typical
// pair with two of its three bids rejected, with the audit log off and on
// (HMAC key, default fsyncEvery and queue). Each op audits two records; a
// queue slot allocates its buffer on first use, so run past 32768 ops to
// see the steady state (no allocation of the log's own):
//
//	go test -run '^$' -bench BidPathAudit -benchmem -benchtime 80000x ./cmd/bidguard/
func BenchmarkBidPathAudit(b *testing.B) {
	resp, err := os.ReadFile("../../rtb/testdata/typical-response.json")
	if err != nil {
		b.Fatal(err)
	}
	resp = bytes.Replace(resp, []byte(`"id": "b2", "impid": "2"`), []byte(`"id": "b2", "impid": "9"`), 1)
	resp = bytes.Replace(resp, []byte(`"id": "b3", "impid": "3"`), []byte(`"id": "b3", "impid": "9"`), 1)
	req, err := os.ReadFile("../../rtb/testdata/typical-request.json")
	if err != nil {
		b.Fatal(err)
	}
	req = bytes.Replace(req, []byte(`"tmax": 120`), []byte(`"tmax": 1000`), 1) // no deadline drops on a busy machine
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			post, stop := auditBenchPath(b, resp, on)
			defer stop()
			b.ReportAllocs()
			b.ResetTimer() // not the queue's slots, allocated once at Open
			b.RunParallel(func(pb *testing.PB) {
				r, a := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				r.SetRequestURI("http://sidecar.invalid/")
				r.Header.SetMethod(fasthttp.MethodPost)
				r.Header.SetContentType("application/json")
				r.SetBody(req)
				for pb.Next() {
					post(r, a)
				}
			})
		})
	}
}

func auditBenchPath(b *testing.B, response []byte, on bool) (post func(*fasthttp.Request, *fasthttp.Response), stop func()) {
	bidderLn := fasthttputil.NewInmemoryListener()
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(response)
	}}
	go func() { _ = bidder.Serve(bidderLn) }()
	snap, err := loadSnapshot("")
	if err != nil {
		b.Fatal(err)
	}
	snap.Config.Upstreams = []config.Upstream{{Name: "default", URL: "http://bidder.invalid/bid", Path: "/"}}
	var h engine.Holder
	h.Store(snap)
	var aud auditor
	opt := rtb.Options{Version: "bench", Logger: slog.New(slog.DiscardHandler), Dial: func(string) (net.Conn, error) { return bidderLn.Dial() }}
	if on {
		opt.Audit = aud.judged
	}
	srv, err := rtb.New(&h, opt)
	if err != nil {
		b.Fatal(err)
	}
	var dropped countingMeter
	if on {
		aud.log, err = audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.log"), Key: []byte(auditKey),
			Meters: audit.Meters{Dropped: &dropped}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
	}
	sideLn := fasthttputil.NewInmemoryListener()
	go func() { _ = srv.Serve(sideLn) }()
	exchange := &fasthttp.HostClient{Addr: "sidecar.invalid", MaxConns: 1024, Dial: func(string) (net.Conn, error) { return sideLn.Dial() }}
	post = func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := exchange.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 || string(resp.Header.Peek("X-Bidguard-Rejected")) != "2" {
			b.Fatalf("status %d, rejected %q", resp.StatusCode(), resp.Header.Peek("X-Bidguard-Rejected"))
		}
	}
	stop = func() {
		_ = srv.Shutdown(context.Background())
		_ = bidder.Shutdown()
		if aud.log != nil {
			_ = aud.log.Close()
			b.ReportMetric(float64(dropped.n.Load())/float64(b.N), "dropped/op")
		}
	}
	return post, stop
}
