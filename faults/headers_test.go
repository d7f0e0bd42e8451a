package faults

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/stretchr/testify/require"
)

// headBidder is a raw fake bidder that keeps the header lines of every
// request it reads and answers each with good bids.
type headBidder struct {
	url   string
	mu    sync.Mutex
	heads [][]string // per request: the request line, then each header line
}

func newHeadBidder(t testing.TB) *headBidder {
	t.Helper()
	b := &headBidder{}
	raw := testbidder.Raw(t, func(c *testbidder.Conn) {
		br := bufio.NewReader(c)
		for {
			var head []string
			n := 0
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimRight(line, "\r\n")
				if line == "" {
					break
				}
				head = append(head, line)
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
					_, _ = fmt.Sscan(strings.TrimSpace(v), &n)
				}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(br, body); err != nil {
				return
			}
			b.mu.Lock()
			b.heads = append(b.heads, head)
			b.mu.Unlock()
			if _, err := c.Write([]byte(okResponse(string(bidResponse(requestID(body), true))))); err != nil {
				return
			}
		}
	})
	b.url = raw.URL + "/bid"
	return b
}

// last returns the last request's header lines by lower-cased name (each
// name's values in order) and its request line.
func (b *headBidder) last(t testing.TB) (string, map[string][]string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.heads, "the bidder got a request")
	head := b.heads[len(b.heads)-1]
	out := map[string][]string{}
	for _, line := range head[1:] {
		k, v, _ := strings.Cut(line, ":")
		k = strings.ToLower(k)
		out[k] = append(out[k], strings.TrimSpace(v))
	}
	return head[0], out
}

// TestHopByHopRequest: the exchange's hop-by-hop headers (RFC 9110
// §7.6.1 and the proxy ones), the headers its Connection headers name,
// and the headers bidguard writes itself never reach the bidder; its
// end-to-end headers do, and X-Forwarded-For gains the client's address.
func TestHopByHopRequest(t *testing.T) {
	scenario(t, "exchange/hop-by-hop-request")
	b := newHeadBidder(t)
	p := startProc(t, procOpts{upstream: b.url})
	a, _ := post(t, p.addr, bidRequest("hop", bidderTmaxMs),
		"Connection: X-Secret-Hop, x-also-hop", // post adds "Connection: close": two Connection headers
		"X-Secret-Hop: 1", "X-Also-Hop: 2",
		"Keep-Alive: timeout=5", "Proxy-Connection: keep-alive", "TE: trailers", "Upgrade: websocket",
		"Proxy-Authorization: Basic Zm9vOmJhcg==", "Proxy-Authenticate: Basic",
		"User-Agent: exchange/1.0", "Accept-Encoding: gzip",
		"Authorization: Bearer exchange-token", "X-Request-Id: req-42", "X-Forwarded-For: 10.0.0.1", "X-Kept: yes")
	require.Equal(t, 200, a.status, "the auction is served; body %s", a.body)
	checkAnswer(t, a)

	line, h := b.last(t)
	t.Logf("the bidder got %s with %v", line, h)
	require.Equal(t, "POST /bid HTTP/1.1", line)
	for _, name := range []string{"connection", "x-secret-hop", "x-also-hop", "keep-alive", "proxy-connection", "te", "trailer",
		"transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate", "accept-encoding"} {
		require.NotContains(t, h, name, "%s reached the bidder", name)
	}
	require.Equal(t, []string{"Bearer exchange-token"}, h["authorization"])
	require.Equal(t, []string{"req-42"}, h["x-request-id"])
	require.Equal(t, []string{"yes"}, h["x-kept"])
	require.Equal(t, []string{"10.0.0.1, 127.0.0.1"}, h["x-forwarded-for"])
	require.Len(t, h["host"], 1)
	require.Equal(t, strings.TrimPrefix(strings.TrimSuffix(b.url, "/bid"), "http://"), h["host"][0], "the bidder's host, not the exchange's")
	require.Len(t, h["user-agent"], 1)
	require.NotEqual(t, "exchange/1.0", h["user-agent"][0], "bidguard's own User-Agent")
	require.Len(t, h["content-length"], 1)
	p.healthy()
}

// TestHeaderFlood: exchange headers over headers.maxCount and
// headers.maxBytes are dropped whole and counted; those within the limits
// are forwarded intact and the auction is answered.
func TestHeaderFlood(t *testing.T) {
	scenario(t, "exchange/header-flood")
	b := newHeadBidder(t)
	const maxCount, maxBytes = 8, 512
	p := startProc(t, procOpts{extra: upstreamYAML(b.url, fmt.Sprintf(", headers: {maxCount: %d, maxBytes: %d}", maxCount, maxBytes))})
	big := "X-Big: " + strings.Repeat("b", 600) // over maxBytes alone: dropped for its size
	extra := []string{big}
	for i := range 20 {
		extra = append(extra, fmt.Sprintf("X-Flood-%02d: %s", i, strings.Repeat("v", 10)))
	}
	for round := range 3 {
		a := byDeadlineWith(t, p, fmt.Sprint("flood", round), extra...)
		require.Equal(t, 200, a.status)
	}
	_, h := b.last(t)
	var forwarded, size int
	for name, vs := range h {
		if strings.HasPrefix(name, "x-flood-") {
			forwarded++
			size += len(name) + len(vs[0]) + 4
			require.Equal(t, []string{strings.Repeat("v", 10)}, vs, "forwarded whole")
		}
	}
	require.NotContains(t, h, "x-big")
	require.Equal(t, maxCount, forwarded)
	require.LessOrEqual(t, size, maxBytes)
	for i := range maxCount {
		require.Contains(t, h, fmt.Sprintf("x-flood-%02d", i), "the first headers within the limits are forwarded")
	}
	m := p.metrics()
	require.EqualValues(t, 3*(20-maxCount), metricIn(t, m, `bidguard_upstream_headers_dropped_total{upstream="dsp",reason="count"}`))
	require.EqualValues(t, 3, metricIn(t, m, `bidguard_upstream_headers_dropped_total{upstream="dsp",reason="size"}`))
	p.healthy()
}

// byDeadlineWith is byDeadline with extra request header lines.
func byDeadlineWith(t *testing.T, p *proc, id string, extra ...string) response {
	t.Helper()
	a, took := post(t, p.addr, bidRequest(id, bidderTmaxMs), extra...)
	require.LessOrEqual(t, took, time.Duration(bidderTmaxMs)*time.Millisecond-returnMargin+deadlineTolerance, "answered by the deadline")
	checkAnswer(t, a)
	return a
}
