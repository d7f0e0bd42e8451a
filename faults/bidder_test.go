package faults

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bidResponse answers request id with good bids for imps 1-3 and one bad
// bid (impid 999: impidMatch rejects it) unless only good ones are asked.
func bidResponse(id string, bad bool) []byte {
	badBid := ""
	if bad {
		badBid = `,{"id":"bad-1","impid":"999","price":2.5,"adomain":["evil.example"],"crid":"c9","adm":"<b>x</b>"}`
	}
	return []byte(fmt.Sprintf(`{"id":%q,"cur":"USD","seatbid":[{"seat":"s1","bid":[`+
		`{"id":"b1","impid":"1","price":1.5,"adomain":["brand.example"],"crid":"c1","w":300,"h":250,"adm":"<b>ad one</b>"},`+
		`{"id":"b2","impid":"2","price":0.9,"adomain":["brand.example"],"crid":"c2","w":728,"h":90,"adm":"<b>ad two</b>"}%s]}]}`, id, badBid))
}

// requestID pulls the "id" of a bid request body (the fake bidders echo it).
func requestID(body []byte) string {
	const key = `"id":"`
	for i := 0; i+len(key) < len(body); i++ {
		if string(body[i:i+len(key)]) == key {
			for j := i + len(key); j < len(body); j++ {
				if body[j] == '"' {
					return string(body[i+len(key) : j])
				}
			}
		}
	}
	return ""
}

// httpBidder is a fake bidder on loopback (net/http) counting its calls.
type httpBidder struct {
	*httptest.Server
	calls atomic.Int64
}

func newHTTPBidder(t testing.TB, h func(w http.ResponseWriter, r *http.Request, body []byte)) *httpBidder {
	t.Helper()
	return startHTTPBidder(t, 0, h)
}

// startHTTPBidder is newHTTPBidder with the bidder's keep-alive idle
// timeout (0: net/http's default), set before the server starts serving.
func startHTTPBidder(t testing.TB, idle time.Duration, h func(w http.ResponseWriter, r *http.Request, body []byte)) *httpBidder {
	t.Helper()
	b := &httpBidder{}
	b.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.calls.Add(1)
		h(w, r, body)
	}))
	b.Config.IdleTimeout = idle
	b.Start()
	t.Cleanup(b.Close)
	return b
}

// goodBidder answers after latency with two good bids and one bad one.
func goodBidder(t testing.TB, latency time.Duration) *httpBidder {
	return goodBidderIdle(t, latency, 0)
}

// goodBidderIdle is goodBidder closing connections idle for longer than idle.
func goodBidderIdle(t testing.TB, latency, idle time.Duration) *httpBidder {
	return startHTTPBidder(t, idle, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if latency > 0 {
			time.Sleep(latency)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bidResponse(requestID(body), true))
	})
}

// rawBidder accepts TCP connections on loopback and runs script on each;
// every connection is closed when the test ends.
type rawBidder struct {
	ln    net.Listener
	url   string
	conns atomic.Int64
	mu    sync.Mutex
	open  []net.Conn
	wg    sync.WaitGroup
}

func newRawBidder(t testing.TB, script func(c net.Conn)) *rawBidder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &rawBidder{ln: ln, url: "http://" + ln.Addr().String() + "/bid"}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			b.mu.Lock()
			b.open = append(b.open, c)
			b.mu.Unlock()
			b.wg.Add(1)
			go func() { defer b.wg.Done(); defer c.Close(); script(c) }()
		}
	}()
	t.Cleanup(b.close)
	return b
}

func (b *rawBidder) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	for _, c := range b.open {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// readBidRequest reads one HTTP request (Content-Length framed, as bidguard
// sends) from br and returns its body.
func readBidRequest(br interface {
	ReadString(byte) (string, error)
	Read([]byte) (int, error)
}) ([]byte, error) {
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if line == "\r\n" {
			break
		}
		var v int
		if _, err := fmt.Sscanf(line, "Content-Length: %d", &v); err == nil {
			n = v
		}
	}
	body := make([]byte, n)
	_, err := io.ReadFull(br, body)
	return body, err
}
