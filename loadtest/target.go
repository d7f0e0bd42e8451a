package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// target is a parsed attack target: where to dial and what to write in the
// request line and Host header.
type target struct {
	addr string // host:port to dial
	host string // Host header
	uri  string // request-target: path and query
}

// parseTarget parses an http:// URL and refuses a non-loopback host unless
// allowRemote: a load test pointed at someone else's server by a typo is an
// attack on it.
func parseTarget(raw string, allowRemote bool) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("target %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return target{}, fmt.Errorf("target %q: only http:// is supported", raw)
	}
	if u.Hostname() == "" {
		return target{}, fmt.Errorf("target %q: no host", raw)
	}
	if err := checkLoopback(u.Hostname(), allowRemote); err != nil {
		return target{}, fmt.Errorf("target %q: %w", raw, err)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	uri := u.RequestURI()
	return target{addr: net.JoinHostPort(u.Hostname(), port), host: u.Host, uri: uri}, nil
}

// errRemote is returned for a host that is not loopback.
var errRemote = errors.New("not a loopback address (use -allow-remote to load another host)")

// checkLoopback accepts "localhost" and loopback IP literals (127.0.0.0/8,
// ::1). Names other than localhost are never resolved.
func checkLoopback(host string, allowRemote bool) error {
	if allowRemote {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errRemote
	}
	return nil
}

// checkListen applies checkLoopback to a listen address; an empty host
// (":9000") listens on every interface and is refused too.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	if err := checkLoopback(host, allowRemote); err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	return nil
}
