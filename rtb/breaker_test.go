package rtb

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testserve"
)

// logBuffer collects log lines from any goroutine.
type logBuffer struct{ testserve.Buffer }

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

var errRefused = fmt.Errorf("upstream: dial x: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})

// TestBreakerStates walks the state machine on a fake clock.
func TestBreakerStates(t *testing.T) {
	var now time.Duration
	var logs logBuffer
	fm := newMeters().forward("dsp")
	b := newBreaker("dsp", logs.logger(), fm.breaker)
	b.now = func() time.Duration { return now }
	b.configure(3, time.Second, 2)
	call := func(v verdict, err error, status int) {
		t.Helper()
		ok, trial := b.allow()
		require.True(t, ok)
		b.report(trial, v, err, status)
	}
	requireState := func(s breakerState) {
		t.Helper()
		require.Equal(t, s, b.current())
		require.EqualValues(t, s, fm.breaker.Get())
	}

	call(callFailed, errRefused, 0)
	call(callFailed, errRefused, 0)
	call(callOK, nil, 200) // a success resets the count
	call(callFailed, errRefused, 0)
	call(callNeutral, errRefused, 0) // a reset neither counts nor resets
	call(callFailed, errRefused, 0)
	requireState(breakerClosed)
	call(callFailed, errRefused, 0)
	requireState(breakerOpen)
	require.Contains(t, logs.String(), `level=WARN msg="upstream circuit breaker open" upstream=dsp from=closed to=open failures=3 open_ms=1000 last_error="connect refused"`)

	ok, _ := b.allow()
	require.False(t, ok)
	require.True(t, b.refuses())
	b.report(false, callFailed, errRefused, 0) // a late report of a call let through before
	now += time.Second - 1
	require.True(t, b.refuses())

	// Half-open: one trial at a time; its failure opens it again.
	now++
	require.False(t, b.refuses())
	ok, trial := b.allow()
	require.True(t, ok && trial)
	requireState(breakerHalfOpen)
	ok, _ = b.allow()
	require.False(t, ok, "one trial at a time")
	b.report(true, callFailed, nil, 503)
	requireState(breakerOpen)
	require.Contains(t, logs.String(), `to=open failures=1 open_ms=1000 last_error="status 503"`)

	// A neutral trial frees the slot without counting; two successes close.
	now += time.Second
	call(callNeutral, nil, 0)
	requireState(breakerHalfOpen)
	call(callOK, nil, 204)
	requireState(breakerHalfOpen)
	call(callOK, nil, 200)
	requireState(breakerClosed)
	require.Contains(t, logs.String(), `msg="upstream circuit breaker closed" upstream=dsp from=half-open to=closed successes=2`)

	// failures: 0 never opens.
	b.configure(0, time.Second, 2)
	for range 100 {
		call(callFailed, errRefused, 0)
	}
	requireState(breakerClosed)
}

// TestFailureLog: the first failure of a kind is logged at once, the next
// ones counted into the first line after the window; kinds are apart.
func TestFailureLog(t *testing.T) {
	var now time.Duration
	var logs logBuffer
	f := &failureLog{log: logs.logger(), name: "dsp", now: func() time.Duration { return now }}
	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }
	f.record(kindConnect, errRefused, 0)
	require.Len(t, lines(), 1)
	require.Contains(t, lines()[0], `msg="bidder unreachable: connect refused" upstream=dsp kind=connect count=1`)
	for range 35 {
		now += 100 * time.Millisecond
		f.record(kindConnect, errRefused, 0)
	}
	f.record(kindHTTPStatus, nil, 503)
	require.Len(t, lines(), 2)
	require.Contains(t, lines()[1], `msg="bidder answered an error status: status 503" upstream=dsp kind=http_status count=1`)
	now += 6500 * time.Millisecond // 10 s since the first line
	f.record(kindConnect, errRefused, 0)
	require.Len(t, lines(), 3)
	require.Contains(t, lines()[2], `msg="bidder unreachable: connect refused, 36 in the last 10 s" upstream=dsp kind=connect count=36`)
}

// breakerConfig routes /bid to url with a quick breaker and extra
// top-level YAML.
func breakerConfig(url, extra string) string {
	return fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid, breaker: {failures: 3, openMs: 200, successes: 2}}\n%spolicy:\n  gates: [{gate: impidMatch}, {gate: bidSanity}]\n", url, extra)
}

// startLogged starts a sidecar on snap that logs into logs.
func startLogged(t *testing.T, yaml string, logs *logBuffer) *sidecar {
	t.Helper()
	sc := startSidecarWith(t, nil, func(s *Server) { s.log, s.clients.log = logs.logger(), logs.logger() })
	sc.holder.Store(compile(t, yaml, nil))
	return sc
}

func (sc *sidecar) readyz() int {
	sc.t.Helper()
	resp, err := client.Get(sc.admin + "/readyz")
	require.NoError(sc.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestBreakerBidderDown: a bidder that refuses, hangs or answers 503
// opens the breaker after three failures; then requests are answered 204
// without reaching it (shed reason breaker); the failures and transitions
// are logged.
func TestBreakerBidderDown(t *testing.T) {
	hung := func(t *testing.T) (string, func() int64) {
		b := testbidder.Raw(t, func(c *testbidder.Conn) { _, _ = io.Copy(io.Discard, c) }) // held open, never answered
		return b.URL + "/bid", b.Accepted.Load
	}
	f := func(name string, bidder func(t *testing.T) (url string, calls func() int64), kind, logged string) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, calls := bidder(t)
			var logs logBuffer
			sc := startLogged(t, breakerConfig(url, ""), &logs)
			for range 3 {
				require.Equal(t, 204, sc.post("/bid", withTmax(t, 100)).status)
			}
			require.EqualValues(t, 3, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="`+kind+`"}`), sc.failureCounts())
			require.EqualValues(t, breakerOpen, sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`))
			before := calls()
			var slowest time.Duration
			for range 5 {
				a := sc.post("/bid", withTmax(t, 100))
				require.Equal(t, 204, a.status)
				slowest = max(slowest, a.elapsed)
			}
			t.Logf("open breaker: slowest of 5 answers %v (client round trip included)", slowest)
			require.EqualValues(t, 5, sc.metric(`bidguard_shed_total{reason="breaker"}`))
			require.Equal(t, before, calls(), "an open breaker sends nothing to the bidder")
			require.EqualValues(t, 3, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="`+kind+`"}`))
			require.Contains(t, logs.String(), logged)
			require.Contains(t, logs.String(), `msg="upstream circuit breaker open" upstream=dsp from=closed to=open failures=3`)
		})
	}
	f("refuses", func(t *testing.T) (string, func() int64) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, ln.Close())
		return "http://" + ln.Addr().String() + "/bid", func() int64 { return 0 }
	}, "connect", `msg="bidder unreachable: connect refused" upstream=dsp kind=connect count=1`)
	f("hangs", hung, "timeout", `msg="bidder timed out: no answer by the deadline" upstream=dsp kind=timeout count=1`)
	f("answers 503", func(t *testing.T) (string, func() int64) {
		b := testbidder.HTTP(t, testbidder.Answer(503, []byte("down")))
		return b.URL + "/bid", b.Calls.Load
	}, "http_status", `msg="bidder answered an error status: status 503" upstream=dsp kind=http_status count=1`)
}

// TestBreakerRecovers: a bidder killed and restarted on its port: the
// breaker opens, /readyz (with admin.readyRequiresUpstream) turns 503,
// and once the bidder is back the breaker closes after openMs and two
// trials, /readyz turns 200, the transitions logged.
func TestBreakerRecovers(t *testing.T) {
	b := newKeepAliveBidder(t, nil)
	var logs logBuffer
	sc := startLogged(t, breakerConfig(b.url("/bid"), "admin: {readyRequiresUpstream: true}\n"), &logs)
	sc.auction("/bid")
	require.Equal(t, 200, sc.readyz())

	b.Stop()
	for range 3 {
		require.Equal(t, 204, sc.post("/bid", withTmax(t, 100)).status)
	}
	require.EqualValues(t, breakerOpen, sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`), sc.failureCounts())
	require.Equal(t, 503, sc.readyz(), "every upstream's breaker is open")

	b.Restart()
	require.Eventually(t, func() bool {
		_, err := sc.tryAuction("/bid")
		return err == nil && sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`) == float64(breakerClosed)
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 200, sc.readyz())
	out := logs.String()
	for _, want := range []string{
		`msg="upstream circuit breaker open" upstream=dsp from=closed to=open failures=3 open_ms=200 last_error=`,
		`msg="upstream circuit breaker half-open" upstream=dsp from=open to=half-open`,
		`msg="upstream circuit breaker closed" upstream=dsp from=half-open to=closed successes=2`,
	} {
		require.Contains(t, out, want)
	}
}

// TestReadyzUpstreams: without admin.readyRequiresUpstream an open
// breaker leaves /readyz at 200, and with it one upstream still closed is
// enough.
func TestReadyzUpstreams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	dead := "http://" + ln.Addr().String() + "/bid"
	live := testbidder.HTTP(t, testbidder.Answer(204, nil))
	f := func(yaml string) {
		t.Helper()
		sc := startSidecar(t, compile(t, yaml, nil))
		for range 3 {
			require.Equal(t, 204, sc.post("/bid", withTmax(t, 100)).status)
		}
		require.EqualValues(t, breakerOpen, sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`))
		require.Equal(t, http.StatusOK, sc.readyz())
	}
	f(breakerConfig(dead, ""))
	f(fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid, breaker: {failures: 3}}\n  - {name: live, url: %q, path: /live}\nadmin: {readyRequiresUpstream: true}\npolicy:\n  gates: [{gate: impidMatch}]\n", dead, live.URL))
}

// TestBreakerAcrossReload: a reload that keeps the upstream's pool keeps
// its breaker's state and applies new thresholds; one that points the
// upstream elsewhere starts a closed breaker.
func TestBreakerAcrossReload(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	dead := "http://" + ln.Addr().String() + "/bid"
	sc := startSidecar(t, compile(t, breakerConfig(dead, ""), nil))
	for range 3 {
		require.Equal(t, 204, sc.post("/bid", withTmax(t, 100)).status)
	}
	require.EqualValues(t, breakerOpen, sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`))

	sc.holder.Store(compile(t, strings.Replace(breakerConfig(dead, ""), "openMs: 200", "openMs: 60000", 1), nil))
	require.Equal(t, 204, sc.post("/bid", withTmax(t, 100)).status)
	require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="breaker"}`), "still open after the reload")
	brk := sc.srv.cur.Load().routes["/bid"].pool.brk
	require.Equal(t, time.Minute, time.Duration(brk.openFor.Load()), "the new openMs applies")

	b := newKeepAliveBidder(t, nil)
	sc.holder.Store(compile(t, breakerConfig(b.url("/bid"), ""), nil))
	sc.auction("/bid")
	require.EqualValues(t, breakerClosed, sc.metric(`bidguard_upstream_breaker_state{upstream="dsp"}`))
}
