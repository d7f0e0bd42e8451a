package rtb

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bidguard/bidguard/engine"
)

// upstream is one configured bidder as a snapshot sees it. Routes of
// successive snapshots share the pooled client when its settings did not
// change.
type upstream struct {
	name     string
	uri      string // the full URL posted to
	gzip     bool   // acceptEncoding: gzip
	deadline engine.Deadline
	client   *fasthttp.HostClient
	m        *upstreamMeters
}

// clientKey identifies a pooled client: upstreams with equal keys share
// their keep-alive connections.
type clientKey struct {
	addr             string
	tls              bool
	maxConns         int
	maxResponseBytes int
}

func newClient(k clientKey, dial func(addr string) (net.Conn, error)) *fasthttp.HostClient {
	c := &fasthttp.HostClient{
		Addr:                     k.addr,
		IsTLS:                    k.tls,
		NoDefaultUserAgentHeader: true,
		MaxConns:                 k.maxConns,
		// A bid POST is never retried: one call per request.
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		// The wire cap; a compressed body is capped again once decompressed.
		MaxResponseBodySize:    k.maxResponseBytes,
		MaxIdleConnDuration:    30 * time.Second,
		DisablePathNormalizing: true,
		ReadBufferSize:         8 << 10,
	}
	if dial != nil {
		c.Dial = dial
	}
	return c
}

// parseUpstream checks an upstream URL and returns its client key and the
// URI to post to.
func parseUpstream(u engine.Upstream, lim engine.Limits) (clientKey, string, error) {
	p, err := url.Parse(u.URL)
	if err != nil {
		return clientKey{}, "", fmt.Errorf("upstream %q: url: %v", u.Name, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return clientKey{}, "", fmt.Errorf("upstream %q: url: %q is not an http(s) URL with a host", u.Name, u.URL)
	}
	if p.User != nil {
		return clientKey{}, "", fmt.Errorf("upstream %q: url: credentials in the URL are not supported", u.Name)
	}
	tls := p.Scheme == "https"
	addr := p.Host
	if p.Port() == "" {
		port := "80"
		if tls {
			port = "443"
		}
		addr = net.JoinHostPort(p.Hostname(), port)
	}
	uri := p.String()
	if p.Path == "" {
		uri = p.Scheme + "://" + p.Host + "/"
		if p.RawQuery != "" {
			uri += "?" + p.RawQuery
		}
	}
	return clientKey{addr: addr, tls: tls, maxConns: max(lim.MaxInFlight, 1), maxResponseBytes: lim.MaxResponseBytes}, uri, nil
}

// classify maps a client error to its bidguard_upstream_errors_total kind.
func classify(err error) errKind {
	var op *net.OpError
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return kindTooLarge
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout), os.IsTimeout(err):
		return kindTimeout
	case errors.Is(err, fasthttp.ErrNoFreeConns), errors.Is(err, syscall.ECONNREFUSED):
		return kindConnect
	case errors.As(err, &op) && op.Op == "dial":
		return kindConnect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return kindTimeout
	}
	return kindReset
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
