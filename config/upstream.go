package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// Upstream and log keys' defaults and values.
const (
	// DefaultIdleTimeoutMs is upstreams[].idleTimeoutMs when absent: below
	// the 5 s after which Node.js bidders close idle connections.
	DefaultIdleTimeoutMs = 4000
	// OnErrorNoBid answers the exchange 204 on a bidder failure (default).
	OnErrorNoBid = "nobid"
	// OnErrorStatus answers 504 on a bidder timeout and 502 on every other
	// bidder failure.
	OnErrorStatus = "status"
	// DefaultRejectionsPerSecond is log.rejectionsPerSecond when absent.
	DefaultRejectionsPerSecond = 10
)

// IdleTimeout is how long a pooled connection to the upstream may sit idle
// before it is closed (DefaultIdleTimeoutMs when unset; 0: never reused).
func (u Upstream) IdleTimeout() time.Duration {
	ms := DefaultIdleTimeoutMs
	if u.IdleTimeoutMs != nil {
		ms = *u.IdleTimeoutMs
	}
	return time.Duration(ms) * time.Millisecond
}

// StatusOnError reports whether a bidder failure is answered 502/504
// (onError: status) rather than 204.
func (u Upstream) StatusOnError() bool { return u.OnError == OnErrorStatus }

// UpstreamTarget is an upstream URL taken apart: what the client dials and
// what it writes on the request line and in the Host header.
type UpstreamTarget struct {
	// TLS is true for https.
	TLS bool
	// Addr is the host:port dialed (port 80 or 443 when the URL has none).
	Addr string
	// Host is the Host header: the URL's host, with its port when given.
	Host string
	// ServerName is the host without port, for TLS verification.
	ServerName string
	// RequestURI is the escaped path and query ("/" for an empty path).
	RequestURI string
}

var errNotHTTP = errors.New("is not an http(s) URL with a host")

// ParseUpstreamURL checks an upstream URL and takes it apart. It is the one
// validation of upstream URLs: `config validate`, `serve --upstream` and the
// bid path's client all use it.
func ParseUpstreamURL(raw string) (UpstreamTarget, error) {
	p, err := url.Parse(raw)
	if err != nil {
		return UpstreamTarget{}, fmt.Errorf("%q is not an http(s) URL: %w", raw, errors.Unwrap(err))
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.Hostname() == "" || p.Opaque != "" {
		return UpstreamTarget{}, fmt.Errorf("%q %w", raw, errNotHTTP)
	}
	if p.User != nil {
		return UpstreamTarget{}, fmt.Errorf("%q: credentials in the URL are not supported", raw)
	}
	if p.Fragment != "" {
		return UpstreamTarget{}, fmt.Errorf("%q: a fragment is not sent to the bidder", raw)
	}
	t := UpstreamTarget{TLS: p.Scheme == "https", Host: p.Host, ServerName: p.Hostname(), RequestURI: p.RequestURI(), Addr: p.Host}
	if p.Port() == "" {
		port := "80"
		if t.TLS {
			port = "443"
		}
		t.Addr = net.JoinHostPort(p.Hostname(), port)
	}
	return t, nil
}
