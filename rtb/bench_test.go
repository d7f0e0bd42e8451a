package rtb

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
)

// benchPath wires exchange → bidguard → fake bidder over in-memory
// listeners and returns a function posting one bid request (checking that
// the answer has the wanted status). snap routes /bid to the bidder (nil:
// baseConfig).
func benchPath(b testing.TB, snap *engine.Snapshot, response []byte) (post func(req *fasthttp.Request, resp *fasthttp.Response), stop func()) {
	return benchPathStatus(b, snap, response, fasthttp.StatusOK)
}

// benchPathStatus is benchPath expecting answers of status want.
func benchPathStatus(b testing.TB, snap *engine.Snapshot, response []byte, want int) (post func(req *fasthttp.Request, resp *fasthttp.Response), stop func()) {
	bidderLn := fasthttputil.NewInmemoryListener()
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(response)
	}}
	go func() { _ = bidder.Serve(bidderLn) }()

	if snap == nil {
		snap = compile(b, fmt.Sprintf(baseConfig, benchBidderURL), nil)
	}
	h := &engine.Holder{}
	h.Store(snap)
	srv, err := New(h, Options{Version: "bench", Dial: func(string) (net.Conn, error) { benchDials.Add(1); return bidderLn.Dial() }})
	if err != nil {
		b.Fatal(err)
	}
	sideLn := fasthttputil.NewInmemoryListener()
	go func() { _ = srv.Serve(sideLn) }()
	exchange := &fasthttp.HostClient{Addr: "sidecar.invalid", MaxConns: 1024, Dial: func(string) (net.Conn, error) { return sideLn.Dial() }}
	post = func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := exchange.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != want {
			b.Fatalf("status %d", resp.StatusCode())
		}
	}
	stop = func() {
		_ = srv.srv.Shutdown()
		_ = bidder.Shutdown()
	}
	return post, stop
}

// benchDials counts the connections bidguard opened to the in-memory bidder.
var benchDials atomic.Int64

// benchBidderURL is the upstream of the in-memory path (dialed in memory).
const benchBidderURL = "http://bidder.invalid/bid"

// defaultPolicy is the embedded config, its default policy judging what
// /bid routes to the in-memory bidder (as serve --upstream does).
func defaultPolicy(tb testing.TB) *engine.Snapshot {
	snap := compile(tb, string(configs.Default), nil)
	snap.Config.Upstreams = []config.Upstream{{Name: "dsp", URL: benchBidderURL, Path: "/bid"}}
	return snap
}

func benchRequest(b testing.TB) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI("http://sidecar.invalid/bid")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBody(withTmax(b, 1000))
	return req
}

// BenchmarkEndToEnd is the whole bid path for the typical pair (3 bids, all
// forwarded): the exchange's POST, decode, deadlines, the upstream call, the
// gates, the rewritten answer. Allocations count every side (client,
// sidecar, bidder) since they share the process.
func BenchmarkEndToEnd(b *testing.B) {
	post, stop := benchPath(b, nil, readFile(b, "typical-response.json"))
	defer stop()
	req, resp := benchRequest(b), fasthttp.AcquireResponse()
	b.ReportAllocs()
	for b.Loop() {
		post(req, resp)
	}
}

// BenchmarkEndToEndParallel is the same path under concurrent requests.
func BenchmarkEndToEndParallel(b *testing.B) {
	post, stop := benchPath(b, nil, readFile(b, "typical-response.json"))
	defer stop()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := benchRequest(b), fasthttp.AcquireResponse()
		for pb.Next() {
			post(req, resp)
		}
	})
}

// BenchmarkEndToEndDefaultPolicy is the whole bid path under the embedded
// default policy (every built-in gate of the default config).
func BenchmarkEndToEndDefaultPolicy(b *testing.B) {
	post, stop := benchPath(b, defaultPolicy(b), readFile(b, "typical-response.json"))
	defer stop()
	req, resp := benchRequest(b), fasthttp.AcquireResponse()
	b.ReportAllocs()
	for b.Loop() {
		post(req, resp)
	}
}

// BenchmarkUpstreamClient is one bidder call (typical request and answer)
// through bidguard's pool, beside fasthttp's HostClient on the same bidder,
// over an in-memory listener and over loopback TCP.
func BenchmarkUpstreamClient(b *testing.B) {
	answer := readFile(b, "typical-response.json")
	body := withTmax(b, 100)
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(answer)
	}}
	f := func(name string, ln net.Listener, dial func(string) (net.Conn, error)) {
		go func() { _ = bidder.Serve(ln) }()
		defer ln.Close()
		b.Run(name+"/bidguard", func(b *testing.B) {
			p := newHostPool(clientKey{addr: ln.Addr().String(), maxConns: 64, idleTimeout: time.Minute}, dial, &newMeters().client)
			defer p.close()
			head := plainHead("bidguard/bench", len(body))
			resp := fasthttp.AcquireResponse()
			resends := newMeters().none.resends
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				if _, _, err := p.do(head, body, resp, 1<<20, now, now.Add(time.Second), resends); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/fasthttp.HostClient", func(b *testing.B) {
			c := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 64, NoDefaultUserAgentHeader: true}
			if dial != nil {
				c.Dial = dial
			}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI("http://bidder/bid")
			req.Header.SetContentType("application/json")
			req.Header.SetUserAgent("bidguard/bench")
			req.SetBodyRaw(body)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.DoDeadline(req, resp, time.Now().Add(time.Second)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	mem := fasthttputil.NewInmemoryListener()
	f("in-memory", mem, func(string) (net.Conn, error) { return mem.Dial() })
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	f("tcp", tcp, nil)
}
