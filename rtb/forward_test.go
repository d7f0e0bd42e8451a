package rtb

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/internal/testbidder"
)

// forwardConfig routes /bid to the bidder's URL with path and query
// pathQuery; upstreamKeys are YAML lines of the upstream entry (indented
// four spaces).
func forwardConfig(b *testbidder.Bidder, pathQuery, upstreamKeys string) string {
	return fmt.Sprintf("upstreams:\n  - name: dsp\n    url: %q\n    path: /bid\n%s\npolicy:\n  gates: [{gate: impidMatch}]\n", b.URL+pathQuery, upstreamKeys)
}

// hopByHopLines are exchange headers that must never reach the bidder:
// RFC 9110 §7.6.1's and the proxy ones, and X-Hop, named by Connection.
var hopByHopLines = []string{
	"Connection: keep-alive, X-Hop", "X-Hop: secret", "Keep-Alive: timeout=5", "TE: trailers",
	"Upgrade: h2c", "Proxy-Authorization: Basic eA==", "Proxy-Connection: keep-alive",
}

// TestForwardedHeaders: the bidder gets the exchange's end-to-end headers,
// headers.set (fixed, env, file) instead of the exchange's of that name,
// not headers.remove, not a hop-by-hop header, not one bidguard owns, and
// X-Forwarded-For with the client's address appended.
func TestForwardedHeaders(t *testing.T) {
	b := testbidder.Raw(t, testbidder.Answering([]byte("HTTP/1.1 204 No Content\r\n\r\n")))
	secret := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(secret, []byte("file-secret\n"), 0o600))
	t.Setenv("BIDGUARD_TEST_SECRET", "env-secret")
	keys := fmt.Sprintf(`    headers:
      set: {X-Api-Key: "${file:%s}", X-Env: "${env:BIDGUARD_TEST_SECRET}", X-Fixed: v1}
      remove: [x-remove-me]
`, secret)
	sc := startSidecar(t, compile(t, forwardConfig(b, "/openrtb?x=1", keys), nil))
	head := []string{
		"POST /bid?a=b&c=%2F HTTP/1.1", "Host: sidecar.example", "Content-Type: application/json",
		"Authorization: Bearer tok", "X-Request-Id: r-1", "Cookie: a=b", "X-Openrtb-Version: 2.6",
		"X-Forwarded-For: 1.2.3.4", "X-Forwarded-For: 5.6.7.8", "Accept-Encoding: gzip",
		"User-Agent: exchange/1", "X-Remove-Me: 1", "X-Api-Key: from-the-exchange", "x-lower-case: kept",
	}
	body := requestWithID(t, "r1")
	resp, _ := sc.rawExchange(strings.Join(append(head, hopByHopLines...), "\r\n"), body)
	require.Equal(t, 204, resp.StatusCode)

	r := b.Last(t)
	require.Equal(t, "/openrtb", r.Path(), "the path is the upstream's")
	require.Equal(t, "x=1&a=b&c=%2F", r.Query(), "the exchange's query after the URL's, as sent")
	require.Equal(t, strings.TrimPrefix(b.URL, "http://"), r.Get(t, "Host"))
	for k, want := range map[string]string{
		"Authorization": "Bearer tok", "X-Request-Id": "r-1", "Cookie": "a=b", "X-Openrtb-Version": "2.6",
		"X-Lower-Case": "kept", "User-Agent": "bidguard/test", "Content-Type": "application/json",
		"X-Api-Key": "file-secret", "X-Env": "env-secret", "X-Fixed": "v1",
		"X-Forwarded-For": "1.2.3.4, 5.6.7.8, 127.0.0.1",
		"Content-Length":  strconv.Itoa(len(r.Body)),
	} {
		require.Equal(t, want, r.Get(t, k), k)
	}
	for _, k := range []string{"Connection", "X-Hop", "Keep-Alive", "TE", "Upgrade", "Proxy-Authorization",
		"Proxy-Connection", "Accept-Encoding", "X-Remove-Me", "Transfer-Encoding", "Content-Encoding"} {
		require.Empty(t, r.Values(k), k)
	}
	seen := map[string]bool{}
	for _, h := range r.Header {
		require.False(t, seen[strings.ToLower(h[0])], "%s sent twice", h[0])
		seen[strings.ToLower(h[0])] = true
	}
}

// TestForwardQuery: the exchange's query joins the URL's own (none, some,
// a bare "?"), or is left out with forwardQuery: false; the path is always
// the upstream's.
func TestForwardQuery(t *testing.T) {
	f := func(pathQuery, keys, exchangeTarget, wantQuery string) {
		t.Helper()
		b := testbidder.Raw(t, testbidder.Answering([]byte("HTTP/1.1 204 No Content\r\n\r\n")))
		sc := startSidecar(t, compile(t, forwardConfig(b, pathQuery, keys), nil))
		resp, _ := sc.rawExchange("POST "+exchangeTarget+" HTTP/1.1\r\nHost: x", requestWithID(t, "q"))
		require.Equal(t, 204, resp.StatusCode)
		r := b.Last(t)
		want, _, _ := strings.Cut(pathQuery, "?")
		require.Equal(t, want, r.Path())
		require.Equal(t, wantQuery, r.Query(), "%s + %s", pathQuery, exchangeTarget)
	}
	f("/p", "", "/bid?a=1", "a=1")
	f("/p?x=1", "", "/bid?a=1&b=2", "x=1&a=1&b=2")
	f("/p?", "", "/bid?a=1", "a=1")
	f("/p?x=1", "", "/bid", "x=1")
	f("/p?x=1", "    forwardQuery: false\n", "/bid?a=1", "x=1")
	f("/p", "    forwardQuery: false\n", "/bid?a=1", "")
}

// TestHeaderLimits: an exchange header that would break headers.maxCount
// or headers.maxBytes, or that is not a plain value, is dropped whole and
// counted; the others pass; X-Forwarded-For keeps the client's address.
func TestHeaderLimits(t *testing.T) {
	b := testbidder.Raw(t, testbidder.Answering([]byte("HTTP/1.1 204 No Content\r\n\r\n")))
	keys := "    headers: {maxCount: 2, maxBytes: 64}\n"
	sc := startSidecar(t, compile(t, forwardConfig(b, "/p", keys), nil))
	long := strings.Repeat("v", 100)
	head := "POST /bid HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nX-Big: " + long + "\r\nX-Bin: caf\xc3\xa9\r\nX-C: 2\r\nX-D: 3\r\nX-Forwarded-For: 9.9.9.9"
	resp, _ := sc.rawExchange(head, requestWithID(t, "l"))
	require.Equal(t, 204, resp.StatusCode)
	r := b.Last(t)
	require.Equal(t, "1", r.Get(t, "X-A"))
	require.Equal(t, "2", r.Get(t, "X-C"))
	for _, k := range []string{"X-Big", "X-Bin", "X-D"} {
		require.Empty(t, r.Values(k), k)
	}
	require.Equal(t, "127.0.0.1", r.Get(t, "X-Forwarded-For"))
	for reason, n := range map[string]float64{"size": 1, "count": 2, "invalid": 1} {
		require.Equal(t, n, sc.metric(`bidguard_upstream_headers_dropped_total{upstream="dsp",reason="`+reason+`"}`), reason)
	}
}

// TestHeaderBytesBoundary: a header line counts as name, value and 4 bytes
// (": " and CRLF); one that makes exactly headers.maxBytes passes, the next
// byte is dropped.
func TestHeaderBytesBoundary(t *testing.T) {
	b := testbidder.Raw(t, testbidder.Answering([]byte("HTTP/1.1 204 No Content\r\n\r\n")))
	keys := "    headers: {maxCount: 10, maxBytes: 16}\n"
	sc := startSidecar(t, compile(t, forwardConfig(b, "/p", keys), nil))
	head := "POST /bid HTTP/1.1\r\nHost: x\r\nX-A: 123456789\r\nX-B: 1"
	resp, _ := sc.rawExchange(head, requestWithID(t, "l"))
	require.Equal(t, 204, resp.StatusCode)
	r := b.Last(t)
	require.Equal(t, "123456789", r.Get(t, "X-A"), "16 bytes: exactly the limit")
	require.Empty(t, r.Values("X-B"), "8 more bytes")
	require.Equal(t, 1.0, sc.metric(`bidguard_upstream_headers_dropped_total{upstream="dsp",reason="size"}`))
}

// parsedCtx is a request context for the raw request, as fasthttp's server
// reads it, from the client address addr.
func parsedCtx(t testing.TB, raw string, addr net.Addr) *fasthttp.RequestCtx {
	t.Helper()
	var req fasthttp.Request
	require.NoError(t, req.Read(bufio.NewReader(strings.NewReader(raw))))
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, addr, nil)
	return ctx
}

// testUpstream is an upstream built from the YAML keys of one upstream
// entry, outside a Server.
func testUpstream(t testing.TB, keys string) *upstream {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("upstreams:\n  - name: dsp\n    url: http://bidder:81/p?x=1\n"+keys))
	require.NoError(t, err)
	ps := &pools{byKey: map[clientKey]*hostPool{}, m: &newMeters().client}
	m := newMeters()
	up, err := newUpstream(cfg.Upstreams[0], cfg, []byte("bidguard/test"), ps, m.upstream("dsp"), m.forward("dsp"))
	require.NoError(t, err)
	return up
}

// TestAppendHead: the head of requests fasthttp's server read (chunked,
// with trailers, Expect, Connection: close, IPv6 and IPv4-mapped clients):
// framing headers are bidguard's, the rest follows the rules.
func TestAppendHead(t *testing.T) {
	up := testUpstream(t, "    headers: {set: {X-Set: s}}\n")
	f := func(raw string, addr net.Addr, want string) {
		t.Helper()
		ctx := parsedCtx(t, raw, addr)
		require.Equal(t, want, string(up.appendHead(nil, ctx, 7)))
	}
	v4 := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}
	f("POST /bid?q=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nExpect: 100-continue\r\nConnection: close\r\nX-Set: exchange\r\nX-E: e\r\n\r\n3\r\nabc\r\n0\r\nX-T: t\r\n\r\n",
		v4, "POST /p?x=1&q=1 HTTP/1.1\r\nHost: bidder:81\r\nUser-Agent: bidguard/test\r\nX-Set: s\r\nContent-Type: application/json\r\nX-E: e\r\nX-Forwarded-For: 10.0.0.1\r\nContent-Length: 7\r\n\r\n")
	f("POST /bid HTTP/1.1\r\nHost: h\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 0\r\nContent-Encoding: gzip\r\nAccept-Encoding: br\r\n\r\n",
		&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1")}, "POST /p?x=1 HTTP/1.1\r\nHost: bidder:81\r\nUser-Agent: bidguard/test\r\nX-Set: s\r\nContent-Type: application/json; charset=utf-8\r\nX-Forwarded-For: 192.0.2.1\r\nContent-Length: 7\r\n\r\n")
	f("POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nX-Forwarded-For: 1.1.1.1\r\n\r\n",
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1")}, "POST /p?x=1 HTTP/1.1\r\nHost: bidder:81\r\nUser-Agent: bidguard/test\r\nX-Set: s\r\nContent-Type: application/json\r\nX-Forwarded-For: 1.1.1.1, 2001:db8::1\r\nContent-Length: 7\r\n\r\n")
	// A name that is not a token (fasthttp's parser refuses one; a header
	// set in code is not parsed) is dropped as invalid.
	ctx := parsedCtx(t, "POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", v4)
	ctx.Request.Header.Set("X(Bad", "v")
	require.NotContains(t, string(up.appendHead(nil, ctx, 7)), "X(Bad")
	require.EqualValues(t, 1, up.fm.dropped[dropInvalid].Get())
	// More names in Connection than bidguard reads: no exchange header passes.
	many := strings.Repeat("Connection: x-a, x-b\r\n", maxConnTokens/2) + "Connection: x-c\r\n"
	f("POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"+many+"X-E: e\r\n\r\n",
		v4, "POST /p?x=1 HTTP/1.1\r\nHost: bidder:81\r\nUser-Agent: bidguard/test\r\nX-Set: s\r\nContent-Type: application/json\r\nX-Forwarded-For: 10.0.0.1\r\nContent-Length: 7\r\n\r\n")
}

// TestAcceptsGzip: Accept-Encoding values, q=0 refusing.
func TestAcceptsGzip(t *testing.T) {
	f := func(ae string, want bool) {
		t.Helper()
		require.Equal(t, want, acceptsGzip([]byte(ae)), ae)
	}
	f("gzip", true)
	f("GZIP", true)
	f("br, gzip;q=0.5", true)
	f("x-gzip", true)
	f("*", true)
	f("", false)
	f("br", false)
	f("identity", false)
	f("gzip;q=0", false)
	f("gzip; q=0.000", false)
	f("gzip;q=0.001", true)
	f("*, gzip;q=0", false)
	f("*;q=0", false)
	f("gzip, gzip;q=0", false)
	f("gzipx", false)
}

// TestHeaderAndQueryBytes: every RFC 9110 token byte may be in a forwarded
// header name, and every visible ASCII byte but '#' in a forwarded query.
func TestHeaderAndQueryBytes(t *testing.T) {
	const tokenBytes = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&'*+-.^_`|~"
	for i := range 256 {
		c := byte(i)
		require.Equal(t, strings.IndexByte(tokenBytes, c) >= 0, isToken([]byte{'X', c}), "header name byte %q", c)
		require.Equal(t, c > ' ' && c <= '~' && c != '#', isQuery([]byte{'a', c}), "query byte %q", c)
	}
}

// TestPeekCanonicalKeys: PeekCanonical with the canonical keys bidguard
// reads gives what Peek gives for the header's name, on requests and
// answers that carry the header in any case, more than once, as close or
// not at all.
func TestPeekCanonicalKeys(t *testing.T) {
	heads := []string{
		"", "Connection: close\r\n", "connection: keep-alive, X-Hop\r\n", "CONNECTION: Close\r\n",
		"Connection: x\r\nConnection: close\r\n", "Connection: a\r\nconnection: b\r\n",
		"Accept-Encoding: gzip\r\n", "accept-encoding: br, GZIP\r\nAccept-Encoding: x\r\n",
	}
	for _, extra := range heads {
		var req fasthttp.Request
		require.NoError(t, req.Read(bufio.NewReader(strings.NewReader("POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"+extra+"\r\n"))), extra)
		var resp fasthttp.Response
		require.NoError(t, resp.Read(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"+extra+"\r\n"))), extra)
		for _, k := range [][]byte{strConnectionHdr, keyAcceptEncoding} {
			require.Equal(t, string(req.Header.Peek(strings.ToLower(string(k)))), string(req.Header.PeekCanonical(k)), extra)
			require.Equal(t, string(resp.Header.Peek(strings.ToLower(string(k)))), string(resp.Header.PeekCanonical(k)), extra)
		}
	}
}
