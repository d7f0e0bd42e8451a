//go:build !race

package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// TestForwardAllocs: the head of a request with end-to-end, hop-by-hop,
// Connection-named and X-Forwarded-For headers and a query, and a
// gzipped answer, allocate nothing once warm.
func TestForwardAllocs(t *testing.T) {
	up := testUpstream(t, "    headers: {set: {X-Set: s}, remove: [x-gone]}\n    compressAbove: 100\n")
	ctx := parsedCtx(t, "POST /bid?a=b HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 0\r\n"+
		"Authorization: Bearer t\r\nX-Request-Id: r\r\nCookie: a=b; c=d\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"+
		"X-Gone: 1\r\nX-Forwarded-For: 1.2.3.4\r\nAccept-Encoding: gzip\r\n\r\n", &net.TCPAddr{IP: net.ParseIP("10.1.2.3")})
	dst := up.appendHead(nil, ctx, 100)
	require.Zero(t, testing.AllocsPerRun(200, func() { dst = up.appendHead(dst[:0], ctx, 100) }))

	answer := readFile(t, "typical-response.json")
	up.setAnswer(ctx, answer)
	require.Equal(t, "gzip", string(ctx.Response.Header.ContentEncoding()))
	require.Zero(t, testing.AllocsPerRun(200, func() { up.setAnswer(ctx, answer) }))
}

// TestEndToEndForwardAllocs: the whole path, as TestEndToEndAllocs, for
// an exchange request with headers and a query to an upstream with
// headers.set (a file's value) and remove, and a gzipped answer.
func TestEndToEndForwardAllocs(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(secret, []byte("k"), 0o600))
	cfg := fmt.Sprintf(`
upstreams:
  - name: dsp
    url: "%s?x=1"
    path: /bid
    headers: {set: {X-Api-Key: "${file:%s}"}, remove: [x-gone]}
    compressAbove: 100
policy:
  gates: [{gate: tmaxGuard, options: {bufferMs: 5}}, {gate: impidMatch}, {gate: bidSanity, options: {maxFloorMultiple: 50}}]
`, benchBidderURL, secret)
	post, stop := benchPath(t, compile(t, cfg, nil), readFile(t, "typical-response.json"))
	defer stop()
	req, resp := benchRequest(t), fasthttp.AcquireResponse()
	req.SetRequestURI("http://sidecar.invalid/bid?a=b&c=d")
	for _, kv := range [][2]string{{"Authorization", "Bearer t"}, {"X-Request-Id", "r"}, {"Cookie", "a=b"},
		{"Connection", "keep-alive, X-Hop"}, {"X-Hop", "1"}, {"X-Gone", "1"}, {"X-Forwarded-For", "1.2.3.4"}, {"Accept-Encoding", "gzip"}} {
		req.Header.Set(kv[0], kv[1])
	}
	for range 50 {
		before := benchDials.Load()
		for range 200 {
			post(req, resp)
		}
		if benchDials.Load() == before {
			break
		}
	}
	require.Equal(t, "gzip", string(resp.Header.ContentEncoding()))
	require.Zero(t, testing.AllocsPerRun(500, func() { post(req, resp) }))
}

// TestBreakerAllocs: a closed breaker costs no allocation.
func TestBreakerAllocs(t *testing.T) {
	b := newBreaker("dsp", slog.New(slog.NewTextHandler(io.Discard, nil)), newMeters().forward("dsp").breaker)
	b.configure(20, time.Second, 3)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = b.refuses()
		ok, trial := b.allow()
		b.report(trial, callOK, nil, 200)
		_ = ok
	}))
}
