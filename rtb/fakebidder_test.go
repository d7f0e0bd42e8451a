package rtb

import (
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

	"github.com/bidguard/bidguard/internal/testbidder"
)

// keepAliveBidder is a scripted HTTP/1.1 bidder (a testbidder.Raw): it
// reads requests with fasthttp's parser, counts each request id it read,
// and answers with a bid whose id names the request, so a stale answer is
// seen. Hooks change what it does on the wire.
type keepAliveBidder struct {
	*testbidder.Bidder

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
}

func newKeepAliveBidder(t *testing.T, configure func(b *keepAliveBidder)) *keepAliveBidder {
	t.Helper()
	b := &keepAliveBidder{seen: map[string]int{}, readOn: map[string]net.Conn{}}
	if configure != nil {
		configure(b)
	}
	var opts []testbidder.Option
	if b.tls != nil {
		opts = append(opts, testbidder.WithTLS(b.tls))
	}
	b.Bidder = testbidder.Raw(t, b.serve, opts...)
	return b
}

// url is the bidder's URL for path.
func (b *keepAliveBidder) url(path string) string { return b.URL + path }

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

func (b *keepAliveBidder) serve(tc *testbidder.Conn) {
	c := tc.Conn
	br := tc.Reader()
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
		b.Calls.Add(1)
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

func httpAnswer(body []byte) []byte { return testbidder.Wire(200, body) }

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
