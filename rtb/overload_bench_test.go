package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
)

// BenchmarkShed is what an overload shed costs: the typical request with
// tmax 20, whose budget is under minBidderMs, answered 204 before its body
// is decoded (shed reason "budget"; an in-flight shed takes the same path
// one step later), over the in-memory path of BenchmarkEndToEnd. Compare
// with BenchmarkEndToEnd, the same request served; both count the
// exchange's client, which shares the process, and the served one the
// bidder too.
func BenchmarkShed(b *testing.B) {
	post, stop := benchPathStatus(b, nil, readFile(b, "typical-response.json"), fasthttp.StatusNoContent)
	defer stop()
	req, resp := benchRequest(b), fasthttp.AcquireResponse()
	req.SetBody(withTmax(b, 20))
	b.ReportAllocs()
	for b.Loop() {
		post(req, resp)
	}
}

// BenchmarkShedHandler is bidguard's own part of a shed, the handler alone
// (no connection, no client): "budget" reads the body's tmax first,
// "inflight" is refused by the in-flight limit before reading the body.
func BenchmarkShedHandler(b *testing.B) {
	for _, tc := range []struct {
		name string
		tmax int
		full bool
	}{{"budget", 20, false}, {"inflight", 1000, true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := &engine.Holder{}
			h.Store(compile(b, fmt.Sprintf(baseConfig, benchBidderURL), nil))
			srv, err := New(h, Options{Version: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			if tc.full {
				srv.gov.limit.Store(1)
				srv.limiter.TryAcquire(0)
			}
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(fasthttp.MethodPost)
			ctx.Request.SetRequestURI("/bid")
			ctx.Request.Header.SetContentType("application/json")
			ctx.Request.SetBody(withTmax(b, tc.tmax))
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				srv.handle(&ctx)
				if ctx.Response.StatusCode() != fasthttp.StatusNoContent {
					b.Fatalf("status %d", ctx.Response.StatusCode())
				}
			}
		})
	}
}
