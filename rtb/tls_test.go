package rtb

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testbidder"
	"github.com/bidguard/bidguard/internal/testcerts"
)

// tlsBidder is a keepAliveBidder over HTTPS whose certificate can be
// swapped while it serves; it records the serial of each client
// certificate it verified.
type tlsBidder struct {
	*keepAliveBidder
	*testcerts.Server
}

// newTLSBidder starts the bidder; tune changes its TLS configuration,
// configure (optional) the keepAliveBidder before it starts.
func newTLSBidder(t *testing.T, cert testcerts.Leaf, tune func(*tls.Config), configure ...func(*keepAliveBidder)) *tlsBidder {
	tb := &tlsBidder{Server: testcerts.NewServer(cert)}
	cfg := tb.Config()
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
	ca, other, clientCA := testcerts.NewCA(t, "bidders"), testcerts.NewCA(t, "untrusted"), testcerts.NewCA(t, "exchange clients")
	caFile := testcerts.WriteFile(t, dir, "ca.pem", ca.PEM)
	client := clientCA.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := client.WriteFiles(t, dir, "client")
	base := fmt.Sprintf("caFile: %q, serverName: %s", caFile, bidderName)
	withClient := fmt.Sprintf("%s, certFile: %q, keyFile: %q", base, certFile, keyFile)
	requireClient := func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = x509.NewCertPool()
		c.ClientCAs.AddCert(clientCA.Cert)
	}
	now := time.Now().Add(-time.Hour)
	f := func(name string, server testcerts.Leaf, tune func(*tls.Config), tlsKeys string, wantBid bool) {
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
	f("private CA", ca.Issue(t, bidderName, now, false), nil, base, true)
	f("client certificate required and given", ca.Issue(t, bidderName, now, false), requireClient, withClient, true)
	f("expired", ca.Issue(t, bidderName, now.Add(-48*time.Hour), false), nil, base, false)
	f("wrong name", ca.Issue(t, "other.test", now, false), nil, base, false)
	f("untrusted CA", other.Issue(t, bidderName, now, false), nil, base, false)
	f("system roots do not know a private CA", ca.Issue(t, bidderName, now, false), nil, "serverName: "+bidderName, false)
	f("client certificate required, none given (TLS 1.3: the alert follows the handshake)", ca.Issue(t, bidderName, now, false), requireClient, base, false)
	f("client certificate required, none given (TLS 1.2)", ca.Issue(t, bidderName, now, false),
		func(c *tls.Config) { requireClient(c); c.MaxVersion = tls.VersionTLS12 }, base, false)
	f("minVersion 1.3 against a TLS 1.2 bidder", ca.Issue(t, bidderName, now, false),
		func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, base+`, minVersion: "1.3"`, false)
}

// TestTLSPooled: over a pooled https upstream, N auctions paced so the
// connection rests make one handshake in all, not one per request; a new
// connection after the bidder restarted resumes the session.
func TestTLSPooled(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "bidders")
	b := newTLSBidder(t, ca.Issue(t, bidderName, time.Now().Add(-time.Hour), false), nil)
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", testcerts.WriteFile(t, dir, "ca.pem", ca.PEM), bidderName)
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
	ca1, ca2, clientCA := testcerts.NewCA(t, "bidders 1"), testcerts.NewCA(t, "bidders 2"), testcerts.NewCA(t, "clients")
	caFile := testcerts.WriteFile(t, dir, "ca.pem", ca1.PEM)
	c1 := clientCA.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := c1.WriteFiles(t, dir, "client")
	b := newTLSBidder(t, ca1.Issue(t, bidderName, time.Now().Add(-time.Hour), false), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = x509.NewCertPool()
		c.ClientCAs.AddCert(clientCA.Cert)
		c.SessionTicketsDisabled = true // a resumed session would show no certificate
	})
	tlsKeys := fmt.Sprintf("caFile: %q, certFile: %q, keyFile: %q, serverName: %s", caFile, certFile, keyFile, bidderName)
	// idleTimeoutMs: 0: a new connection, so a handshake, per auction.
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ", idleTimeoutMs: 0"), nil))
	sc.auction("/bid")

	// The bidder moves to a certificate of CA 2: refused until the CA file
	// says so.
	next := ca2.Issue(t, bidderName, time.Now().Add(-time.Hour), false)
	b.SetCert(next)
	require.Equal(t, 204, sc.post("/bid", requestWithID(t, "r")).status)
	require.EqualValues(t, 1, sc.metric(`bidguard_upstream_errors_total{upstream="dsp",kind="tls"}`))
	testcerts.WriteFile(t, dir, "ca.pem", append(append([]byte{}, ca1.PEM...), ca2.PEM...))
	sc.auction("/bid")

	// bidguard's client certificate is replaced (certificate, then key).
	c2 := clientCA.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	testcerts.WriteFile(t, dir, "client.pem", c2.CertPEM)
	sc.auction("/bid") // the pair does not match yet: the previous one is kept
	testcerts.WriteFile(t, dir, "client.key", c2.KeyPEM)
	sc.auction("/bid")
	serials := b.ClientSerials()
	require.Equal(t, []int64{c1.Serial, c1.Serial, c1.Serial, c2.Serial}, serials[len(serials)-4:])
}

// TestTLSStaleAndSlowHandshake: a TLS connection the bidder closed while
// idle is found by the probe and replaced (no auction lost, one handshake
// per connection); a bidder that accepts TCP but never completes the
// handshake is a timeout within the request's budget, answered 204.
func TestTLSStaleAndSlowHandshake(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "bidders")
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", testcerts.WriteFile(t, dir, "ca.pem", ca.PEM), bidderName)

	b := newTLSBidder(t, ca.Issue(t, bidderName, time.Now().Add(-time.Hour), false), nil,
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
	ca1, ca2 := testcerts.NewCA(t, "bidders 1"), testcerts.NewCA(t, "bidders 2")
	caFile := testcerts.WriteFile(t, dir, "ca.pem", ca1.PEM)
	b := newTLSBidder(t, ca1.Issue(t, bidderName, time.Now().Add(-time.Hour), false), func(c *tls.Config) {
		c.SessionTicketsDisabled = true // a resumed session verifies no certificate
	})
	tlsKeys := fmt.Sprintf("caFile: %q, serverName: %s", caFile, bidderName)
	sc := startSidecar(t, compile(t, tlsConfig(b.keepAliveBidder, tlsKeys, ", idleTimeoutMs: 0"), nil))
	sc.auction("/bid")

	b.SetCert(ca2.Issue(t, bidderName, time.Now().Add(-time.Hour), false))
	require.Equal(t, 204, sc.post("/bid", requestWithID(t, "r")).status)
	testcerts.WriteFile(t, dir, "ca.pem", append(append([]byte{}, ca1.PEM...), ca2.PEM...))
	sc.auction("/bid")
}
