package rtb

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// keepAliveBidder is a scripted HTTP/1.1 bidder on loopback TCP: it reads
// requests with fasthttp's parser, counts each request id it read, and
// answers with a bid whose id names the request, so a stale answer is seen.
// Hooks change what it does on the wire.
type keepAliveBidder struct {
	t    *testing.T
	addr string

	// idleClose closes a connection that waits longer for its next request
	// (a bidder's keep-alive timeout; 0: never).
	idleClose time.Duration
	// after, when set, runs after each answer is written on c (stray bytes).
	after func(c net.Conn, reqID string, n int)
	// beforeRead, when set, runs before the n-th request (from 1) of a
	// connection is read; returning false closes the connection unread.
	beforeRead func(c net.Conn, n int) bool
	// tls, when set, serves HTTPS.
	tls *tls.Config
	// answer, when set, returns the bytes written for a request instead
	// of httpAnswer(bidFor(reqID)).
	answer func(reqID string) []byte

	mu     sync.Mutex
	seen   map[string]int      // request id → times read
	readOn map[string]net.Conn // request id → the connection it was read on
	ln     net.Listener
	conns  map[net.Conn]bool
	wg     sync.WaitGroup

	accepted atomic.Int64
}

func newKeepAliveBidder(t *testing.T, configure func(b *keepAliveBidder)) *keepAliveBidder {
	t.Helper()
	b := &keepAliveBidder{t: t, seen: map[string]int{}, readOn: map[string]net.Conn{}, conns: map[net.Conn]bool{}}
	if configure != nil {
		configure(b)
	}
	b.start("127.0.0.1:0")
	t.Cleanup(b.stop)
	return b
}

// start listens on addr (the same port again after stop: a restart).
func (b *keepAliveBidder) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(b.t, err)
	if b.tls != nil {
		ln = tls.NewListener(ln, b.tls)
	}
	b.mu.Lock()
	b.ln, b.addr = ln, ln.Addr().String()
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			b.mu.Lock()
			b.conns[c] = true
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.serve(c)
				b.mu.Lock()
				delete(b.conns, c)
				b.mu.Unlock()
				_ = c.Close()
			}()
		}
	}()
}

// stop closes the listener and every connection (a bidder process ending).
func (b *keepAliveBidder) stop() {
	b.mu.Lock()
	_ = b.ln.Close()
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// openConns is the number of connections the bidder holds open.
func (b *keepAliveBidder) openConns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

func (b *keepAliveBidder) url(path string) string {
	if b.tls != nil {
		return "https://" + b.addr + path
	}
	return "http://" + b.addr + path
}

// timesSeen returns how often the bidder read a request with this id.
func (b *keepAliveBidder) timesSeen(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen[id]
}

// connOf returns the connection the request with this id was read on.
func (b *keepAliveBidder) connOf(id string) net.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readOn[id]
}

func (b *keepAliveBidder) serve(c net.Conn) {
	br := bufio.NewReader(c)
	var req fasthttp.Request
	for n := 1; ; n++ {
		if b.beforeRead != nil && !b.beforeRead(c, n) {
			return
		}
		dl := time.Time{}
		if b.idleClose > 0 {
			dl = time.Now().Add(b.idleClose)
		}
		_ = c.SetReadDeadline(dl)
		if _, err := br.Peek(1); err != nil {
			return // idle timeout, EOF, or stop
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := req.Read(br); err != nil {
			return
		}
		var r struct{ ID string }
		_ = json.Unmarshal(req.Body(), &r)
		b.mu.Lock()
		b.seen[r.ID]++
		b.readOn[r.ID] = c
		b.mu.Unlock()
		wire := httpAnswer(bidFor(r.ID))
		if b.answer != nil {
			wire = b.answer(r.ID)
		}
		if _, err := c.Write(wire); err != nil {
			return
		}
		if b.after != nil {
			b.after(c, r.ID, n)
		}
	}
}

// bidFor is a valid answer for the request id: one bid "<id>-bid" on imp 1.
func bidFor(id string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"seatbid":[{"seat":"s","bid":[{"id":%q,"impid":"1","price":1.5,"crid":"c","adomain":["a.com"]}]}]}`, id, id+"-bid")
}

func httpAnswer(body []byte) []byte {
	return append(fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)), body...)
}

// auction posts a request with a fresh id to path and requires the bidder's
// fresh answer for it: a bid named after this request, no other.
func (sc *sidecar) auction(path string) string {
	sc.t.Helper()
	id, err := sc.tryAuction(path)
	require.NoError(sc.t, err)
	return id
}

// tryAuction is auction for any goroutine: it reports what went wrong.
func (sc *sidecar) tryAuction(path string) (string, error) {
	id := "auction-" + strconv.FormatInt(auctionID.Add(1), 10)
	resp, err := client.Post(sc.base+path, "application/json", bytes.NewReader(requestWithID(sc.t, id)))
	if err != nil {
		return id, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return id, err
	}
	if resp.StatusCode != 200 {
		return id, fmt.Errorf("auction %s lost: %d %s (%s)", id, resp.StatusCode, body, sc.failureCounts())
	}
	var r struct {
		SeatBid []struct {
			Bid []struct{ ID string } `json:"bid"`
		} `json:"seatbid"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.SeatBid) != 1 || len(r.SeatBid[0].Bid) != 1 || r.SeatBid[0].Bid[0].ID != id+"-bid" {
		return id, fmt.Errorf("auction %s got another answer: %s", id, body)
	}
	return id, nil
}

// failureCounts lists the non-zero error, shed and close counters, to say
// why an auction was lost.
func (sc *sidecar) failureCounts() string {
	var b bytes.Buffer
	sc.srv.WriteMetrics(&b)
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		for _, name := range []string{"bidguard_upstream_errors_total", "bidguard_shed_total", "bidguard_upstream_conns_closed_total", "bidguard_upstream_resends_total"} {
			if strings.HasPrefix(line, name) && !strings.HasSuffix(line, " 0") {
				out = append(out, line)
			}
		}
	}
	return strings.Join(out, "; ")
}

// auctionID numbers requests across a test binary run, so ids never repeat.
var auctionID atomic.Int64

// requestWithID is the typical request with id replaced (tmax 1000).
func requestWithID(t testing.TB, id string) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(readFileOnce(t, "typical-request.json"), &m); err != nil {
		panic(err)
	}
	m["id"], _ = json.Marshal(id)
	m["tmax"] = json.RawMessage("1000")
	b, _ := json.Marshal(m)
	return b
}

var typicalFiles sync.Map

// readFileOnce is readFile cached, safe from any goroutine.
func readFileOnce(t testing.TB, name string) []byte {
	if b, ok := typicalFiles.Load(name); ok {
		return b.([]byte)
	}
	b := readFile(t, name)
	typicalFiles.Store(name, b)
	return b
}

// burst runs n auctions at once (so the pool holds several connections),
// requires every one to get its own answer, and returns their ids.
func (sc *sidecar) burst(path string, n int) []string {
	sc.t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = sc.tryAuction(path) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(sc.t, err)
	}
	return ids
}
