package rtb

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/bidguard/bidguard/config"
)

// tlsError is a failed TLS handshake: kind tls.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "upstream: tls handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// tlsSource is an https upstream's client TLS configuration: roots (the
// CA file's, else the system's), the client certificate, the server name
// and the minimum version, with one session cache so that new
// connections resume sessions. Before each handshake (new connections
// only) the files are checked: when one changed (modification time or
// size) they are read again and the new configuration is used from that
// handshake on; a file that cannot be read or parsed keeps the previous
// configuration and is logged once per change.
type tlsSource struct {
	ca, cert, key string // resolved paths ("": not given)
	serverName    string
	minVersion    uint16
	roots         *x509.CertPool // without a CA file; nil: the system's
	log           *slog.Logger

	mu     sync.Mutex
	cfg    *tls.Config
	stamps [3]fileStamp // of ca, cert, key as last read
	failed [3]fileStamp // of the files whose read failed last (logged once)
}

// fileStamp is what a file looked like: enough to see it replaced.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// newTLSSource reads u's tls files (a failure is an install error).
func newTLSSource(u config.Upstream, t config.UpstreamTarget, roots *x509.CertPool, log *slog.Logger) (*tlsSource, error) {
	s := &tlsSource{serverName: t.ServerName, minVersion: u.TLS.TLSMinVersion(), roots: roots, log: log}
	s.ca, s.cert, s.key = u.TLSFiles()
	if u.TLS.ServerName != "" {
		s.serverName = u.TLS.ServerName
	}
	stamps := s.stampAll()
	cfg, err := s.build()
	if err != nil {
		return nil, err
	}
	s.cfg, s.stamps = cfg, stamps
	return s, nil
}

func (s *tlsSource) stampAll() [3]fileStamp {
	return [3]fileStamp{stampOf(s.ca), stampOf(s.cert), stampOf(s.key)}
}

// build reads the files into a new configuration with a new session
// cache: sessions of the old roots or client certificate are not resumed.
func (s *tlsSource) build() (*tls.Config, error) {
	cfg := &tls.Config{
		ServerName:         s.serverName,
		MinVersion:         s.minVersion,
		RootCAs:            s.roots,
		ClientSessionCache: tls.NewLRUClientSessionCache(0),
	}
	if s.ca != "" {
		pool, err := config.LoadCAFile(s.ca)
		if err != nil {
			return nil, fmt.Errorf("tls.caFile: %w", err)
		}
		cfg.RootCAs = pool
	}
	if s.cert != "" {
		pair, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			return nil, fmt.Errorf("tls.certFile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// config returns the configuration for a new connection's handshake,
// read again first if a file changed.
func (s *tlsSource) config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ca == "" && s.cert == "" {
		return s.cfg
	}
	now := s.stampAll()
	if now == s.stamps || now == s.failed {
		return s.cfg
	}
	cfg, err := s.build()
	if err != nil {
		s.failed = now
		s.log.Warn("upstream tls files not reloaded: keeping the previous ones", "error", err)
		return s.cfg
	}
	s.cfg, s.stamps, s.failed = cfg, now, [3]fileStamp{}
	return cfg
}

// handshake runs the client handshake over raw by deadline, measured in
// m; a failure that is not the deadline's is a tlsError.
func (s *tlsSource) handshake(raw net.Conn, tc *tls.Conn, deadline time.Time, m *forwardMeters) error {
	if err := raw.SetDeadline(deadline); err != nil {
		return err
	}
	start := time.Now()
	err := tc.Handshake()
	if m != nil {
		m.handshake.observe(time.Since(start))
	}
	if err != nil {
		if isTimeout(err) {
			return err
		}
		return &tlsError{err}
	}
	if m != nil && tc.ConnectionState().DidResume {
		m.resumed.Inc()
	}
	return nil
}

// isTLSError reports a failed handshake.
func isTLSError(err error) bool {
	var t *tlsError
	return errors.As(err, &t)
}
