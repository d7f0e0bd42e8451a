package rtb

import (
	"fmt"
	"strconv"

	"github.com/bidguard/bidguard/config"
)

// upstream is one configured bidder as a snapshot sees it. Routes of
// successive snapshots share the connection pool while its key is unchanged.
type upstream struct {
	name     string
	path     string // the exchange-facing path routed to it
	deadline config.Deadline
	// prefix is the request head up to the per-request headers: request
	// line, Host, User-Agent and, with acceptEncoding: gzip, Accept-Encoding.
	prefix      []byte
	statusOnErr bool // onError: status
	pool        *hostPool
	m           *upstreamMeters
}

// newUpstream builds the upstream u of a snapshot with config cfg, taking
// its pool from ps.
func newUpstream(u config.Upstream, cfg *config.Config, ua []byte, ps *pools, m *upstreamMeters) (*upstream, error) {
	t, err := config.ParseUpstreamURL(u.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: url: %w", u.Name, err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	prefix := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", t.RequestURI, t.Host, ua)
	if u.AcceptEncoding == "gzip" {
		prefix = append(prefix, "Accept-Encoding: gzip\r\n"...)
	}
	return &upstream{
		name:        u.Name,
		path:        path,
		deadline:    u.Deadline.Apply(cfg.Deadline),
		prefix:      prefix,
		statusOnErr: u.StatusOnError(),
		pool:        ps.get(t, u.IdleTimeout(), cfg.Limits),
		m:           m,
	}, nil
}

// appendHead appends the request head for a body of n bytes: the prefix,
// Content-Type ct (application/json when empty or not a plain header
// value), X-Openrtb-Version when version is one, Content-Length.
func (up *upstream) appendHead(dst, ct, version []byte, n int) []byte {
	if len(ct) == 0 || !isHeaderValue(ct) {
		ct = jsonType
	}
	dst = append(dst, up.prefix...)
	dst = append(dst, "Content-Type: "...)
	dst = append(dst, ct...)
	if len(version) > 0 && isHeaderValue(version) {
		dst = append(dst, "\r\n"+hdrOpenRTB+": "...)
		dst = append(dst, version...)
	}
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

// isHeaderValue reports whether v can be written as a header value as it
// is: visible ASCII, spaces and tabs only (no CR, LF or other controls).
func isHeaderValue(v []byte) bool {
	for _, b := range v {
		if (b < ' ' && b != '\t') || b > '~' {
			return false
		}
	}
	return true
}
