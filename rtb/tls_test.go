package rtb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial atomic.Int64

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issued is a leaf certificate with its PEM files' contents.
type issued struct {
	pair            tls.Certificate
	serial          int64
	certPEM, keyPEM []byte
}

// issue signs a leaf for dnsName valid from notBefore for a day, for a
// server or a client.
func (ca *testCA) issue(t testing.TB, dnsName string, notBefore time.Time, client bool) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	n := serial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	out := issued{serial: n, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}
	out.pair, err = tls.X509KeyPair(out.certPEM, out.keyPEM)
	require.NoError(t, err)
	return out
}

// writeFile replaces dir/name with data by a rename, as a certificate
// rotation would, and returns its path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p+".tmp", data, 0o600))
	require.NoError(t, os.Rename(p+".tmp", p))
	return p
}

// tlsBidder is a keepAliveBidder over HTTPS whose certificate can be
// swapped while it serves; it records the serial of each client
// certificate it verified.
type tlsBidder struct {
	*keepAliveBidder
	cert atomic.Pointer[tls.Certificate]

	mu      sync.Mutex
	clients []int64
}

// newTLSBidder starts the bidder; tune changes its TLS configuration,
// configure (optional) the keepAliveBidder before it starts.
func newTLSBidder(t *testing.T, cert issued, tune func(*tls.Config), configure ...func(*keepAliveBidder)) *tlsBidder {
	tb := &tlsBidder{}
	tb.cert.Store(&cert.pair)
	cfg := &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return tb.cert.Load(), nil },
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				tb.mu.Lock()
				tb.clients = append(tb.clients, cs.PeerCertificates[0].SerialNumber.Int64())
				tb.mu.Unlock()
			}
			return nil
		},
	}
	if tune != nil {
		tune(cfg)
	}
	tb.keepAliveBidder = newKeepAliveBidder(t, func(b *keepAliveBidder) {
		b.tls = cfg
		for _, f := range configure {
			f(b)
		}
	})
	return tb
}

func (tb *tlsBidder) clientSerials() []int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]int64(nil), tb.clients...)
}

// tlsConfig routes /bid to the bidder over https with the tls block's
// keys (a flow mapping's content) and upstream keys extra.
func tlsConfig(b *keepAliveBidder, tlsKeys, extra string) string {
	return fmt.Sprintf("upstreams:\n  - {name: dsp, url: %q, path: /bid, tls: {%s}%s}\npolicy:\n  gates: [{gate: impidMatch}, {gate: bidSanity}]\n", b.url("/bid"), tlsKeys, extra)
}

const bidderName = "bidder.test"

// TestTLSUpstream: a private CA, a client certificate, and each way a
// handshake fails: every failure is kind tls, answered 204, and the
// bidder's good answers pass.
func TestTLSUpstream(t *testing.T) {
	dir := t.TempDir()
	ca, other, clientCA := newTestCA(t, "bidders"), newTestCA(t, "untrusted"), newTestCA(t, "exchange clients")
	caFile := writeFile(t, dir, "ca.pem", ca.pem)
	client := clientCA.issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := writeFile(t, dir, "client.pem", client.certPEM), writeFile(t, dir, "client.key", client.keyPEM)
	base := fmt.Sprintf("caFile: %q, serverName: %s", caFile, bidderName)
	withClient := fmt.Sprintf("%s, certFile: %q, keyFile: %q", base, certFile, keyFile)
	requireClient := func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = x509.NewCertPool()
		c.ClientCAs.AddCert(clientCA.cert)
	}
	now := time.Now().Add(-time.Hour)
	f := func(name string, server issued, tune func(*tls.Config), tlsKeys string, wantBid bool) {
		t.Run(name, func(t *testing.T) {
			b := newTLSBidder(t, server, tune)
			sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ""), nil))
			if wantBid {
				sc.auction("/bid")
				return
			}
			a := sc.post("/bid", requestWithID(t, "tls-fail"))
			require.Equal(t, 204, a.status)
			require.EqualValues(t, 1, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="tls"}`), sc.failureCounts())
			require.Zero(t, b.timesSeen("tls-fail"), "nothing reached the bidder")
		})
	}
	f("private CA", ca.issue(t, bidderName, now, false), nil, base, true)
	f("client certificate required and given", ca.issue(t, bidderName, now, false), requireClient, withClient, true)
	f("expired", ca.issue(t, bidderName, now.Add(-48*time.Hour), false), nil, base, false)
	f("wrong name", ca.issue(t, "other.test", now, false), nil, base, false)
	f("untrusted CA", other.issue(t, bidderName, now, false), nil, base, false)
	f("system roots do not know a private CA", ca.issue(t, bidderName, now, false), nil, "serverName: "+bidderName, false)
	f("client certificate required, none given (TLS 1.3: the alert follows the handshake)", ca.issue(t, bidderName, now, false), requireClient, base, false)
	f("client certificate required, none given (TLS 1.2)", ca.issue(t, bidderName, now, false),
		func(c *tls.Config) { requireClient(c); c.MaxVersion = tls.VersionTLS12 }, base, false)
	f("minVersion 1.3 against a TLS 1.2 bidder", ca.issue(t, bidderName, now, false),
		func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, base+`, minVersion: "1.3"`, false)
}

// TestTLSPooled: over a pooled https upstream, N auctions paced so the
// connection rests make one handshake in all, not one per request; a new
// connection after the bidder restarted resumes the session.
func TestTLSPooled(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "bidders")
	b := newTLSBidder(t, ca.issue(t, bidderName, time.Now().Add(-time.Hour), false), nil)
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", writeFile(t, dir, "ca.pem", ca.pem), bidderName)
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ""), nil))
	const n = 100
	for range n {
		sc.auction("/bid")
		time.Sleep(2 * settleTime) // pacing: the connection rests, as between real auctions
	}
	handshakes := sc.metric(`bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`)
	t.Logf("%d auctions: %v handshakes, %d connections", n, handshakes, b.Accepted.Load())
	require.EqualValues(t, b.Accepted.Load(), handshakes, "one handshake per connection")
	require.EqualValues(t, 1, handshakes, "one connection for all")

	// The bidder restarts (same TLS configuration, so the same ticket
	// keys): the probe finds the connection closed, the next one resumes.
	b.Stop()
	b.Restart()
	sc.auction("/bid")
	require.EqualValues(t, 2, sc.metric(`bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`))
	require.EqualValues(t, 1, sc.metric(`bidguard_upstream_tls_resumed_total{upstream="dsp"}`))

	// Back to back, unpaced: a connection is reused once it rested
	// settleTime, so a few connections serve them all.
	for range n {
		sc.auction("/bid")
	}
	more := sc.metric(`bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`) - 2
	t.Logf("%d back-to-back auctions: %v handshakes", n, more)
	require.Less(t, more, float64(n/2))
}

// TestTLSRotation: certificates replaced while serving are used from the
// next handshake on: the bidder's new certificate under a new CA (the CA
// file rewritten), bidguard's new client certificate (its files
// rewritten); a half-written file keeps the previous ones.
func TestTLSRotation(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2, clientCA := newTestCA(t, "bidders 1"), newTestCA(t, "bidders 2"), newTestCA(t, "clients")
	caFile := writeFile(t, dir, "ca.pem", ca1.pem)
	c1 := clientCA.issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := writeFile(t, dir, "client.pem", c1.certPEM), writeFile(t, dir, "client.key", c1.keyPEM)
	b := newTLSBidder(t, ca1.issue(t, bidderName, time.Now().Add(-time.Hour), false), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = x509.NewCertPool()
		c.ClientCAs.AddCert(clientCA.cert)
		c.SessionTicketsDisabled = true // a resumed session would show no certificate
	})
	tlsKeys := fmt.Sprintf("caFile: %q, certFile: %q, keyFile: %q, serverName: %s", caFile, certFile, keyFile, bidderName)
	// idleTimeoutMs: 0: a new connection, so a handshake, per auction.
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ", idleTimeoutMs: 0"), nil))
	sc.auction("/bid")

	// The bidder moves to a certificate of CA 2: refused until the CA file
	// says so.
	next := ca2.issue(t, bidderName, time.Now().Add(-time.Hour), false)
	b.cert.Store(&next.pair)
	require.Equal(t, 204, sc.post("/bid", requestWithID(t, "r")).status)
	require.EqualValues(t, 1, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="tls"}`))
	writeFile(t, dir, "ca.pem", append(append([]byte{}, ca1.pem...), ca2.pem...))
	sc.auction("/bid")

	// bidguard's client certificate is replaced (certificate, then key).
	c2 := clientCA.issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	writeFile(t, dir, "client.pem", c2.certPEM)
	sc.auction("/bid") // the pair does not match yet: the previous one is kept
	writeFile(t, dir, "client.key", c2.keyPEM)
	sc.auction("/bid")
	serials := b.clientSerials()
	require.Equal(t, []int64{c1.serial, c1.serial, c1.serial, c2.serial}, serials[len(serials)-4:])
}

// TestTLSStaleAndSlowHandshake: a TLS connection the bidder closed while
// idle is found by the probe and replaced (no auction lost, one handshake
// per connection); a bidder that accepts TCP but never completes the
// handshake is a timeout within the request's budget, answered 204.
func TestTLSStaleAndSlowHandshake(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "bidders")
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", writeFile(t, dir, "ca.pem", ca.pem), bidderName)

	b := newTLSBidder(t, ca.issue(t, bidderName, time.Now().Add(-time.Hour), false), nil,
		func(b *keepAliveBidder) { b.idleClose = 50 * time.Millisecond })
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ""), nil))
	var ids []string
	for range 3 {
		ids = append(ids, sc.auction("/bid"))
		time.Sleep(150 * time.Millisecond) // a quiet spell past the bidder's idle timeout
	}
	requireEachSeenOnce(t, b.keepAliveBidder, ids)
	require.Positive(t, sc.metric(`bidguard_upstream_conns_closed_total{reason="stale"}`), sc.failureCounts())
	require.EqualValues(t, b.Accepted.Load(), sc.metric(`bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`))

	held := testbidder.Raw(t, func(c *testbidder.Conn) { _, _ = io.Copy(io.Discard, c) }) // never a byte back
	cfg := fmt.Sprintf("upstreams:\n  - {name: dsp, url: \"https://%s/bid\", path: /bid, tls: {%s}}\npolicy:\n  gates: [{gate: impidMatch}]\n", held.Addr, tlsKeys)
	sc2 := startSidecar(t, compile(t, cfg, nil))
	a := sc2.post("/bid", withTmax(t, 100))
	require.Equal(t, 204, a.status)
	require.EqualValues(t, 1, sc2.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="timeout"}`), sc2.failureCounts())
	require.EqualValues(t, 1, sc2.metric(`bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`), "the slow handshake is measured")
}

// TestTLSRotationCAOnly: an upstream that trusts a CA file and presents no
// client certificate reads the CA file again when it changes too.
func TestTLSRotationCAOnly(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := newTestCA(t, "bidders 1"), newTestCA(t, "bidders 2")
	caFile := writeFile(t, dir, "ca.pem", ca1.pem)
	b := newTLSBidder(t, ca1.issue(t, bidderName, time.Now().Add(-time.Hour), false), func(c *tls.Config) {
		c.SessionTicketsDisabled = true // a resumed session verifies no certificate
	})
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", caFile, bidderName)
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ", idleTimeoutMs: 0"), nil))
	sc.auction("/bid")

	next := ca2.issue(t, bidderName, time.Now().Add(-time.Hour), false)
	b.cert.Store(&next.pair)
	require.Equal(t, 204, sc.post("/bid", requestWithID(t, "r")).status)
	writeFile(t, dir, "ca.pem", append(append([]byte{}, ca1.pem...), ca2.pem...))
	sc.auction("/bid")
}
