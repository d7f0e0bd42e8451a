package rtb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/internal/testbidder"
)

func TestDefaultMaxConns(t *testing.T) {
	require.Equal(t, 480, DefaultMaxConns(1024))
	require.Equal(t, 16, DefaultMaxConns(64))
	require.Equal(t, 16, DefaultMaxConns(0))
	require.Equal(t, 1<<20, DefaultMaxConns(1<<40))
	var rl syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl))
	srv, err := New(&engine.Holder{}, Options{})
	require.NoError(t, err)
	require.Equal(t, DefaultMaxConns(rl.Cur), srv.maxConns(), "derived from the soft limit")
}

// flakyListener fails Accept with errs, in order, then accepts from the
// real listener.
type flakyListener struct {
	net.Listener
	mu   sync.Mutex
	errs []error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptSurvivesEMFILE: temporary accept errors are retried with
// back-off and counted; serving goes on.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(204, nil), "")
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	fl := &flakyListener{Listener: inner, errs: []error{emfile, emfile, emfile, &net.OpError{Op: "accept", Err: syscall.ECONNABORTED}}}
	done := make(chan error, 1)
	go func() { done <- sc.srv.Serve(fl) }()
	resp, err := client.Post("http://"+inner.Addr().String()+"/bid", "application/json", strings.NewReader(string(withTmax(t, 1000))))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 204, resp.StatusCode)
	require.EqualValues(t, 4, sc.metric("bidguard_accept_errors_total"))
	sc.stop()
	require.NoError(t, <-done, "Serve returns nil after Shutdown")
}

// TestMaxConns: connections over limits.maxConns are closed at once and
// counted; a freed slot is usable again.
func TestMaxConns(t *testing.T) {
	sc, b := setup(t, testbidder.Answer(204, nil), "limits: {maxConns: 2}\n")
	addr := strings.TrimPrefix(sc.base, "http://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, c)
	}
	require.Eventually(t, func() bool { return sc.srv.OpenConns() == 2 }, 5*time.Second, time.Millisecond)
	extra, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = extra.Read(make([]byte, 1))
	require.Error(t, err, "closed at once")
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	extra.Close()
	require.EqualValues(t, 1, sc.metric("bidguard_connections_refused_total"))
	require.EqualValues(t, 2, sc.metric("bidguard_connections_open"))

	held[0].Close()
	require.Eventually(t, func() bool { return sc.srv.OpenConns() == 1 }, 5*time.Second, time.Millisecond)
	answers := rawExchange(t, addr, smuggled[:len("POST /bid HTTP/1.1\r\n")]+"Connection: close\r\n"+smuggled[len("POST /bid HTTP/1.1\r\n"):])
	require.Len(t, answers, 1)
	require.Equal(t, 204, answers[0].StatusCode)
	require.EqualValues(t, 1, b.Calls.Load())
	held[1].Close()
}

// TestIdleTimeout: an idle keep-alive connection is closed after
// limits.idleTimeoutMs.
func TestIdleTimeout(t *testing.T) {
	sc, _ := setup(t, testbidder.Answer(204, nil), "limits: {idleTimeoutMs: 200}\n")
	c, err := net.Dial("tcp", strings.TrimPrefix(sc.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, smuggled)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode)
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Eventually(t, func() bool { return sc.srv.OpenConns() == 0 }, 5*time.Second, time.Millisecond)
}

// Test408OnKeepAlive: a request that stalls on a kept-alive connection is
// answered 408 even when the previous answer's write deadline has passed.
func Test408OnKeepAlive(t *testing.T) {
	b := testbidder.HTTP(t, testbidder.Answer(204, nil))
	sc := startSidecarWith(t, compile(t, fmt.Sprintf(baseConfig, b.URL), nil), func(s *Server) {
		s.srv.ReadTimeout = 300 * time.Millisecond
		s.srv.WriteTimeout = 50 * time.Millisecond
	})
	c, err := net.Dial("tcp", strings.TrimPrefix(sc.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, smuggled)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode)
	time.Sleep(100 * time.Millisecond) // the write deadline passes
	_, err = io.WriteString(c, "POST /bid HTTP/1.1\r\nHost: x\r\nContent-Le")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 408, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, "request not received in time\n", string(body))
}

// TestShutdownAnswersIdleConnection: a request sent on an idle keep-alive
// connection just after shutdown begins is answered 204 with
// Connection: close, not refused.
func TestShutdownAnswersIdleConnection(t *testing.T) {
	b := testbidder.HTTP(t, testbidder.Answer(204, nil))
	sc := startSidecarWith(t, compile(t, fmt.Sprintf(baseConfig, b.URL), nil), func(s *Server) { s.drain = 5 * time.Second })
	c, err := net.Dial("tcp", strings.TrimPrefix(sc.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	_, err = io.WriteString(c, smuggled)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode)

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- sc.srv.Shutdown(ctx)
	}()
	require.Eventually(t, func() bool { return !sc.srv.Ready() }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	_, err = io.WriteString(c, smuggled)
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode)
	require.True(t, resp.Close, "Connection: close")
	require.NoError(t, <-done)
	require.Less(t, time.Since(start), 4*time.Second, "shutdown ends once every connection is closed")
	require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="shutdown"}`))
	require.EqualValues(t, 1, b.Calls.Load())
}

// TestArrivalIsKernelReceiveTime: a request's arrival is when its bytes
// reached the host, not when the server read them.
func TestArrivalIsKernelReceiveTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	enableTimestamps(ln)
	time.Sleep(50 * time.Millisecond) // the kernel enables timestamping lazily
	srv, err := New(&engine.Holder{}, Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	cl, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer cl.Close()
	nc, err := ln.Accept()
	require.NoError(t, err)
	c := srv.newConn(nc)
	defer c.Close()
	require.NotNil(t, c.rc, "recvmsg with SO_TIMESTAMPNS on TCP")

	sent := time.Now()
	_, err = io.WriteString(cl, smuggled+smuggled)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 2*len(smuggled), n)
	for k := uint64(1); k <= 2; k++ {
		at, ok := c.arrival(k)
		require.True(t, ok)
		require.WithinDuration(t, sent, at, 100*time.Millisecond, "request %d: received when sent, read 200ms later", k)
	}
	_, ok := c.arrival(3)
	require.True(t, ok, "a later request maps to the last run until its own read")

	// A request of its own read gets that read's time.
	_, err = io.WriteString(cl, smuggled)
	require.NoError(t, err)
	_, err = c.Read(buf)
	require.NoError(t, err)
	at, _ := c.arrival(3)
	require.WithinDuration(t, time.Now(), at, 100*time.Millisecond)
}

// TestExchangeDeadlines: an exchange connection leaves a deadline moved
// later by less than the slack as it was (it expires at most the slack
// early), and applies any other: a later one past the slack, an earlier
// one, none.
func TestExchangeDeadlines(t *testing.T) {
	const slack = 100 * time.Millisecond
	base := time.Now().Add(time.Hour)
	for _, c := range []struct {
		set, t time.Time
		skip   bool
	}{
		{time.Time{}, base, false},                // nothing set yet
		{base, base, true},                        // the same
		{base, base.Add(slack - 1), true},         // later, within the slack
		{base, base.Add(slack), false},            // later by the slack
		{base, base.Add(-time.Nanosecond), false}, // earlier
		{base, time.Time{}, false},                // none
	} {
		require.Equal(t, c.skip, skipDeadline(c.set, c.t, slack), "set %v, asked %v", c.set, c.t)
	}

	srv, err := New(&engine.Holder{}, Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Equal(t, exchangeReadTimeout/64, srv.deadlineSlack, "1/64 of the shortest timeout (idle 10 s by default)")
	cl, nc := net.Pipe()
	defer cl.Close()
	c := srv.newConn(nc)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(base))
	require.NoError(t, c.SetReadDeadline(base.Add(time.Millisecond)))
	require.Equal(t, base, c.readDL, "moved later by less than the slack: left")
	require.NoError(t, c.SetWriteDeadline(base))
	require.NoError(t, c.SetWriteDeadline(base.Add(time.Second)))
	require.Equal(t, base.Add(time.Second), c.writeDL, "moved later by more: applied")

	// An earlier deadline is applied: a read waits no longer than it.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Millisecond)))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, c.SetDeadline(time.Time{}))
	require.True(t, c.readDL.IsZero() && c.writeDL.IsZero())
}

// TestQueuedRequestShed: a pipelined request that waited behind a slow one
// until its budget was gone is answered 204 without calling the bidder.
func TestQueuedRequestShed(t *testing.T) {
	sc, b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(204)
	}, "")
	slow := strings.Replace(smuggled, `"tmax":500`, `"tmax":900`, 1)
	quick := strings.Replace(smuggled, `"tmax":500`, `"tmax":200`, 1)
	quick = strings.Replace(quick, "Host: x\r\n", "Host: x\r\nConnection: close\r\n", 1)
	answers := rawExchange(t, strings.TrimPrefix(sc.base, "http://"), slow+quick)
	require.Len(t, answers, 2)
	require.Equal(t, 204, answers[1].StatusCode)
	require.EqualValues(t, 1, b.Calls.Load(), "the queued request never reached the bidder")
	require.EqualValues(t, 1, sc.metric(`bidguard_shed_total{reason="budget"}`))
}

// TestQueueGateShed: requests pipelined behind two slow ones reach the
// handler after queueing past a quarter of their T, with budget left: the
// first of them opens the queue gate's interval and is served, the later
// ones, still over the target after it, are answered 204 without calling
// the bidder and counted as reason "queue".
func TestQueueGateShed(t *testing.T) {
	var calls atomic.Int32
	sc, b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			time.Sleep(100 * time.Millisecond)
		}
		w.WriteHeader(204)
	}, "")
	req := func(tmax string, last bool) string {
		r := strings.Replace(smuggled, `"tmax":500`, `"tmax":`+tmax, 1)
		if last {
			r = strings.Replace(r, "Host: x\r\n", "Host: x\r\nConnection: close\r\n", 1)
		}
		return r
	}
	// T 400: a quarter is 100 ms; the third request queues about 200 ms and
	// keeps 400 - 5 - 200 - 7 ms of budget, far over minBidderMs.
	answers := rawExchange(t, strings.TrimPrefix(sc.base, "http://"), req("900", false)+req("400", false)+req("400", false)+req("400", true))
	require.Len(t, answers, 4)
	for i, a := range answers {
		require.Equal(t, 204, a.StatusCode, "answer %d", i)
	}
	require.EqualValues(t, 2, b.Calls.Load(), "the requests queued past the target after the interval never reached the bidder")
	require.EqualValues(t, 2, sc.metric(`bidguard_shed_total{reason="queue"}`))
	require.Zero(t, sc.metric(`bidguard_shed_total{reason="budget"}`)+sc.metric(`bidguard_shed_total{reason="inflight"}`))
}

// TestPrepareListener: once prepared, the first connection's first request
// is stamped with its arrival.
func TestPrepareListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	PrepareListener(ln, time.Second)
	srv, err := New(&engine.Holder{}, Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	cl, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer cl.Close()
	nc, err := ln.Accept()
	require.NoError(t, err)
	c := srv.newConn(nc)
	defer c.Close()
	_, err = io.WriteString(cl, smuggled)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	_, err = c.Read(make([]byte, 4096))
	require.NoError(t, err)
	require.True(t, c.stamped)
	at, ok := c.arrival(1)
	require.True(t, ok)
	require.Greater(t, time.Since(at), 90*time.Millisecond)
}
