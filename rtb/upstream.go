package rtb

import (
	"fmt"
	"strings"

	"github.com/bidguard/bidguard/config"
)

// upstream is one configured bidder as a snapshot sees it. Routes of
// successive snapshots share the connection pool (with its breaker) while
// its key is unchanged.
type upstream struct {
	name     string
	path     string // the exchange-facing path routed to it
	deadline config.Deadline
	// line is the request line up to the query: "POST <path>[?<query>]";
	// querySep is what joins the exchange's query to it ("?", "&" or "").
	line     []byte
	querySep string
	fwdQuery bool
	// fixed is the header lines every request carries: Host, User-Agent,
	// headers.set, and Accept-Encoding with acceptEncoding: gzip.
	fixed         []byte
	rules         headerRules
	compressAbove int
	statusOnErr   bool // onError: status
	pool          *hostPool
	m             *upstreamMeters
	fm            *forwardMeters
}

// newUpstream builds the upstream u of a snapshot with config cfg, taking
// its pool from ps.
func newUpstream(u config.Upstream, cfg *config.Config, ua []byte, ps *pools, m *upstreamMeters, fm *forwardMeters) (*upstream, error) {
	t, err := config.ParseUpstreamURL(u.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: url: %w", u.Name, err)
	}
	pool, err := ps.get(u, t, cfg.Limits, fm)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	up := &upstream{
		name:          u.Name,
		path:          path,
		deadline:      u.Deadline.Apply(cfg.Deadline),
		line:          fmt.Appendf(nil, "POST %s", t.RequestURI),
		fwdQuery:      u.QueryForwarded(),
		rules:         newHeaderRules(u),
		compressAbove: u.CompressAbove,
		statusOnErr:   u.StatusOnError(),
		pool:          pool,
		m:             m,
		fm:            fm,
	}
	switch q := strings.IndexByte(t.RequestURI, '?'); {
	case q < 0:
		up.querySep = "?"
	case q < len(t.RequestURI)-1:
		up.querySep = "&"
	}
	up.fixed = fmt.Appendf(nil, "Host: %s\r\nUser-Agent: %s\r\n", t.Host, ua)
	for _, h := range u.SetHeaders() {
		up.fixed = fmt.Appendf(up.fixed, "%s: %s\r\n", h.Name, h.Value)
	}
	if u.AcceptEncoding == "gzip" {
		up.fixed = append(up.fixed, "Accept-Encoding: gzip\r\n"...)
	}
	return up, nil
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
