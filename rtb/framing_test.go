package rtb

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
)

// refRequest is one request of the strict grammar, as refSplit reads it.
type refRequest struct {
	method, uri string
	body        []byte
}

// refSplit is the reference reading of the framer's grammar, written
// plainly and independently of it: the complete requests at the start of
// data, up to the first one that breaks the grammar or is incomplete.
func refSplit(data []byte) []refRequest {
	var out []refRequest
	for {
		for bytes.HasPrefix(data, []byte("\r\n")) {
			data = data[2:]
		}
		r, n, ok := refOne(data)
		if !ok {
			return out
		}
		out = append(out, r)
		data = data[n:]
	}
}

// refLine returns the line at the start of b without its CRLF; ok is false
// when no CRLF ends it or it holds a bare CR or LF.
func refLine(b []byte) (line []byte, n int, ok bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 || bytes.ContainsAny(b[:i], "\r\n") {
		return nil, 0, false
	}
	return b[:i], i + 2, true
}

func refOne(b []byte) (refRequest, int, bool) {
	var r refRequest
	line, n, ok := refLine(b)
	if !ok || len(line) == 0 {
		return r, 0, false
	}
	parts := bytes.SplitN(line, []byte(" "), 3)
	if len(parts) == 3 {
		r.method, r.uri = string(parts[0]), string(parts[1])
	}
	pos := n
	length, chunked := -1, false
	for {
		line, n, ok := refLine(b[pos:])
		if !ok {
			return r, 0, false
		}
		pos += n
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 {
			return r, 0, false
		}
		for _, c := range name {
			if !bytes.ContainsRune([]byte("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), rune(c)) {
				return r, 0, false
			}
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length >= 0 || len(value) == 0 || len(value) > 18 {
				return r, 0, false
			}
			v, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || value[0] == '+' || value[0] == '-' {
				return r, 0, false
			}
			length = int(v)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if chunked || !bytes.EqualFold(value, []byte("chunked")) {
				return r, 0, false
			}
			chunked = true
		}
	}
	switch {
	case chunked && length >= 0:
		return r, 0, false
	case chunked:
		r.body = []byte{}
		for {
			line, n, ok := refLine(b[pos:])
			if !ok {
				return r, 0, false
			}
			pos += n
			size, _, _ := bytes.Cut(line, []byte(";"))
			if len(size) == 0 || len(size) > 8 {
				return r, 0, false
			}
			v, err := strconv.ParseUint(string(size), 16, 64)
			if err != nil {
				return r, 0, false
			}
			if v == 0 {
				break
			}
			if len(b)-pos < int(v)+2 || string(b[pos+int(v):pos+int(v)+2]) != "\r\n" {
				return r, 0, false
			}
			r.body = append(r.body, b[pos:pos+int(v)]...)
			pos += int(v) + 2
		}
		for { // trailer section
			line, n, ok := refLine(b[pos:])
			if !ok || (len(line) > 0 && (line[0] == ' ' || line[0] == '\t')) {
				return r, 0, false
			}
			pos += n
			if len(line) == 0 {
				return r, pos, true
			}
		}
	case length > 0:
		if len(b)-pos < length {
			return r, 0, false
		}
		r.body = b[pos : pos+length]
		return r, pos + length, true
	}
	return r, pos, true
}

// framerSeeds are streams the framer must accept, then reject at the end.
var framerSeeds = []string{
	"POST /bid HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
	"POST /bid HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\ncontent-length:  0 \r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\nA\r\n0123456789\r\n0\r\n\r\n",
}

// TestFramerIncremental: the framer's verdict does not depend on how the
// bytes are split into reads, and it agrees with refSplit.
func TestFramerIncremental(t *testing.T) {
	inputs := append([]string{}, framerSeeds...)
	for _, p := range smugglingProbes {
		inputs = append(inputs, p.req)
	}
	for _, in := range inputs {
		var whole framer
		ok, starts, err := whole.scan([]byte(in))
		for cut := 0; cut <= len(in); cut++ {
			var f framer
			ok1, s1, e1 := f.scan([]byte(in[:cut]))
			okTotal, sTotal := ok1, s1
			if e1 == nil {
				ok2, s2, e2 := f.scan([]byte(in[cut:]))
				okTotal, sTotal, e1 = ok1+ok2, s1+s2, e2
			}
			require.Equal(t, err, e1, "%q cut at %d", in, cut)
			require.Equal(t, ok, okTotal, "%q cut at %d", in, cut)
			require.Equal(t, starts, sTotal, "%q cut at %d", in, cut)
		}
		var byByte framer
		n := 0
		for i := range len(in) {
			k, _, e := byByte.scan([]byte{in[i]})
			n += k
			if e != nil {
				break
			}
		}
		require.Equal(t, ok, n, "%q byte by byte", in)
		// Every complete request refSplit finds lies within what the framer
		// hands on.
		reqs := refSplit([]byte(in))
		if err == nil {
			require.Len(t, reqs, int(whole.requests), "%q", in)
		} else {
			require.LessOrEqual(t, len(reqs), starts, "%q", in)
		}
	}
}

// memConn is an in-memory connection: reads return in, then EOF (split
// into reads of at most chunk bytes); writes are kept.
type memConn struct {
	in    []byte
	chunk int
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan struct{}
	once  sync.Once
}

func (c *memConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.in), c.chunk)
	copy(p, c.in[:n])
	c.in = c.in[n:]
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *memConn) Close() error                     { c.once.Do(func() { close(c.done) }); return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// memListener hands out the connections sent on ch.
type memListener struct {
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *memListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// rawServer is the exchange listener's HTTP layer over memListener: the
// real fasthttp server, framer and error handler, with a handler that
// records what it was called with.
type rawServer struct {
	ln    *memListener
	mu    sync.Mutex
	calls map[net.Conn][]refRequest
}

func startRawServer(t testing.TB) *rawServer {
	t.Helper()
	var h engine.Holder
	srv, err := New(&h, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Drain: time.Millisecond})
	require.NoError(t, err)
	rs := &rawServer{ln: &memListener{ch: make(chan net.Conn), closed: make(chan struct{})}, calls: map[net.Conn][]refRequest{}}
	srv.srv.Handler = func(ctx *fasthttp.RequestCtx) {
		rs.mu.Lock()
		rs.calls[ctx.Conn()] = append(rs.calls[ctx.Conn()], refRequest{
			method: string(ctx.Method()), uri: string(ctx.Request.Header.RequestURI()), body: bytes.Clone(ctx.Request.Body()),
		})
		rs.mu.Unlock()
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(rs.ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()); <-done })
	return rs
}

// serveBytes runs one connection carrying in and returns the requests the
// handler saw and what the server wrote.
func (rs *rawServer) serveBytes(t testing.TB, in []byte, chunk int) ([]refRequest, string) {
	t.Helper()
	c := &memConn{in: in, chunk: max(chunk, 1), done: make(chan struct{})}
	rs.ln.ch <- c
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("connection not closed for %q", in)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var calls []refRequest
	for k, v := range rs.calls {
		if cc, ok := k.(*exchangeConn); ok && cc.Conn == c {
			calls = v
			delete(rs.calls, k)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return calls, c.out.String()
}

// checkRaw is the property of FuzzRawServer: the requests the handler saw
// are a prefix of the complete requests of the strict grammar, each framed
// alike (method, URI, body): at most one handler call per well-framed
// request and never one for bytes smuggled after a request.
func checkRaw(t testing.TB, rs *rawServer, in []byte, chunk int) {
	calls, out := rs.serveBytes(t, in, chunk)
	want := refSplit(in)
	if len(calls) > len(want) {
		t.Fatalf("%d handler calls for %d well-framed requests in %q; answers %q", len(calls), len(want), in, out)
	}
	for i, c := range calls {
		w := want[i]
		if c.method != w.method || c.uri != w.uri || !bytes.Equal(c.body, w.body) {
			t.Fatalf("request %d of %q framed as %+v, the grammar says %+v", i, in, c, w)
		}
	}
}

func FuzzRawServer(f *testing.F) {
	for _, s := range framerSeeds {
		f.Add([]byte(s), 4096)
	}
	for _, p := range smugglingProbes {
		f.Add([]byte(p.req), 7)
	}
	rs := startRawServer(f)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		if len(in) > 1<<14 || chunk <= 0 {
			return
		}
		checkRaw(t, rs, in, chunk)
	})
}

func TestRawServerSeeds(t *testing.T) {
	rs := startRawServer(t)
	for _, s := range framerSeeds {
		calls, out := rs.serveBytes(t, []byte(s), 3)
		require.Len(t, calls, len(refSplit([]byte(s))), "%q: %s", s, out)
		checkRaw(t, rs, []byte(s), 4096)
	}
	for _, p := range smugglingProbes {
		calls, out := rs.serveBytes(t, []byte(p.req), 4096)
		require.Empty(t, calls, "%s: no request reaches the handler", p.name)
		require.Contains(t, out, "HTTP/1.1 400 Bad Request\r\n", p.name)
		require.Contains(t, out, "bad request framing: "+p.reason, p.name)
		require.Equal(t, 1, bytes.Count([]byte(out), []byte("HTTP/1.1 ")), "%s: one answer, then the connection is closed: %s", p.name, out)
	}
}
