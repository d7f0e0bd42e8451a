package rtb

import (
	"fmt"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/engine"
)

// benchPath wires exchange → bidguard → fake bidder over in-memory
// listeners and returns a function posting one bid request (checking that
// the answer has the wanted status).
func benchPath(b *testing.B, response []byte) (post func(req *fasthttp.Request, resp *fasthttp.Response), stop func()) {
	bidderLn := fasthttputil.NewInmemoryListener()
	bidder := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(response)
	}}
	go func() { _ = bidder.Serve(bidderLn) }()

	h := &engine.Holder{}
	h.Store(compile(b, fmt.Sprintf(baseConfig, "http://bidder.invalid/bid"), nil))
	srv, err := New(h, Options{Version: "bench", Dial: func(string) (net.Conn, error) { return bidderLn.Dial() }})
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
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d", resp.StatusCode())
		}
	}
	stop = func() {
		_ = srv.srv.Shutdown()
		_ = bidder.Shutdown()
	}
	return post, stop
}

func benchRequest(b *testing.B) *fasthttp.Request {
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
	post, stop := benchPath(b, readFile(b, "typical-response.json"))
	defer stop()
	req, resp := benchRequest(b), fasthttp.AcquireResponse()
	b.ReportAllocs()
	for b.Loop() {
		post(req, resp)
	}
}

// BenchmarkEndToEndParallel is the same path under concurrent requests.
func BenchmarkEndToEndParallel(b *testing.B) {
	post, stop := benchPath(b, readFile(b, "typical-response.json"))
	defer stop()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := benchRequest(b), fasthttp.AcquireResponse()
		for pb.Next() {
			post(req, resp)
		}
	})
}
