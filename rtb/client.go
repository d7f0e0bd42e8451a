package rtb

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/config"
)

// clientKey identifies a connection pool: upstreams with equal keys share
// their keep-alive connections.
type clientKey struct {
	upstream    string // each upstream has its own pool, breaker and failure log
	addr        string
	tls         bool
	serverName  string
	tlsConf     config.UpstreamTLS
	maxConns    int
	idleTimeout time.Duration
}

// hostPool is the upstream client for one bidder address: at most maxConns
// connections, the idle ones on a stack so the most recently used is reused
// first. A connection is reused only when it went idle at most idleTimeout
// ago, is found quiet by a probe (no byte, no EOF), and its last answer
// left nothing behind; expired idle connections are closed by a timer.
//
// do is safe for concurrent use and allocates nothing once the pool holds
// enough connections.
type hostPool struct {
	key  clientKey
	dial func(addr string) (net.Conn, error) // nil: TCP
	tls  *tlsSource                          // https only
	m    *clientMeters
	fm   *forwardMeters // nil in pools built outside a Server
	brk  *breaker       // nil: no breaker
	flog *failureLog    // nil: failures not logged

	mu     sync.Mutex
	idle   []*conn // by the instant they went idle: the oldest first
	open   int     // connections dialed and not yet closed
	closed bool    // shut down or dropped by a reload: nothing is pooled
	timer  *time.Timer
	armed  bool
}

func newHostPool(k clientKey, dial func(string) (net.Conn, error), m *clientMeters) *hostPool {
	p := &hostPool{key: k, dial: dial, m: m}
	if k.tls {
		p.tls = &tlsSource{serverName: k.serverName, minVersion: tls.VersionTLS12}
		p.tls.cfg, _ = p.tls.build() // no files: cannot fail
	}
	p.timer = time.AfterFunc(time.Hour, p.sweep)
	p.timer.Stop()
	return p
}

// Upstream call errors that are not the transport's own.
var (
	errNoFreeConns    = errors.New("upstream: no free connection (limits.maxInFlight reached)")
	errTooManyInterim = errors.New("upstream: too many interim (1xx) responses")
)

// maxInterim bounds the interim responses (100, 102, 103) skipped before the
// final one; the deadline bounds them too.
const maxInterim = 8

// do sends one request (head and body, already framed) and reads the
// bidder's answer into resp, body capped at maxBody, all by deadline. A
// request whose write fails, or whose reused connection is closed before
// any response byte, is sent once more on a new connection; nothing else is
// retried. A non-nil error comes with its bidguard_upstream_errors_total kind.
//
// start is the caller's clock reading just before the call, which the pool
// takes as the time it looks at its idle connections; end (monotonic()) is
// the one taken when the call ended (the connection given back), which the
// pool takes as the time the connection went idle: one clock reading each,
// shared.
func (p *hostPool) do(head, body []byte, resp *fasthttp.Response, maxBody int, start, deadline time.Time, resends *metrics.Counter) (kind errKind, end time.Duration, err error) {
	resent := false
	var held *conn // the connection in use, closed if a panic unwinds past it
	defer func() {
		if held != nil {
			p.release(held, false, 0)
		}
	}()
	now := start.Sub(epoch) // monotonic(), as of start
	for {
		c, reused, err := p.acquire(now, deadline, resent)
		if err != nil {
			return dialKind(err), monotonic(), err
		}
		held = c
		if err := c.write(head, body); err != nil {
			held = nil
			p.release(c, false, 0)
			if !resent && !isTimeout(err) {
				resent = true
				resends.Inc()
				continue
			}
			return readKind(err), monotonic(), fmt.Errorf("upstream: write: %w", err)
		}
		if _, err := c.br.Peek(1); err != nil {
			held = nil
			p.release(c, false, 0)
			if reused && !resent && !isTimeout(err) {
				resent = true
				resends.Inc()
				continue
			}
			return readKind(err), monotonic(), fmt.Errorf("upstream: no answer: %w", err)
		}
		err = readResponse(c.br, resp, maxBody)
		keep := err == nil && keepAlive(resp)
		if keep && c.br.Buffered() > 0 {
			// A stray second response, say: the connection is out of step.
			keep = false
			p.m.closed[closedStray].Inc()
		}
		held = nil
		end = monotonic()
		p.release(c, keep, end)
		if err != nil {
			return readKind(err), end, err
		}
		return 0, end, nil
	}
}

// readResponse reads one answer: interim responses (100, 102, 103) are
// skipped; any other status under 200 (101 or 199, say) is final with no
// body, and the connection is not reused (keepAlive); 204 and 304 have no
// body; every other body is read by its framing (Content-Length, chunked
// with trailers, or until close), at most maxBody bytes.
func readResponse(br *bufio.Reader, resp *fasthttp.Response, maxBody int) error {
	resp.ResetBody()
	for n := 0; ; n++ {
		if err := resp.Header.Read(br); err != nil {
			return err
		}
		if !isInterim(resp.StatusCode()) {
			break
		}
		if n == maxInterim {
			return errTooManyInterim
		}
	}
	switch s := resp.StatusCode(); {
	case s >= 100 && s < 200, s == fasthttp.StatusNoContent, s == fasthttp.StatusNotModified:
		return nil
	}
	if err := resp.ReadBody(br, maxBody); err != nil {
		return err
	}
	if resp.Header.ContentLength() == -1 {
		return resp.Header.ReadTrailer(br)
	}
	return nil
}

// isInterim reports the informational statuses a client may see before the
// final answer to a POST. 101 is not one (bidguard never asks to upgrade).
func isInterim(status int) bool {
	return status == fasthttp.StatusContinue || status == fasthttp.StatusProcessing || status == fasthttp.StatusEarlyHints
}

// keepAlive reports whether the answer lets its connection carry another
// request: a final status of 200 or more, and framing that says nothing
// about closing (HTTP/1.1 without a "close" token in Connection, any case;
// HTTP/1.0 only with keep-alive; a body delimited by its length or chunks,
// not by the close). Bytes left behind are the caller's check.
func keepAlive(resp *fasthttp.Response) bool {
	h := &resp.Header
	return h.StatusCode() >= 200 && !h.ConnectionClose() && !hasToken(h.PeekCanonical(strConnectionHdr), strClose)
}

var strClose = []byte("close")

// hasToken reports whether a comma-separated header value lists tok (ASCII
// case-insensitively).
func hasToken(v, tok []byte) bool {
	for len(v) > 0 {
		t := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if bytes.EqualFold(bytes.Trim(t, " \t"), tok) {
			return true
		}
	}
	return false
}

// settleTime is how long a connection rests after an answer before it is
// reused, unless the pool is full: a stray second response written just
// after the answer arrives within it and is found by the probe.
const settleTime = time.Millisecond

// acquire returns a connection for a call with the given deadline, at now
// (monotonic()): the most recently used idle one that has rested settleTime
// (any, when the pool is full) and passes the probe, else a new one; only a
// new one when fresh (a resend). Idle connections past the idle timeout,
// closed by the bidder, or holding unsolicited bytes are closed on the way.
func (p *hostPool) acquire(now time.Duration, deadline time.Time, fresh bool) (c *conn, reused bool, err error) {
	p.mu.Lock()
	for !fresh {
		p.expireLocked(now)
		n := len(p.idle)
		if n == 0 {
			break
		}
		i := n - 1
		for i >= 0 && now-p.idle[i].idleAt < settleTime {
			i--
		}
		if i < 0 {
			if p.open < p.key.maxConns {
				break
			}
			i = n - 1
		}
		c = p.idle[i]
		copy(p.idle[i:], p.idle[i+1:])
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		r := c.probe(deadline)
		if r == probeQuiet {
			return c, true, nil
		}
		p.m.closed[closeReasonOf(r)].Inc()
		c.close()
		p.mu.Lock()
		p.open--
	}
	if p.open >= p.key.maxConns {
		p.mu.Unlock()
		return nil, false, errNoFreeConns
	}
	p.open++
	p.mu.Unlock()
	c, err = p.dialConn(deadline)
	if err != nil {
		p.mu.Lock()
		p.open--
		p.mu.Unlock()
		return nil, false, err
	}
	return c, false, nil
}

// expireLocked closes the idle connections idle for idleTimeout or longer
// (the oldest are at the bottom of the stack). As on every close path, a
// connection is counted before it is closed, so the count is never behind
// what the bidder sees.
func (p *hostPool) expireLocked(now time.Duration) {
	n := 0
	for n < len(p.idle) && now-p.idle[n].idleAt >= p.key.idleTimeout {
		n++
	}
	if n == 0 {
		return
	}
	p.m.closed[closedIdle].Add(n)
	for _, c := range p.idle[:n] {
		c.close()
	}
	rest := copy(p.idle, p.idle[n:])
	clear(p.idle[rest:])
	p.idle = p.idle[:rest]
	p.open -= n
}

func closeReasonOf(r probeResult) closeReason {
	if r == probeBytes {
		return closedStray
	}
	return closedStale
}

// release takes c back after a call: onto the idle stack when reusable,
// idle from at (monotonic()), else closed.
func (p *hostPool) release(c *conn, reusable bool, at time.Duration) {
	if !reusable || p.key.idleTimeout <= 0 {
		c.close()
		p.mu.Lock()
		p.open--
		p.mu.Unlock()
		return
	}
	c.idleAt = at
	p.mu.Lock()
	if p.closed {
		p.open--
		p.mu.Unlock()
		c.close()
		return
	}
	p.idle = append(p.idle, c)
	if !p.armed {
		p.armed = true
		p.timer.Reset(p.key.idleTimeout)
	}
	p.mu.Unlock()
}

// sweep closes the idle connections past the idle timeout and re-arms the
// timer for the oldest that remains.
func (p *hostPool) sweep() {
	now := monotonic()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if len(p.idle) == 0 || p.closed {
		p.armed = false
		return
	}
	p.timer.Reset(p.idle[0].idleAt + p.key.idleTimeout - now)
}

// close closes the idle connections and makes the pool keep none: calls in
// flight finish, and their connections are closed when released. The
// breaker's gauge reads closed: a pool that replaces this one starts closed.
func (p *hostPool) close() {
	if p.brk != nil {
		p.brk.gauge.Set(float64(breakerClosed))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.timer.Stop()
	p.armed = false
	for i, c := range p.idle {
		c.close()
		p.idle[i] = nil
	}
	p.open -= len(p.idle)
	p.idle = p.idle[:0]
}

// dialConn opens a connection by deadline (TLS handshake included).
func (p *hostPool) dialConn(deadline time.Time) (*conn, error) {
	var raw net.Conn
	var err error
	if p.dial != nil {
		raw, err = p.dial(p.key.addr)
	} else {
		d := net.Dialer{Deadline: deadline}
		raw, err = d.Dial("tcp", p.key.addr)
	}
	if err != nil {
		return nil, fmt.Errorf("upstream: dial %s: %w", p.key.addr, err)
	}
	nc := raw
	if p.key.tls {
		// The handshake runs under the request's deadline, on the request's
		// budget; pooled connections skip it, new ones resume a session.
		tc := tls.Client(raw, p.tls.config())
		if err := p.tls.handshake(raw, tc, deadline, p.fm); err != nil {
			_ = raw.Close() // the handshake's error is the one reported
			return nil, fmt.Errorf("upstream: %s: %w", p.key.addr, err)
		}
		nc = tc
	}
	if err := nc.SetDeadline(deadline); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("upstream: dial %s: %w", p.key.addr, err)
	}
	return newConn(nc, raw), nil
}

// dialKind is the kind of a failure to get a connection: timeout when the
// deadline passed, tls for a failed handshake, else connect (refused,
// unreachable, no free connection).
func dialKind(err error) errKind {
	switch {
	case isTimeout(err):
		return kindTimeout
	case isTLSError(err):
		return kindTLS
	}
	return kindConnect
}

// readKind is the kind of a failure after the connection was obtained:
// timeout at the deadline; too_large for a body over the cap or headers over
// the read buffer; tls for a TLS alert from the bidder (under TLS 1.3 a
// refused client certificate arrives after the handshake, with the first
// read); reset for anything else (closed, reset, not HTTP, malformed
// framing).
func readKind(err error) errKind {
	var small *fasthttp.ErrSmallBuffer
	var op *net.OpError
	switch {
	case isTimeout(err):
		return kindTimeout
	case errors.Is(err, fasthttp.ErrBodyTooLarge), errors.As(err, &small):
		return kindTooLarge
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls's received alert
		return kindTLS
	}
	return kindReset
}

// isTimeout reports a deadline error (net.Error, fasthttp.ErrTimeout). The
// unwrapped case is tested first: errors.As would allocate its target on
// the probe's expected timeout.
func isTimeout(err error) bool {
	if t, ok := err.(timeouter); ok {
		return t.Timeout()
	}
	var t timeouter
	return errors.As(err, &t) && t.Timeout()
}

type timeouter interface{ Timeout() bool }

// pools are a Server's upstream clients by key. Routes of successive
// snapshots share a pool while its key is unchanged.
type pools struct {
	dial  func(addr string) (net.Conn, error)
	m     *clientMeters
	roots *x509.CertPool // TLS roots without a caFile; nil: the system's (tests trust their own)
	log   *slog.Logger
	byKey map[clientKey]*hostPool
}

// get returns the pool of upstream u (URL taken apart in t) under limits,
// creating it on first use, and sets its breaker's thresholds.
func (ps *pools) get(u config.Upstream, t config.UpstreamTarget, lim config.Limits, fm *forwardMeters) (*hostPool, error) {
	k := clientKey{upstream: u.Name, addr: t.Addr, tls: t.TLS, maxConns: max(lim.MaxInFlight, 1), idleTimeout: u.IdleTimeout()}
	if t.TLS {
		k.serverName, k.tlsConf = t.ServerName, u.TLS
	}
	p := ps.byKey[k]
	if p == nil {
		p = newHostPool(k, ps.dial, ps.m)
		if t.TLS {
			src, err := newTLSSource(u, t, ps.roots, ps.log)
			if err != nil {
				return nil, err
			}
			p.tls = src
		}
		p.fm = fm
		p.brk = newBreaker(u.Name, ps.log, fm.breaker)
		p.flog = &failureLog{log: ps.log, name: u.Name, now: monotonic}
		ps.byKey[k] = p
	}
	b := u.Breaker
	p.brk.configure(b.BreakerFailures(), time.Duration(b.BreakerOpenMs())*time.Millisecond, b.BreakerSuccesses())
	return p, nil
}

// retain closes every pool not in keep (a reload dropped or changed its
// upstream): its idle connections at once, the others when released.
func (ps *pools) retain(keep map[*hostPool]bool) {
	for k, p := range ps.byKey {
		if !keep[p] {
			p.close()
			delete(ps.byKey, k)
		}
	}
}

// closeAll closes every pool (Shutdown).
func (ps *pools) closeAll() {
	for _, p := range ps.byKey {
		p.close()
	}
}
