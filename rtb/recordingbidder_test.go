package rtb

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordingBidder is a bidder on loopback TCP (HTTPS with tlsConf) that
// records each request's head exactly as it arrived: the request target
// and the header lines in order, names as written. It answers every
// request with answer (a whole HTTP response; default 204).
type recordingBidder struct {
	t      *testing.T
	ln     net.Listener
	https  bool
	answer []byte

	mu   sync.Mutex
	reqs []recorded
}

// recorded is one request the bidder read.
type recorded struct {
	target  string      // as on the request line
	headers [][2]string // name, value, in order
	body    []byte
}

// path and query are the request target's parts.
func (r recorded) path() string {
	p, _, _ := strings.Cut(r.target, "?")
	return p
}

func (r recorded) query() string {
	_, q, _ := strings.Cut(r.target, "?")
	return q
}

// values returns every value of the header name (any case), in order.
func (r recorded) values(name string) []string {
	var out []string
	for _, h := range r.headers {
		if strings.EqualFold(h[0], name) {
			out = append(out, h[1])
		}
	}
	return out
}

// get returns the header's only value ("" when absent); two values fail.
func (r recorded) get(t *testing.T, name string) string {
	t.Helper()
	v := r.values(name)
	require.LessOrEqual(t, len(v), 1, "header %s sent %d times", name, len(v))
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func newRecordingBidder(t *testing.T, tlsConf *tls.Config) *recordingBidder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	b := &recordingBidder{t: t, ln: ln, https: tlsConf != nil, answer: []byte("HTTP/1.1 204 No Content\r\n\r\n")}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				b.serve(c)
			})
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return b
}

func (b *recordingBidder) url(pathQuery string) string {
	if b.https {
		return "https://" + b.ln.Addr().String() + pathQuery
	}
	return "http://" + b.ln.Addr().String() + pathQuery
}

func (b *recordingBidder) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		parts := strings.SplitN(strings.TrimRight(line, "\r\n"), " ", 3)
		require.Len(b.t, parts, 3, "request line %q", line)
		r := recorded{target: parts[1]}
		n := 0
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			h = strings.TrimRight(h, "\r\n")
			if h == "" {
				break
			}
			k, v, ok := strings.Cut(h, ":")
			require.True(b.t, ok, "header line %q", h)
			r.headers = append(r.headers, [2]string{k, strings.TrimLeft(v, " \t")})
			if strings.EqualFold(k, "Content-Length") {
				n, err = strconv.Atoi(strings.TrimSpace(v))
				require.NoError(b.t, err)
			}
		}
		r.body = make([]byte, n)
		if _, err := io.ReadFull(br, r.body); err != nil {
			return
		}
		b.mu.Lock()
		b.reqs = append(b.reqs, r)
		b.mu.Unlock()
		if _, err := c.Write(b.answer); err != nil {
			return
		}
	}
}

// last returns the last request read.
func (b *recordingBidder) last() recorded {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(b.t, b.reqs, "the bidder read no request")
	return b.reqs[len(b.reqs)-1]
}

// rawExchange sends one raw HTTP/1.1 request (head lines without the
// final blank line; Content-Length is added) and its body to the sidecar
// and returns the answer, its body read whole.
func (sc *sidecar) rawExchange(head string, body []byte) (*http.Response, []byte) {
	sc.t.Helper()
	u, err := url.Parse(sc.base)
	require.NoError(sc.t, err)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(sc.t, err)
	defer c.Close()
	_, err = io.WriteString(c, head+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
	require.NoError(sc.t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(sc.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(sc.t, err)
	return resp, b
}
