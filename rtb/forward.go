package rtb

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/config"
)

// headerRules decide which of the exchange's headers reach the bidder
// (config.UpstreamHeaders): built once per snapshot, read by every request.
type headerRules struct {
	// byLen lists the lower-case names never forwarded by their length: a
	// header name is compared with the few of its own length, no hashing.
	byLen    [][]string
	maxCount int
	maxBytes int
}

func newHeaderRules(u config.Upstream) headerRules {
	r := headerRules{maxCount: u.Headers.MaxHeaders(), maxBytes: u.Headers.MaxHeaderBytes()}
	add := func(n string) {
		n = strings.ToLower(n)
		for len(r.byLen) <= len(n) {
			r.byLen = append(r.byLen, nil)
		}
		if !slices.Contains(r.byLen[len(n)], n) {
			r.byLen[len(n)] = append(r.byLen[len(n)], n)
		}
	}
	for _, n := range config.HopByHop() {
		add(n)
	}
	for _, n := range config.OwnHeaders() {
		add(n)
	}
	for _, n := range u.Headers.Remove {
		add(n)
	}
	for _, h := range u.SetHeaders() {
		add(h.Name) // headers.set replaces the exchange's
	}
	return r
}

// skips reports whether the header name is never forwarded. It allocates
// nothing.
func (r *headerRules) skips(name []byte) bool {
	if len(name) >= len(r.byLen) {
		return false
	}
	for _, n := range r.byLen[len(name)] {
		if equalLower(name, n) {
			return true
		}
	}
	return false
}

// equalLower reports whether b equals the lower-case ASCII string low in
// any case; the lengths are equal.
func equalLower(b []byte, low string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != low[i] {
			return false
		}
	}
	return true
}

// Bounds on what one request's headers put in stack arrays: more header
// names listed in Connection than this forward no exchange header; more
// X-Forwarded-For headers drop the rest.
const (
	maxConnTokens = 16
	maxXFFHeaders = 8
)

// Header names in fasthttp's canonical form, for PeekCanonical: the value
// Peek gives for the same name, without normalizing a copy of the key
// (TestPeekCanonicalKeys).
var (
	strConnectionHdr  = []byte(fasthttp.HeaderConnection)
	strXFF            = []byte(fasthttp.HeaderXForwardedFor)
	keyAcceptEncoding = []byte(fasthttp.HeaderAcceptEncoding)
)

// appendHead appends the bidder's request head for a body of n bytes: the
// request line (the upstream URL's path and query, the exchange's query
// appended with forwardQuery), the fixed lines, Content-Type (the
// exchange's when it is a plain value, else application/json), the
// exchange's end-to-end headers within the limits, X-Forwarded-For with
// the client's address appended, and Content-Length. It allocates nothing,
// but for a request with a Trailer header (fasthttp's iterator formats
// that one).
func (up *upstream) appendHead(dst []byte, ctx *fasthttp.RequestCtx, n int) []byte {
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
	if len(h.PeekCanonical(strConnectionHdr)) > 0 { // the first one; any: all of them
		for k, v := range h.All() {
			if isName(k, lowConnection) {
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
		switch string(k) {
		case fasthttp.HeaderHost, fasthttp.HeaderContentLength, fasthttp.HeaderContentType, fasthttp.HeaderUserAgent:
			// fasthttp's own fields, yielded first under these names: bidguard
			// writes its own (config.OwnHeaders), r.skips would say so.
			continue
		}
		if nConn < 0 || namedIn(conn[:max(nConn, 0)], k) {
			continue
		}
		if isName(k, lowXFF) {
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
	dst = appendClientAddr(dst, ctx)
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

// The lower-case names appendHead looks for among the exchange's headers.
const (
	lowConnection = "connection"
	lowXFF        = "x-forwarded-for"
)

// isName reports whether the header name k is low (lower case ASCII
// without k or s, the letters with a fold outside ASCII) in any case: what
// bytes.EqualFold says, its lengths compared first.
func isName(k []byte, low string) bool {
	return len(k) == len(low) && equalLower(k, low)
}

// tchar marks the bytes of an RFC 9110 token (a header name).
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// isToken reports whether name is a non-empty token.
func isToken(name []byte) bool {
	for _, c := range name {
		if !tchar[c] {
			return false
		}
	}
	return len(name) > 0
}

// connTokens adds to conn[n:] the header names a Connection value lists
// (keep-alive and close are options, not names) and returns the new count,
// -1 when they do not fit.
func connTokens(conn *[maxConnTokens][]byte, n int, v []byte) int {
	for len(v) > 0 {
		t := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		for len(t) > 0 && (t[0] == ' ' || t[0] == '\t') {
			t = t[1:]
		}
		for len(t) > 0 && (t[len(t)-1] == ' ' || t[len(t)-1] == '\t') {
			t = t[:len(t)-1]
		}
		if len(t) == 0 || bytes.EqualFold(t, strKeepAliveTok) || bytes.EqualFold(t, strClose) {
			continue
		}
		if n == len(conn) {
			return -1
		}
		conn[n] = t
		n++
	}
	return n
}

var strKeepAliveTok = []byte("keep-alive")

// namedIn reports whether name is one of the Connection header's names.
func namedIn(conn [][]byte, name []byte) bool {
	for _, t := range conn {
		if len(t) == len(name) && bytes.EqualFold(t, name) {
			return true
		}
	}
	return false
}

// appendClientAddr appends the exchange connection's remote IP address
// as appendIP writes it; on the exchange listener's connections the text
// is made once per connection (exchangeConn.clientAddr).
func appendClientAddr(dst []byte, ctx *fasthttp.RequestCtx) []byte {
	a, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return appendIP(dst, nil) // 0.0.0.0, as fasthttp's RemoteIP has it
	}
	if c, ok := ctx.Conn().(*exchangeConn); ok {
		return append(dst, c.clientAddr(a)...)
	}
	return appendIP(dst, a.IP)
}

// appendIP appends ip (IPv4 for an IPv4-mapped one; 0.0.0.0 for none, the
// address of an in-memory pipe).
func appendIP(dst []byte, ip net.IP) []byte {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return append(dst, "0.0.0.0"...)
	}
	return a.Unmap().AppendTo(dst)
}

// isQuery reports whether the exchange's query can go on the request line
// as it is: visible ASCII without '#'. Another query is not forwarded.
func isQuery(q []byte) bool {
	for _, c := range q {
		if c <= ' ' || c > '~' || c == '#' {
			return false
		}
	}
	return true
}

// errBreakerOpen is call's error when the breaker refused the call: the
// exchange gets a 204 (shed reason breaker), no error is counted.
var errBreakerOpen = errors.New("upstream: circuit breaker open")

// call sends one request to the bidder (hostPool.do, with its start and
// end) through the upstream's circuit breaker, which it tells the outcome,
// and logs failures (rate-limited). A refused call returns errBreakerOpen
// at once, ending at start.
func (up *upstream) call(head, body []byte, resp *fasthttp.Response, maxBody int, start, deadline time.Time) (errKind, time.Duration, error) {
	p := up.pool
	brk := p.brk
	trial, reported := false, false
	if brk != nil {
		var ok bool
		if ok, trial = brk.allow(); !ok {
			return 0, start.Sub(epoch), errBreakerOpen
		}
		defer func() {
			if !reported { // a panic unwinds: the call tells nothing
				brk.report(trial, callNeutral, nil, 0)
			}
		}()
	}
	kind, end, err := p.do(head, body, resp, maxBody, start, deadline, up.m.resends)
	status := 0
	if err == nil {
		status = resp.StatusCode()
	}
	if brk != nil {
		reported = true
		brk.report(trial, verdictOf(kind, err, status), err, status)
	}
	if p.flog != nil {
		switch {
		case err != nil:
			p.flog.record(kind, err, 0)
		case status >= 300 && status < 400:
			p.flog.record(kindRedirect, nil, status)
		case status < 200 || status >= 300:
			p.flog.record(kindHTTPStatus, nil, status)
		}
	}
	return kind, end, err
}
