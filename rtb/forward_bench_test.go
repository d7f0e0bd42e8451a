package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/bidguard/bidguard/engine"
)

// BenchmarkAppendHead is the bidder's request head for an exchange request
// with a dozen headers (end-to-end, hop-by-hop, Connection-named,
// X-Forwarded-For) and a query, to an upstream with headers.set and
// headers.remove.
func BenchmarkAppendHead(b *testing.B) {
	up := testUpstream(b, "    headers: {set: {X-Api-Key: k}, remove: [cookie]}\n")
	ctx := parsedCtx(b, "POST /bid?pub=1&src=x HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: 0\r\n"+
		"User-Agent: exchange/2.1\r\nAuthorization: Bearer 0123456789abcdef\r\nX-Request-Id: 3f2a9c\r\nX-Openrtb-Version: 2.6\r\n"+
		"Cookie: uid=abc\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Forwarded-For: 198.51.100.7\r\n"+
		"Accept-Encoding: gzip\r\nX-Exchange-Region: eu-west\r\nX-Tenant: acme\r\n\r\n", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
	dst := up.appendHead(nil, ctx, 1000)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		dst = up.appendHead(dst[:0], ctx, 1000)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkBreakerOpenAnswer is bidguard's time to answer a bid request
// whose upstream's circuit breaker is open: the handler alone, from the
// request read to the 204 set.
func BenchmarkBreakerOpenAnswer(b *testing.B) {
	h := &engine.Holder{}
	h.Store(compile(b, fmt.Sprintf(baseConfig, "http://127.0.0.1:1/bid"), nil))
	srv, err := New(h, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	brk := srv.cur.Load().routes["/bid"].pool.brk
	brk.configure(1, time.Hour, 1)
	brk.report(false, callFailed, errRefused, 0)
	ctx := parsedCtx(b, "POST /bid HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		ctx.Response.Reset()
		srv.handle(ctx)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if ctx.Response.StatusCode() != 204 || srv.meters.shed[shedBreaker].Get() == 0 {
		b.Fatalf("status %d, not shed by the breaker", ctx.Response.StatusCode())
	}
}
