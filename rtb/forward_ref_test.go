package rtb

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// appendHeadRef is appendHead as it was before the exchange's Host,
// Content-Length, Content-Type and User-Agent were passed over first, the
// Connection and X-Forwarded-For names compared by length first and the
// client's address written once per connection, kept as the reference
// appendHead must agree with on every request, in bytes
// written and headers counted as dropped (TestAppendHeadDifferential,
// FuzzAppendHeadDifferential).
func (up *upstream) appendHeadRef(dst []byte, ctx *fasthttp.RequestCtx, n int) []byte {
	h := &ctx.Request.Header
	dst = append(dst, up.line...)
	if up.fwdQuery {
		if q := ctx.URI().QueryString(); len(q) > 0 && isQuery(q) {
			dst = append(dst, up.querySep...)
			dst = append(dst, q...)
		}
	}
	dst = append(dst, " HTTP/1.1\r\n"...)
	dst = append(dst, up.fixed...)
	ct := h.ContentType()
	if len(ct) == 0 || !isHeaderValue(ct) {
		ct = jsonType
	}
	dst = append(dst, "Content-Type: "...)
	dst = append(dst, ct...)
	dst = append(dst, "\r\n"...)

	var conn [maxConnTokens][]byte
	nConn := 0
	if len(h.Peek(fasthttp.HeaderConnection)) > 0 { // the first one; any: all of them
		for k, v := range h.All() {
			if bytes.EqualFold(k, strConnectionHdr) {
				if nConn = connTokens(&conn, nConn, v); nConn < 0 {
					break // too many to honour: forward nothing
				}
			}
		}
	}
	var xff [maxXFFHeaders][]byte
	nXFF, count, size := 0, 0, 0
	r := &up.rules
	drop := func(why headerDrop) { up.fm.dropped[why].Inc() }
	for k, v := range h.All() {
		if nConn < 0 || namedIn(conn[:max(nConn, 0)], k) {
			continue
		}
		if bytes.EqualFold(k, strXFF) {
			if nXFF == len(xff) {
				drop(dropCount)
				continue
			}
			xff[nXFF] = v
			nXFF++
			continue
		}
		if r.skips(k) {
			continue
		}
		switch line := len(k) + len(v) + 4; {
		case !isToken(k) || !isHeaderValue(v):
			drop(dropInvalid)
		case count+1 > r.maxCount:
			drop(dropCount)
		case size+line > r.maxBytes:
			drop(dropSize)
		default:
			count++
			size += line
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}

	// X-Forwarded-For: the exchange's values, when they fit, then the
	// client's address.
	dst = append(dst, "X-Forwarded-For: "...)
	if nXFF > 0 {
		line := len(strXFF) + 4 + 2*nXFF
		valid := true
		for _, v := range xff[:nXFF] {
			line += len(v)
			valid = valid && isHeaderValue(v)
		}
		switch {
		case !valid:
			drop(dropInvalid)
		case count+1 > r.maxCount:
			drop(dropCount)
		case size+line > r.maxBytes:
			drop(dropSize)
		default:
			for _, v := range xff[:nXFF] {
				dst = append(dst, v...)
				dst = append(dst, ", "...)
			}
		}
	}
	dst = appendIP(dst, ctx.RemoteIP())
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

// headUpstreams are upstreams whose rules differ: defaults, headers.set
// and headers.remove, and limits a few headers exceed.
func headUpstreams(t testing.TB) []*upstream {
	return []*upstream{
		testUpstream(t, ""),
		testUpstream(t, "    headers: {set: {X-Set: s, X-A: u}, remove: [cookie, x-b, Keep-Alive]}\n"),
		testUpstream(t, "    headers: {maxCount: 2, maxBytes: 40}\n"),
	}
}

// sameHead checks that appendHead and appendHeadRef write the same head
// and count the same drops for the request with the header lines head,
// also with the headers of set added in code (not parsed, not checked).
func sameHead(t *testing.T, ups []*upstream, head string, set ...string) {
	t.Helper()
	var req fasthttp.Request
	if req.Read(bufio.NewReader(strings.NewReader("POST /bid?pub=1 HTTP/1.1\r\n"+head+"\r\n"))) != nil {
		return
	}
	for i := 0; i+1 < len(set); i += 2 {
		req.Header.Set(set[i], set[i+1])
	}
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}, nil)
	counts := func(up *upstream) (c [numHeaderDrops]uint64) {
		for i, m := range up.fm.dropped {
			c[i] = m.Get()
		}
		return c
	}
	for _, up := range ups {
		c0 := counts(up)
		want := string(up.appendHeadRef(nil, ctx, 42))
		c1 := counts(up)
		got := string(up.appendHead(nil, ctx, 42))
		c2 := counts(up)
		require.Equal(t, want, got, "%q %q", head, set)
		for i := range c0 {
			require.Equal(t, c1[i]-c0[i], c2[i]-c1[i], "%q %q: drops %s", head, set, headerDropNames[i])
		}
	}
}

// headSeeds are header blocks for TestAppendHeadDifferential and the fuzz
// target's corpus: fasthttp's own fields in any case and more than once,
// Connection naming them, X-Forwarded-For in any case, names with letters
// whose case folds outside ASCII, limits.
var headSeeds = []string{
	"",
	"Host: h\r\nContent-Length: 0\r\n",
	"Host: sidecar\r\nContent-Type: application/json\r\nContent-Length: 0\r\nUser-Agent: exchange/2.1\r\nAuthorization: Bearer 0123456789abcdef\r\n" +
		"X-Request-Id: 3f2a9c\r\nX-Openrtb-Version: 2.6\r\nCookie: uid=abc\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n" +
		"X-Forwarded-For: 198.51.100.7\r\nAccept-Encoding: gzip\r\nX-Exchange-Region: eu-west\r\nX-Tenant: acme\r\n",
	"host: a\r\ncontent-length: 0\r\ncontent-type: text/plain\r\nuser-agent: x\r\nUSER-AGENT: y\r\n",
	"Host: h\r\nContent-Length: 0\r\nConnection: Host, content-type, User-Agent, x-a\r\nX-A: 1\r\nX-B: 2\r\n",
	"Host: h\r\nContent-Length: 0\r\nconnection: x-forwarded-for\r\nX-Forwarded-For: 1.2.3.4\r\n",
	"Host: h\r\nContent-Length: 0\r\nx-forwarded-for: 1.1.1.1\r\nX-FORWARDED-FOR: 2.2.2.2\r\nX-Forwarded-Fox: 3\r\nX-Forwarded-Fo: 4\r\nX-Forwarded-Forx: 5\r\n",
	"Host: h\r\nContent-Length: 0\r\nConnectioN: close\r\nConnectionx: x-a\r\nConnectio: z\r\nX-A: 1\r\nZ: 2\r\n",
	"Host: h\r\nContent-Length: 0\r\nConnection: y\r\nConnectionx: x-a\r\nX-A: 1\r\n",
	"Host: h\r\nContent-Length: 0\r\n\u212aeep-Alive: 1\r\nX-Forwarded-For\u212a: 1\r\nConnection\u017f: a\r\nHoſt: b\r\n",
	"Host: h\r\nContent-Length: 0\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\nX-D: " + strings.Repeat("v", 30) + "\r\nX-Bin: caf\xc3\xa9\r\n",
	"Host: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nExpect: 100-continue\r\nX-E: e\r\n",
	"Host: h\r\nContent-Length: 0\r\n" + strings.Repeat("Connection: x-a, x-b\r\n", maxConnTokens/2) + "Connection: x-c\r\nX-E: e\r\n",
	"Host: h\r\nContent-Length: 0\r\n" + strings.Repeat("X-Forwarded-For: 9.9.9.9\r\n", maxXFFHeaders+1),
}

// TestAppendHeadDifferential: appendHead and appendHeadRef agree on the
// seeds, parsed, and with headers set in code under names fasthttp's
// parser would refuse or fold.
func TestAppendHeadDifferential(t *testing.T) {
	ups := headUpstreams(t)
	for _, h := range headSeeds {
		sameHead(t, ups, h)
		sameHead(t, ups, h, "X(Bad", "v", "\u212aeep-alive", "1", "x-forwarded-for", "5.5.5.5", "Connection", "X-Set")
		sameHead(t, ups, h, "Content-Type", "application/json\x00", "User-Agent", "", "Host", "\xff")
	}
}

// FuzzAppendHeadDifferential: appendHead and appendHeadRef agree on any
// header block fasthttp's server parses (go test -run '^$' -fuzz
// FuzzAppendHeadDifferential ./rtb/).
func FuzzAppendHeadDifferential(f *testing.F) {
	for _, h := range headSeeds {
		f.Add(h)
	}
	ups := headUpstreams(f)
	f.Fuzz(func(t *testing.T, head string) {
		sameHead(t, ups, head)
	})
}

// addrConn is a connection with a remote address only.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c *addrConn) RemoteAddr() net.Addr { return c.remote }

// TestClientAddrPerConn: on an exchange connection appendClientAddr writes
// what appendIP writes for fasthttp's RemoteIP, for every kind of address,
// again from the text kept, and anew when the address is another one.
func TestClientAddrPerConn(t *testing.T) {
	addrs := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1},
		&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1")},
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Zone: "eth0"},
		&net.TCPAddr{IP: net.ParseIP("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")},
		&net.TCPAddr{IP: net.IP{1, 2, 3}},
		&net.TCPAddr{},
		&net.UnixAddr{Name: "/s", Net: "unix"},
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 2)},
	}
	ac := &addrConn{}
	ec := &exchangeConn{Conn: ac}
	for _, a := range addrs {
		ac.remote = a
		var ctx fasthttp.RequestCtx
		ctx.Init2(ec, nil, false)
		want := string(appendIP(nil, ctx.RemoteIP()))
		for range 2 {
			require.Equal(t, want, string(appendClientAddr([]byte("x, "), &ctx)[3:]), a)
		}
	}
	require.Equal(t, "10.0.0.2", string(ec.addrText))
}
