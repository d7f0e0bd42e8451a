package faults

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Modes of a switchBidder.
const (
	bidderUp   int32 = iota // good bids
	bidder503               // 503 Service Unavailable at once
	bidderHang              // never answers (until bidguard closes the connection)
)

// switchBidder is a fake bidder at a fixed loopback address that can be
// killed (its listener and connections closed: connects are refused),
// brought back on the same address, made to hang or to answer 503.
type switchBidder struct {
	t     testing.TB
	addr  string
	mode  atomic.Int32
	calls atomic.Int64
	mu    sync.Mutex
	srv   *http.Server // nil while killed
	wg    sync.WaitGroup
}

func newSwitchBidder(t testing.TB) *switchBidder {
	t.Helper()
	b := &switchBidder{t: t, addr: "127.0.0.1:0"}
	b.start()
	t.Cleanup(b.kill)
	return b
}

func (b *switchBidder) url() string { return "http://" + b.addr + "/bid" }

// start serves on b.addr (the same port after a kill).
func (b *switchBidder) start() {
	b.t.Helper()
	ln, err := net.Listen("tcp", b.addr)
	require.NoError(b.t, err)
	b.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(b.serve)}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	b.wg.Add(1)
	go func() { defer b.wg.Done(); _ = srv.Serve(ln) }()
}

// kill closes the listener and every connection: the bidder is gone.
func (b *switchBidder) kill() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		b.wg.Wait()
	}
}

func (b *switchBidder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.calls.Add(1)
	switch b.mode.Load() {
	case bidder503:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case bidderHang:
		<-r.Context().Done() // bidguard gave up and closed the connection, or the test ended
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(bidResponse(requestID(body), true))
}

// Breaker settings of the scenarios.
const (
	breakerFailures  = 5
	breakerOpenMs    = 500
	breakerSuccesses = 2
)

// TestBreaker: a bidder killed, hanging or answering 503. After
// breaker.failures failed auctions (each 204 by its deadline) the breaker
// opens: it is logged at WARN with the last error, /readyz answers 503
// (admin.readyRequiresUpstream), and auctions are answered 204 at once
// (p99 under 1 ms, measured by the client) without calling the bidder.
// When the bidder is back, auctions are served again within openMs (plus
// the deadline of a trial in flight) and a few requests.
func TestBreaker(t *testing.T) {
	slow(t)
	for _, tc := range []struct {
		id      string
		fail    func(b *switchBidder)
		restore func(b *switchBidder)
		line    string // the failure log line's start
		last    string // the breaker's last_error
	}{
		{"bidder/breaker-killed", (*switchBidder).kill, (*switchBidder).start, "bidder unreachable: connect refused", "connect refused"},
		{"bidder/breaker-hanging", func(b *switchBidder) { b.mode.Store(bidderHang) }, func(b *switchBidder) { b.mode.Store(bidderUp) },
			"bidder timed out: no answer by the deadline", "no answer by the deadline"},
		{"bidder/breaker-503", func(b *switchBidder) { b.mode.Store(bidder503) }, func(b *switchBidder) { b.mode.Store(bidderUp) },
			"bidder answered an error status: status 503", "status 503"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			scenario(t, tc.id)
			b := newSwitchBidder(t)
			keys := fmt.Sprintf(", breaker: {failures: %d, openMs: %d, successes: %d}", breakerFailures, breakerOpenMs, breakerSuccesses)
			p := startProc(t, procOpts{extra: upstreamYAML(b.url(), keys) + "admin: {readyRequiresUpstream: true}\n"})
			const state = `bidguard_upstream_breaker_state{upstream="dsp"}`
			for i := range 3 {
				require.Equal(t, 200, byDeadline(t, p, fmt.Sprint("up", i)).status)
			}
			require.Equal(t, 200, readyz(t, p))

			tc.fail(b)
			failed := 0
			for p.metric(state) != 1 {
				require.Less(t, failed, breakerFailures+2, "the breaker opens after %d failures", breakerFailures)
				require.Equal(t, 204, byDeadline(t, p, fmt.Sprint("down", failed)).status)
				failed++
			}
			t.Logf("open after %d failed auctions", failed)
			require.Equal(t, 503, readyz(t, p), "every upstream's breaker is open")
			logs := p.stderr.String()
			require.Contains(t, logs, `level=WARN msg="upstream circuit breaker open" upstream=dsp from=closed to=open failures=5 open_ms=500 last_error="`+tc.last+`"`)
			require.Contains(t, logs, `level=WARN msg="`+tc.line)

			// Open: 204 at once, the bidder not called (but for a trial,
			// should openMs pass meanwhile).
			// The client shares two cores with the machine's other work,
			// whose scheduling delays reach milliseconds: the p99 must be
			// under 1 ms in one of three rounds (a breaker that waited for
			// the bidder would miss it in all), the median in every one.
			calls, shed := b.calls.Load(), p.metric(`bidguard_shed_total{reason="breaker"}`)
			const perRound = 300
			var p99s []time.Duration
			for range 3 {
				lat := fastNoBids(t, p.addr, perRound)
				p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
				t.Logf("open breaker: %d answers 204, p50 %v p99 %v max %v", perRound, p50, p99, lat[len(lat)-1])
				require.LessOrEqual(t, p50, time.Millisecond, "an open breaker answers at once")
				if p99s = append(p99s, p99); p99 <= time.Millisecond {
					break
				}
			}
			require.LessOrEqual(t, slices.Min(p99s), time.Millisecond, "an open breaker answers at once: p99 of each round %v", p99s)
			rounds := len(p99s)
			require.LessOrEqual(t, b.calls.Load()-calls, int64(1), "the bidder is not called while open")
			require.GreaterOrEqual(t, p.metric(`bidguard_shed_total{reason="breaker"}`)-shed, float64(rounds*perRound-1))

			// The bidder is back: served again within openMs (and a
			// trial's deadline) and a few requests.
			tc.restore(b)
			back := time.Now()
			var statuses []int
			for p.metric(state) != 0 {
				require.Less(t, time.Since(back), time.Duration(breakerOpenMs+bidderTmaxMs+500)*time.Millisecond,
					"recovered within openMs + a trial's deadline; answers %v", statuses)
				statuses = append(statuses, byDeadline(t, p, fmt.Sprint("back", len(statuses))).status)
				time.Sleep(20 * time.Millisecond)
			}
			first := slices.Index(statuses, 200)
			t.Logf("closed %v after the bidder came back; answers %v", time.Since(back).Round(time.Millisecond), statuses)
			require.GreaterOrEqual(t, first, 0)
			require.LessOrEqual(t, len(statuses)-first, breakerSuccesses, "closed after %d successes", breakerSuccesses)
			for _, s := range statuses[first:] {
				require.Equal(t, 200, s, "a half-open breaker serves the trickle it lets through")
			}
			require.Equal(t, 200, byDeadline(t, p, "closed").status)
			require.Equal(t, 200, readyz(t, p))
			require.Contains(t, p.stderr.String(), `level=WARN msg="upstream circuit breaker closed" upstream=dsp from=half-open to=closed successes=2`)
			p.healthy()
		})
	}
}

// readyz returns the status of the admin /readyz.
func readyz(t testing.TB, p *proc) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + p.admin + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// fastNoBids sends n bid requests one after the other on one keep-alive
// connection, requires each answer to be a 204, and returns their
// latencies from the write to the answer read, sorted.
func fastNoBids(t testing.TB, addr string, n int) []time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(c)
	req := httpRequest(bidRequest("open", bidderTmaxMs))
	var buf []byte
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		_, err := c.Write(req)
		require.NoError(t, err)
		var status int
		status, buf, err = readLean(br, buf)
		require.NoError(t, err)
		lat = append(lat, time.Since(start))
		require.Equal(t, 204, status)
	}
	slices.Sort(lat)
	return lat
}
