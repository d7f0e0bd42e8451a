package rtb

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/bidguard/bidguard/engine"
)

// FuzzUpstreamResponse: whatever bytes the bidder sends (then closing the
// connection, or holding it open), the bid path answers by the deadline,
// never panics, and never sends a body that does not decode: 200 with a
// valid BidResponse, or an empty 204.
func FuzzUpstreamResponse(f *testing.F) {
	typical := string(readFile(f, "typical-response.json"))
	for _, seed := range []string{
		fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(typical), typical),
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"id\":\"r\"\r\n1\r\n}\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 199 Odd\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.0 200 OK\r\n\r\n" + typical,
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n{\"id\":",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00",
		"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n",
		"SSH-2.0-OpenSSH\r\n",
		"",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}

	ln := fasthttputil.NewInmemoryListener()
	f.Cleanup(func() { _ = ln.Close() })
	answers := make(chan fuzzAnswer)
	go serveFuzzAnswers(ln, answers)
	h := &engine.Holder{}
	h.Store(compile(f, "upstreams:\n  - {name: dsp, url: \"http://bidder.invalid/bid\", path: /bid, idleTimeoutMs: 0}\n"+
		"limits: {maxResponseBytes: 65536}\n", nil))
	srv, err := New(h, Options{Version: "fuzz", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dial: func(string) (net.Conn, error) { return ln.Dial() }})
	if err != nil {
		f.Fatal(err)
	}
	handle := srv.Handler()
	body := withTmax(f, 30) // D = arrival + 25ms

	f.Fuzz(func(t *testing.T, wire []byte, hold bool) {
		go func() { answers <- fuzzAnswer{wire, hold} }()
		var req fasthttp.Request
		req.SetRequestURI("http://sidecar/bid")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.SetBody(body)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, nil, nil)
		start := time.Now()
		handle(&ctx)
		if elapsed := time.Since(start); elapsed > 25*time.Millisecond+2*time.Second {
			t.Fatalf("answered after %v", elapsed)
		}
		switch status, out := ctx.Response.StatusCode(), ctx.Response.Body(); status {
		case fasthttp.StatusNoContent:
			if len(out) > 0 {
				t.Fatalf("204 with a body: %q", out)
			}
		case fasthttp.StatusOK:
			var r openrtb2.BidResponse
			if err := json.Unmarshal(out, &r); err != nil || len(r.SeatBid) == 0 {
				t.Fatalf("200 with a body that does not decode to bids (%v): %q", err, out)
			}
		default:
			t.Fatalf("status %d", status)
		}
	})
}

type fuzzAnswer struct {
	wire []byte
	hold bool
}

// serveFuzzAnswers answers each connection's request with the next fuzz
// answer, then closes it or holds it until bidguard does.
func serveFuzzAnswers(ln net.Listener, answers <-chan fuzzAnswer) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			var req fasthttp.Request
			if req.Read(br) != nil {
				return
			}
			a := <-answers
			_, _ = c.Write(a.wire)
			if a.hold {
				_, _ = io.Copy(io.Discard, br)
			}
		}()
	}
}
