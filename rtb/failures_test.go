package rtb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// rawBidder is a testbidder.Raw running serve on each connection; it
// returns the bidder's URL.
func rawBidder(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	return testbidder.Raw(t, func(c *testbidder.Conn) { serve(c.Conn) }).URL
}

// readRequest reads until the end of the request headers and body (the
// sidecar always sends Content-Length).
func readRequest(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf bytes.Buffer
	b := make([]byte, 4096)
	for {
		n, err := c.Read(b)
		buf.Write(b[:n])
		if err != nil {
			return
		}
		if i := bytes.Index(buf.Bytes(), []byte("\r\n\r\n")); i >= 0 {
			var cl int
			for _, line := range strings.Split(buf.String()[:i], "\r\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
					_, _ = fmt.Sscan(strings.TrimSpace(v), &cl)
				}
			}
			if buf.Len() >= i+4+cl {
				return
			}
		}
	}
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// TestBidderFailuresAnswered204ByTheDeadline: whatever the bidder does, the
// exchange gets a 204 by the deadline D (tmax 1000: D = arrival + 995ms),
// the failure is counted by kind, and the bidder is called once. A bidder
// that never answers holds the call for 10 s or for ever: bidguard leaves
// at D, far inside the bound below. (With tmax 200, a process starved of
// CPU under load shed the request before calling the bidder, or let the
// bidder's answer miss D: the kinds were not counted, the test failed.)
func TestBidderFailuresAnswered204ByTheDeadline(t *testing.T) {
	const tmax = 1000
	bomb := gzipped(t, make([]byte, 4<<20))
	f := func(name, kind string, h http.HandlerFunc, rawURL string) {
		t.Run(name, func(t *testing.T) {
			url := rawURL
			var b *testbidder.Bidder
			if h != nil {
				b = testbidder.HTTP(t, h)
				url = b.URL
			}
			sc := startSidecar(t, compile(t, fmt.Sprintf(baseConfig, url)+"limits: {maxResponseBytes: 65536}\n", nil))
			a := sc.post("/bid", withTmax(t, tmax))
			require.Equal(t, 204, a.status)
			require.Empty(t, a.body)
			require.Equal(t, "0", a.header.Get("X-Bidguard-Rejected"))
			require.Equal(t, sc.holder.Load().Version, a.header.Get("X-Bidguard-Config"))
			require.Less(t, a.elapsed, tmax*time.Millisecond+4*time.Second, "answered by the deadline (plus slack), not when the bidder gives up")
			if b != nil {
				require.EqualValues(t, 1, b.Calls.Load(), "one call, no retry")
			}
			if kind == "" {
				require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="no_bid"}`))
				return
			}
			require.EqualValues(t, 1, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="`+kind+`"}`))
			require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="upstream_error"}`))
		})
	}
	withHeader := func(k, v string, status int, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(k, v)
			w.WriteHeader(status)
			_, _ = w.Write(body)
		}
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		testbidder.Answer(200, readFile(t, "typical-response.json"))(w, r)
	}

	f("slow past the deadline", "timeout", slow, "")
	f("hung", "timeout", nil, rawBidder(t, func(c net.Conn) {
		readRequest(c)
		_ = c.SetReadDeadline(time.Time{})
		_, _ = c.Read(make([]byte, 1)) // until the sidecar or the test closes it
	}))
	f("connection refused", "connect", nil, "http://"+refusedAddr(t))
	f("reset", "reset", nil, rawBidder(t, func(c net.Conn) {
		readRequest(c)
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}))
	f("garbage instead of HTTP", "reset", nil, rawBidder(t, func(c net.Conn) {
		readRequest(c)
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH\r\n\r\n"))
		_ = c.Close()
	}))
	answerRaw := func(wire string) string {
		return rawBidder(t, func(c net.Conn) {
			readRequest(c)
			_, _ = c.Write([]byte(wire))
			_ = c.Close()
		})
	}
	f("199", "http_status", nil, answerRaw("HTTP/1.1 199 Odd\r\nContent-Length: 2\r\n\r\n{}"))
	f("101 without an upgrade asked", "http_status", nil, answerRaw("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"))
	f("100 then 500", "http_status", nil, answerRaw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"))
	f("too many interim answers", "reset", nil, answerRaw(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 9)))
	f("headers over 8 KiB", "too_large", nil, answerRaw("HTTP/1.1 200 OK\r\nX-Pad: "+strings.Repeat("a", 9000)+"\r\nContent-Length: 2\r\n\r\n{}"))
	f("body shorter than Content-Length", "reset", nil, answerRaw("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\":"))
	f("broken chunks", "reset", nil, answerRaw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"))
	f("Content-Length twice", "reset", nil, answerRaw("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{} "))
	f("500", "http_status", testbidder.Answer(500, []byte(`{"error":"boom"}`)), "")
	f("400", "http_status", testbidder.Answer(400, nil), "")
	f("204", "", testbidder.Answer(204, nil), "")
	f("empty 200", "", testbidder.Answer(200, nil), "")
	f("blank 200", "", testbidder.Answer(200, []byte(" \r\n")), "")
	f("{}", "", testbidder.Answer(200, []byte(`{}`)), "")
	f("null", "", testbidder.Answer(200, []byte(`null`)), "")
	f("form feed, not JSON white space", "bad_json", testbidder.Answer(200, []byte("\f")), "")
	f("form feed before null", "bad_json", testbidder.Answer(200, []byte("\fnull")), "")
	f("no bids", "", testbidder.Answer(200, []byte(`{"id":"req-typical-1","seatbid":[]}`)), "")
	f("malformed JSON", "bad_json", testbidder.Answer(200, []byte(`{"id":"r","seatbid":[`)), "")
	f("wrong type", "bad_json", testbidder.Answer(200, []byte(`{"id":"r","seatbid":[{"bid":[{"id":"b","impid":"1","price":"1.5"}]}]}`)), "")
	f("trailing data", "bad_json", testbidder.Answer(200, []byte(`{"id":"r"} {}`)), "")
	f("a bid request", "bad_json", testbidder.Answer(200, withTmax(t, 100)), "")
	f("oversized", "too_large", testbidder.Answer(200, bytes.Repeat([]byte(" "), 70000)), "")
	f("gzip bomb", "too_large", withHeader("Content-Encoding", "gzip", 200, bomb), "")
	f("corrupt gzip", "decompress", withHeader("Content-Encoding", "gzip", 200, []byte("not gzip at all")), "")
	f("redirect", "redirect", withHeader("Location", "http://127.0.0.1:1/", 302, nil), "")
	f("unknown Content-Encoding", "bad_encoding", withHeader("Content-Encoding", "br", 200, []byte("xx")), "")
}

// TestGzipResponseDecoded: a gzip answer under the cap is judged as usual.
func TestGzipResponseDecoded(t *testing.T) {
	body := gzipped(t, readFile(t, "typical-response.json"))
	sc, _ := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}, "")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 200, a.status)
	require.Len(t, bidIDs(t, a.body), 3)
	require.Empty(t, a.header.Get("Content-Encoding"))
	require.Equal(t, "application/json; charset=utf-8", a.header.Get("Content-Type"))
}

func TestPreflightNoBid(t *testing.T) {
	f := func(tmax int, upstreamDeadline string) {
		t.Helper()
		b := testbidder.HTTP(t, testbidder.Answer(200, readFile(t, "typical-response.json")))
		cfg := fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid%s}\n", b.URL, upstreamDeadline)
		sc := startSidecar(t, compile(t, cfg, nil))
		a := sc.post("/bid", withTmax(t, tmax))
		require.Equal(t, 204, a.status)
		require.Zero(t, b.Calls.Load(), "the bidder is not called")
		require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="budget"}`))
		require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="shed"}`))
	}
	f(20, "")                                               // B = 20 - 5 - 7 - ε < 10
	f(300, ", deadline: {minBidderMs: 400}")                // per-upstream override
	f(0, ", deadline: {defaultTmaxMs: 15}")                 // no tmax: defaultTmaxMs
	f(5000, ", deadline: {maxTmaxMs: 25, minBidderMs: 13}") // capped at maxTmaxMs
	f(100, ", deadline: {returnMarginMs: 90}")              // the margin comes off T
}

func TestInFlightLimiter(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	entered := make(chan struct{}, 1)
	sc, b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(204)
	}, "limits: {maxInFlight: 1}\n")
	first := make(chan answer, 1)
	go func() { first <- sc.post("/bid", withTmax(t, 1000)) }()
	<-entered
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 204, a.status)
	require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="inflight"}`))
	once.Do(func() { close(release) })
	require.Equal(t, 204, (<-first).status)
	require.EqualValues(t, 1, b.Calls.Load())
	// The slot is free again.
	go func() { <-entered }()
	require.Equal(t, 204, sc.post("/bid", withTmax(t, 1000)).status)
	require.EqualValues(t, 2, b.Calls.Load())
}

func TestBidsLimit(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(200, readFile(t, "typical-response.json")), "limits: {maxBids: 2}\n")
	a := sc.post("/bid", withTmax(t, 1000))
	require.Equal(t, 204, a.status)
	require.Equal(t, "3", a.header.Get("X-Bidguard-Rejected"))
	require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="rejected"}`))
	require.EqualValues(t, 3, sc.metric(`bidguard_bids_rejected_total{seat="other",gate="limits.maxBids",nbr="300"}`))
}

// TestOnErrorStatus: with onError: status the exchange gets 504 for a
// bidder timeout and 502 for every other bidder failure; no-bids and
// rejections stay 204. tmax 1000: with 100, a loaded machine turned a quick
// failure into a timeout (504) or a shed (204).
func TestOnErrorStatus(t *testing.T) {
	f := func(name string, h http.HandlerFunc, status int, body string) {
		t.Run(name, func(t *testing.T) {
			b := testbidder.HTTP(t, h)
			sc := startSidecar(t, compile(t, fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid, onError: status}\n"+
				"policy:\n  gates: [{gate: impidMatch}, {gate: bidSanity}]\n", b.URL), nil))
			a := sc.post("/bid", withTmax(t, 1000))
			require.Equal(t, status, a.status)
			require.Equal(t, body, string(a.body))
			if status >= 500 {
				require.Equal(t, "0", a.header.Get("X-Bidguard-Rejected"))
				require.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"))
				require.EqualValues(t, 1, sc.metric(`bidguard_requests_total{upstream="dsp",outcome="upstream_error"}`))
			}
		})
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	f("timeout", slow, 504, "bidder failed: timeout\n")
	f("500", testbidder.Answer(500, nil), 502, "bidder failed: http_status\n")
	f("malformed JSON", testbidder.Answer(200, []byte("{")), 502, "bidder failed: bad_json\n")
	f("redirect", testbidder.Answer(302, nil), 502, "bidder failed: redirect\n")
	f("no-bid", testbidder.Answer(204, nil), 204, "")
	f("every bid rejected", testbidder.Answer(200, []byte(allBad)), 204, "")
}
