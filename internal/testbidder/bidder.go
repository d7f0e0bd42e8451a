package testbidder

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bidder is a fake bidder on a loopback TCP listener. It tracks its
// connections (so a test can count, close or outlast them), records every
// request it reads, and is stopped when the test ends. Safe for concurrent
// use.
type Bidder struct {
	// URL is the base URL, http://127.0.0.1:port (https with WithTLS);
	// append the path the sidecar should post to.
	URL string
	// Addr is the listener's host:port; it stays the same across Restart.
	Addr string
	// Calls counts the requests read (by the HTTP handler or ReadRequest).
	Calls atomic.Int64
	// Accepted counts the connections accepted.
	Accepted atomic.Int64

	t       testing.TB
	tls     *tls.Config
	idle    time.Duration
	latency time.Duration
	handler http.HandlerFunc // HTTP mode
	script  func(*Conn)      // raw mode

	mu    sync.Mutex
	ln    net.Listener
	srv   *http.Server
	conns map[net.Conn]bool
	reqs  []Request
	wg    sync.WaitGroup
}

// Option tunes a Bidder before it listens.
type Option func(*Bidder)

// WithTLS serves HTTPS with cfg.
func WithTLS(cfg *tls.Config) Option { return func(b *Bidder) { b.tls = cfg } }

// IdleTimeout closes keep-alive connections idle for longer than d (HTTP
// mode; 0: net/http's default).
func IdleTimeout(d time.Duration) Option { return func(b *Bidder) { b.idle = d } }

// Latency delays every answer by d (HTTP mode): the bidder's think time.
func Latency(d time.Duration) Option { return func(b *Bidder) { b.latency = d } }

// HTTP starts a bidder that serves h with net/http. The handler may read
// r.Body again: it holds the recorded body.
func HTTP(t testing.TB, h http.HandlerFunc, opts ...Option) *Bidder {
	t.Helper()
	b := newBidder(t, opts)
	b.handler = h
	b.listen("127.0.0.1:0")
	return b
}

// Raw starts a bidder that runs script on each connection it accepts; the
// connection is closed when script returns or the bidder stops.
func Raw(t testing.TB, script func(c *Conn), opts ...Option) *Bidder {
	t.Helper()
	b := newBidder(t, opts)
	b.script = script
	b.listen("127.0.0.1:0")
	return b
}

func newBidder(t testing.TB, opts []Option) *Bidder {
	b := &Bidder{t: t, conns: map[net.Conn]bool{}}
	for _, o := range opts {
		o(b)
	}
	t.Cleanup(b.Stop)
	return b
}

// Answer is a handler that answers every request with status and body
// (Content-Type application/json; no body for a nil one).
func Answer(status int, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// Wire is a whole HTTP/1.1 response with status and a JSON body, for raw
// scripts.
func Wire(status int, body []byte) []byte {
	head := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", status, http.StatusText(status), len(body))
	return append(head, body...)
}

// Answering is a raw script that reads requests on the connection,
// keep-alive, and answers each with wire (a whole HTTP response, see Wire).
// Bytes that are not a request fail the test.
func Answering(wire []byte) func(*Conn) {
	return func(c *Conn) {
		for {
			_, err := c.ReadRequest()
			if errors.Is(err, ErrMalformed) {
				c.b.t.Errorf("testbidder: %v", err)
			}
			if err != nil {
				return
			}
			if _, err := c.Write(wire); err != nil {
				return
			}
		}
	}
}

// Hang is a raw script that reads one request and never answers: the
// connection stays open until the client or the bidder closes it.
func Hang(c *Conn) {
	if _, err := c.ReadRequest(); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, c.Reader())
}

// CloseAfterRead is a raw script that reads one request and closes the
// connection without a byte of answer.
func CloseAfterRead(c *Conn) { _, _ = c.ReadRequest() }

// listen starts accepting on addr.
func (b *Bidder) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(b.t, err)
	scheme := "http://"
	if b.tls != nil {
		ln, scheme = tls.NewListener(ln, b.tls), "https://"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ln, b.Addr = ln, ln.Addr().String()
	b.URL = scheme + b.Addr
	if b.handler != nil {
		b.srv = &http.Server{Handler: http.HandlerFunc(b.serveHTTP), IdleTimeout: b.idle, ConnState: b.track}
		srv := b.srv
		b.wg.Go(func() { _ = srv.Serve(ln) })
		return
	}
	b.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.track(c, http.StateNew)
			b.wg.Go(func() {
				defer b.track(c, http.StateClosed)
				defer c.Close()
				b.script(&Conn{Conn: c, b: b})
			})
		}
	})
}

// track keeps the set of open connections (net/http's ConnState hook, and
// the raw accept loop's).
func (b *Bidder) track(c net.Conn, s http.ConnState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch s {
	case http.StateNew:
		b.Accepted.Add(1)
		b.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(b.conns, c)
	}
}

func (b *Bidder) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Target: r.RequestURI, Body: body}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			rec.Header = append(rec.Header, [2]string{k, v})
		}
	}
	b.record(rec)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if b.latency > 0 {
		time.Sleep(b.latency) // the bidder's think time: the behaviour, not a wait
	}
	b.handler(w, r)
}

func (b *Bidder) record(r Request) {
	b.mu.Lock()
	b.reqs = append(b.reqs, r)
	b.mu.Unlock()
	b.Calls.Add(1)
}

// Stop closes the listener and every connection and waits for the
// bidder's goroutines (a bidder process ending). Stopping twice is fine.
func (b *Bidder) Stop() {
	b.mu.Lock()
	if b.ln == nil {
		b.mu.Unlock()
		return
	}
	_ = b.ln.Close()
	b.ln = nil
	if b.srv != nil {
		_ = b.srv.Close()
	}
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// Restart listens again on the same address after Stop (a bidder
// restarted in place).
func (b *Bidder) Restart() {
	b.t.Helper()
	b.listen(b.Addr)
}

// CloseConns closes every open connection; the bidder keeps listening.
func (b *Bidder) CloseConns() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		_ = c.Close()
	}
}

// Conns returns the connections open now (a snapshot).
func (b *Bidder) Conns() []net.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Collect(maps.Keys(b.conns))
}

// OpenConns is the number of connections the bidder holds open.
func (b *Bidder) OpenConns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// Requests returns a copy of the requests read, in order.
func (b *Bidder) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.reqs)
}

// Last returns the last request read; none fails the test.
func (b *Bidder) Last(t testing.TB) Request {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.reqs, "the bidder read no request")
	return b.reqs[len(b.reqs)-1]
}

// Conn is one connection of a raw bidder.
type Conn struct {
	net.Conn
	b  *Bidder
	br *bufio.Reader
}

// Reader is the connection's buffered reader, the one ReadRequest uses.
func (c *Conn) Reader() *bufio.Reader {
	if c.br == nil {
		c.br = bufio.NewReader(c.Conn)
	}
	return c.br
}

// ReadRequest reads one request (its head exactly as written, a
// Content-Length framed body, as bidguard sends) and records it.
func (c *Conn) ReadRequest() (Request, error) {
	r, err := ReadRequest(c.Reader())
	if err == nil {
		c.b.record(r)
	}
	return r, err
}

// Request is one request a bidder read.
type Request struct {
	Method string
	Target string      // as on the request line: path and query
	Header [][2]string // name, value; in order as written (raw mode)
	Body   []byte
}

// Path and Query are the request target's parts.
func (r Request) Path() string {
	p, _, _ := strings.Cut(r.Target, "?")
	return p
}

func (r Request) Query() string {
	_, q, _ := strings.Cut(r.Target, "?")
	return q
}

// Values returns every value of the header name (any case), in order.
func (r Request) Values(name string) []string {
	var out []string
	for _, h := range r.Header {
		if strings.EqualFold(h[0], name) {
			out = append(out, h[1])
		}
	}
	return out
}

// Get returns the header's only value ("" when absent); two values fail.
func (r Request) Get(t testing.TB, name string) string {
	t.Helper()
	v := r.Values(name)
	require.LessOrEqual(t, len(v), 1, "header %s sent %d times", name, len(v))
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// ErrMalformed is ReadRequest's error for bytes that are not a request
// (a read error is returned as it is).
var ErrMalformed = errors.New("malformed request")

// ReadRequest reads one HTTP/1.1 request from br: the request line, the
// header lines as written, and a body of Content-Length bytes.
func ReadRequest(br *bufio.Reader) (Request, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return Request{}, err
	}
	parts := strings.SplitN(strings.TrimRight(line, "\r\n"), " ", 3)
	if len(parts) != 3 {
		return Request{}, fmt.Errorf("%w: request line %q", ErrMalformed, line)
	}
	r := Request{Method: parts[0], Target: parts[1]}
	n := 0
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return Request{}, err
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return Request{}, fmt.Errorf("%w: header line %q", ErrMalformed, h)
		}
		r.Header = append(r.Header, [2]string{k, strings.TrimLeft(v, " \t")})
		if strings.EqualFold(k, "Content-Length") {
			if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return Request{}, fmt.Errorf("%w: content-length %q", ErrMalformed, v)
			}
		}
	}
	r.Body = make([]byte, n)
	if _, err := io.ReadFull(br, r.Body); err != nil {
		return Request{}, err
	}
	return r, nil
}
