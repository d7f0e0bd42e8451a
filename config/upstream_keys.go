package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Defaults of the upstream blocks below.
const (
	// DefaultMaxHeaders is upstreams[].headers.maxCount when absent.
	DefaultMaxHeaders = 32
	// DefaultMaxHeaderBytes is upstreams[].headers.maxBytes when absent.
	DefaultMaxHeaderBytes = 4096
	// DefaultBreakerFailures is upstreams[].breaker.failures when absent.
	DefaultBreakerFailures = 20
	// DefaultBreakerOpenMs is upstreams[].breaker.openMs when absent.
	DefaultBreakerOpenMs = 1000
	// DefaultBreakerSuccesses is upstreams[].breaker.successes when absent.
	DefaultBreakerSuccesses = 3
)

// UpstreamHeaders is an upstream's `headers:` block. The exchange's
// end-to-end headers are forwarded; never forwarded are the hop-by-hop
// headers (Connection, Proxy-Connection, Keep-Alive, TE, Trailer,
// Transfer-Encoding, Upgrade, Proxy-Authorization, Proxy-Authenticate),
// every header the exchange's Connection header names, and the headers
// bidguard writes itself (Host, Content-Length, Content-Type,
// Content-Encoding, Accept-Encoding, User-Agent, Expect); X-Forwarded-For
// gets the exchange's client address appended.
type UpstreamHeaders struct {
	// Set adds headers, replacing the exchange's of the same name. A value
	// is fixed text, "${env:NAME}" (an environment variable) or
	// "${file:PATH}" (a file's content without its trailing newline; PATH
	// relative to the config file), read at load and at every reload (a
	// changed file reloads the config), never logged. Names may not be
	// hop-by-hop, bidguard's own or X-Forwarded-For.
	Set map[string]string `yaml:"set"`
	// Remove names exchange headers not to forward (any case).
	Remove []string `yaml:"remove"`
	// MaxCount caps how many exchange headers are forwarded (32; > 0).
	MaxCount *int `yaml:"maxCount"`
	// MaxBytes caps the forwarded exchange headers' total size, each
	// counted as name, value and 4 bytes (4096; > 0). A header that would
	// break either limit is dropped whole and counted
	// (bidguard_upstream_headers_dropped_total), never cut.
	MaxBytes *int `yaml:"maxBytes"`
}

// Header is one header line bidguard writes.
type Header struct{ Name, Value string }

// UpstreamTLS is an https:// upstream's `tls:` block. Certificate, key and
// CA files are read at load and again when they change (checked before a
// new connection's handshake).
type UpstreamTLS struct {
	// CAFile holds the PEM roots the bidder's certificate must chain to
	// ("": the system's roots).
	CAFile string `yaml:"caFile"`
	// CertFile and KeyFile are the PEM client certificate and its key,
	// both or neither.
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	// ServerName is the name verified in the bidder's certificate and sent
	// as SNI ("": the URL's host).
	ServerName string `yaml:"serverName"`
	// MinVersion is "1.2" (the default) or "1.3".
	MinVersion string `yaml:"minVersion"`
}

// Breaker is an upstream's circuit breaker: after Failures consecutive
// failures (connect, tls, timeout or a 5xx answer) it opens and every
// request is answered 204 at once (bidguard_shed_total{reason="breaker"})
// for OpenMs; then one request at a time is let through (half-open), and
// Successes successes in a row close it (a failure opens it again).
type Breaker struct {
	Failures  *int `yaml:"failures"`  // 20; 0 turns the breaker off
	OpenMs    *int `yaml:"openMs"`    // 1000; > 0
	Successes *int `yaml:"successes"` // 3; > 0
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// MaxHeaders is headers.maxCount with its default applied.
func (h UpstreamHeaders) MaxHeaders() int { return orDefault(h.MaxCount, DefaultMaxHeaders) }

// MaxHeaderBytes is headers.maxBytes with its default applied.
func (h UpstreamHeaders) MaxHeaderBytes() int { return orDefault(h.MaxBytes, DefaultMaxHeaderBytes) }

// BreakerFailures is breaker.failures with its default (0: no breaker).
func (b Breaker) BreakerFailures() int { return orDefault(b.Failures, DefaultBreakerFailures) }

// BreakerOpenMs is breaker.openMs with its default.
func (b Breaker) BreakerOpenMs() int { return orDefault(b.OpenMs, DefaultBreakerOpenMs) }

// BreakerSuccesses is breaker.successes with its default.
func (b Breaker) BreakerSuccesses() int { return orDefault(b.Successes, DefaultBreakerSuccesses) }

// QueryForwarded reports forwardQuery with its default (true).
func (u Upstream) QueryForwarded() bool { return u.ForwardQuery == nil || *u.ForwardQuery }

// SetHeaders returns headers.set with its values resolved when the config
// was loaded, sorted by name. The values may be secrets: never log them.
func (u Upstream) SetHeaders() []Header { return u.setHeaders }

// TLSFiles returns the tls block's CA, certificate and key files resolved
// against the config file's directory ("" for a file not given).
func (u Upstream) TLSFiles() (ca, cert, key string) {
	return u.resolve(u.TLS.CAFile), u.resolve(u.TLS.CertFile), u.resolve(u.TLS.KeyFile)
}

// TLSMinVersion is tls.minVersion as a crypto/tls version.
func (t UpstreamTLS) TLSMinVersion() uint16 {
	if t.MinVersion == "1.3" {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// Files lists the files an upstream reads (tls files, headers.set
// files), resolved, for reload polling.
func (u Upstream) Files() []string {
	var out []string
	ca, cert, key := u.TLSFiles()
	for _, f := range []string{ca, cert, key} {
		if f != "" {
			out = append(out, f)
		}
	}
	for _, v := range u.Headers.Set {
		if p, ok := strings.CutPrefix(v, "${file:"); ok && strings.HasSuffix(p, "}") {
			out = append(out, u.resolve(strings.TrimSuffix(p, "}")))
		}
	}
	sort.Strings(out)
	return out
}

// UpstreamFiles lists the files every upstream reads, for reload polling.
func (c *Config) UpstreamFiles() []string {
	var out []string
	for _, u := range c.Upstreams {
		out = append(out, u.Files()...)
	}
	return out
}

func (u Upstream) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || u.dir == "" {
		return p
	}
	return filepath.Join(u.dir, p)
}

// Names bidguard never takes from headers.set: hop-by-hop (RFC 9110
// §7.6.1 and the proxy ones) and the headers it writes itself.
var (
	hopByHop = []string{"connection", "proxy-connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate"}
	ownNames = []string{"host", "content-length", "content-type", "content-encoding", "accept-encoding", "user-agent", "expect", "x-forwarded-for"}
)

// HopByHop lists the hop-by-hop header names, lower case.
func HopByHop() []string { return hopByHop }

// OwnHeaders lists the headers bidguard writes itself, lower case; none
// is taken from the exchange or headers.set.
func OwnHeaders() []string { return ownNames }

// validateUpstreamKeys checks an upstream's headers, tls, breaker and
// compressAbove keys (p names it) and resolves headers.set.
func (c *Config) validateUpstreamKeys(v *problems, p string, i int, tlsURL bool) {
	u := &c.Upstreams[i]
	u.dir = filepath.Dir(v.name)
	u.setHeaders = validateHeaders(v, p+".headers", *u)
	validateTLS(v, p+".tls", *u, tlsURL)
	b := u.Breaker
	if b.BreakerFailures() < 0 {
		v.bad("%s.breaker.failures: must be >= 0 (0: no breaker)", p)
	}
	if b.BreakerOpenMs() <= 0 {
		v.bad("%s.breaker.openMs: must be > 0", p)
	}
	if b.BreakerSuccesses() <= 0 {
		v.bad("%s.breaker.successes: must be > 0", p)
	}
	if u.CompressAbove < 0 {
		v.bad("%s.compressAbove: must be >= 0 (0: never)", p)
	}
}

// validateHeaders checks the headers block and returns headers.set
// resolved. An error names the key, never a resolved value.
func validateHeaders(v *problems, p string, u Upstream) []Header {
	h := u.Headers
	if h.MaxHeaders() <= 0 {
		v.bad("%s.maxCount: must be > 0", p)
	}
	if h.MaxHeaderBytes() <= 0 {
		v.bad("%s.maxBytes: must be > 0", p)
	}
	reserved := map[string]bool{}
	for _, n := range append(append([]string{}, hopByHop...), ownNames...) {
		reserved[n] = true
	}
	removed := map[string]bool{}
	for _, n := range h.Remove {
		if !isHeaderName(n) {
			v.bad("%s.remove: %q is not a header name", p, n)
		}
		removed[strings.ToLower(n)] = true
	}
	// In name order, so that the errors read the same on every load and
	// of two names alike but for case the later is the one given twice.
	names := make([]string, 0, len(h.Set))
	for n := range h.Set {
		names = append(names, n)
	}
	sort.Strings(names)
	set := make([]Header, 0, len(h.Set))
	seen := map[string]bool{}
	for _, n := range names {
		raw := h.Set[n]
		lower := strings.ToLower(n)
		switch {
		case !isHeaderName(n):
			v.bad("%s.set: %q is not a header name", p, n)
			continue
		case reserved[lower]:
			v.bad("%s.set: %q is written by bidguard or hop-by-hop", p, n)
			continue
		case removed[lower]:
			v.bad("%s.set: %q is also in remove", p, n)
			continue
		case seen[lower]:
			v.bad("%s.set: %q is given twice (names are case-insensitive)", p, n)
			continue
		}
		seen[lower] = true
		val, err := u.headerValue(raw)
		if err != nil {
			v.bad("%s.set.%s: %v", p, n, err)
			continue
		}
		set = append(set, Header{Name: n, Value: val})
	}
	return set
}

var errBadValue = errors.New("the value has a control character or non-ASCII byte")

// headerValue resolves a headers.set value: ${env:NAME}, ${file:PATH} or
// fixed text. Errors never quote the value.
func (u Upstream) headerValue(raw string) (string, error) {
	val := raw
	if ref, ok := strings.CutPrefix(raw, "${"); ok && strings.HasSuffix(ref, "}") {
		ref = strings.TrimSuffix(ref, "}")
		switch {
		case strings.HasPrefix(ref, "env:"):
			name := strings.TrimPrefix(ref, "env:")
			var set bool
			if val, set = os.LookupEnv(name); !set || name == "" {
				return "", fmt.Errorf("environment variable %q is not set", name)
			}
		case strings.HasPrefix(ref, "file:"):
			path := u.resolve(strings.TrimPrefix(ref, "file:"))
			b, err := os.ReadFile(path)
			if err != nil {
				return "", err
			}
			val = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		default:
			return "", fmt.Errorf("%q is neither ${env:NAME} nor ${file:PATH}", "${"+strings.SplitN(ref, ":", 2)[0]+":...}")
		}
	}
	for i := 0; i < len(val); i++ {
		if b := val[i]; (b < ' ' && b != '\t') || b > '~' {
			return "", errBadValue
		}
	}
	return val, nil
}

// isHeaderName reports whether n is an HTTP field name (RFC 9110 token).
func isHeaderName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		b := n[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0) {
			return false
		}
	}
	return true
}

// validateTLS checks the tls block of an upstream whose URL is https
// (tlsURL) or not, and reads its files once so that a bad file is a load
// error.
func validateTLS(v *problems, p string, u Upstream, tlsURL bool) {
	t := u.TLS
	if t == (UpstreamTLS{}) {
		return
	}
	if !tlsURL {
		v.bad("%s: only for an https:// url", p)
		return
	}
	if t.MinVersion != "" && t.MinVersion != "1.2" && t.MinVersion != "1.3" {
		v.bad("%s.minVersion: %q is not 1.2 or 1.3", p, t.MinVersion)
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		v.bad("%s: certFile and keyFile go together", p)
	}
	if t.ServerName != "" && strings.ContainsAny(t.ServerName, " /:") {
		v.bad("%s.serverName: %q is not a host name", p, t.ServerName)
	}
	ca, cert, key := u.TLSFiles()
	if ca != "" {
		if _, err := LoadCAFile(ca); err != nil {
			v.bad("%s.caFile: %v", p, err)
		}
	}
	if cert != "" && key != "" {
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			v.bad("%s.certFile: %v", p, err)
		}
	}
}

// LoadCAFile reads a PEM file of CA certificates into a pool.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}
