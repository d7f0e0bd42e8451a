package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testcerts"
)

// TestTLSHandshakeFaults: an https bidder whose handshake fails in each
// way an operator meets (an expired certificate, one for another name,
// one of a CA bidguard does not trust, bidguard's client certificate
// refused) or never completes: every auction is answered 204 by its
// deadline, counted as kind tls (timeout for the stall), logged, and
// nothing reaches the bidder.
func TestTLSHandshakeFaults(t *testing.T) {
	dir := t.TempDir()
	ca, rogue, clientCA := testcerts.NewCA(t, "bidders"), testcerts.NewCA(t, "rogue"), testcerts.NewCA(t, "exchange clients")
	caFile := testcerts.WriteFile(t, dir, "ca.pem", ca.PEM)
	// bidguard's client certificate, signed by a CA the bidder does not know.
	stranger := rogue.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := stranger.WriteFiles(t, dir, "client")
	now := time.Now().Add(-time.Hour)
	never := func(w http.ResponseWriter, r *http.Request, body []byte) { w.WriteHeader(http.StatusNoContent) }
	tlsKeys := fmt.Sprintf(", tls: {caFile: %q, certFile: %q, keyFile: %q, serverName: %s}", caFile, certFile, keyFile, bidderName)
	for _, tc := range []struct {
		id     string
		bidder func(t *testing.T) (url string, calls *atomic.Int64)
		kind   string // the error kind counted
		line   string // the start of the WARN line
	}{
		{"bidder/tls-expired", func(t *testing.T) (string, *atomic.Int64) {
			b := newTLSBidder(t, ca.Issue(t, bidderName, now.Add(-48*time.Hour), false), nil, never)
			return b.url, &b.calls
		}, "tls", "bidder TLS handshake failed"},
		{"bidder/tls-wrong-name", func(t *testing.T) (string, *atomic.Int64) {
			b := newTLSBidder(t, ca.Issue(t, "other.test", now, false), nil, never)
			return b.url, &b.calls
		}, "tls", "bidder TLS handshake failed"},
		{"bidder/tls-untrusted-ca", func(t *testing.T) (string, *atomic.Int64) {
			b := newTLSBidder(t, rogue.Issue(t, bidderName, now, false), nil, never)
			return b.url, &b.calls
		}, "tls", "bidder TLS handshake failed"},
		// Under TLS 1.3 the bidder's refusal is an alert after bidguard's
		// side of the handshake completed: still kind tls.
		{"bidder/tls-client-cert-refused", func(t *testing.T) (string, *atomic.Int64) {
			b := newTLSBidder(t, ca.Issue(t, bidderName, now, false), clientCA, never)
			return b.url, &b.calls
		}, "tls", "bidder TLS handshake failed"},
		{"bidder/tls-handshake-stall", func(t *testing.T) (string, *atomic.Int64) {
			return stallingListener(t), new(atomic.Int64)
		}, "timeout", "bidder timed out"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			scenario(t, tc.id)
			url, calls := tc.bidder(t)
			p := startProc(t, procOpts{extra: upstreamYAML(url, tlsKeys)})
			const n = 3
			for i := range n {
				a := byDeadline(t, p, fmt.Sprint("tls", i))
				require.Equal(t, 204, a.status)
			}
			m := p.metrics()
			require.EqualValues(t, n, metricIn(t, m, `bidguard_upstream_errors_total{upstream="dsp",kind="`+tc.kind+`"}`), "%s", upstreamErrors(m))
			require.Zero(t, calls.Load(), "nothing reached the bidder")
			require.Contains(t, p.stderr.String(), tc.line)
			p.healthy()
		})
	}
}

// upstreamErrors lists the upstream error series of a /metrics text, for
// failure messages.
func upstreamErrors(metrics string) string {
	var out []string
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "bidguard_upstream_errors_total{") && !strings.HasSuffix(line, " 0") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "; ")
}

// TestTLSRotation: under open-model traffic, the bidder's certificate is
// rotated to a new CA (bidguard's CA file first gains the new CA) and
// bidguard's client certificate files are replaced; the bidder closes each
// connection after 20 requests, so new handshakes keep happening. No
// auction fails: every answer is a 200 by its deadline, no handshake
// fails, and the bidder sees the new client certificate from the rotation
// on.
func TestTLSRotation(t *testing.T) {
	slow(t)
	scenario(t, "bidder/tls-rotation")
	dir := t.TempDir()
	ca1, ca2, clientCA := testcerts.NewCA(t, "bidders 1"), testcerts.NewCA(t, "bidders 2"), testcerts.NewCA(t, "exchange clients")
	caFile := testcerts.WriteFile(t, dir, "ca.pem", ca1.PEM)
	c1 := clientCA.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	certFile, keyFile := c1.WriteFiles(t, dir, "client")

	type served struct{}
	b := newTLSBidder(t, ca1.Issue(t, bidderName, time.Now().Add(-time.Hour), false), clientCA,
		func(w http.ResponseWriter, r *http.Request, body []byte) {
			if n := r.Context().Value(served{}).(*atomic.Int64).Add(1); n%20 == 0 {
				w.Header().Set("Connection", "close")
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(bidResponse(requestID(body), true))
		}, func(s *http.Server) {
			s.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, served{}, new(atomic.Int64))
			}
		})
	tlsKeys := fmt.Sprintf(", tls: {caFile: %q, certFile: %q, keyFile: %q, serverName: %s}", caFile, certFile, keyFile, bidderName)
	p := startProc(t, procOpts{extra: upstreamYAML(b.url, tlsKeys)})
	a := byDeadline(t, p, "before")
	require.Equal(t, 200, a.status)

	done := make(chan loadResult, 1)
	go func() {
		done <- runLoad(t, loadSpec{addr: p.addr, conns: 4, rate: 200, dur: 4 * time.Second, tmaxMs: bidderTmaxMs})
	}()
	time.Sleep(time.Second)
	testcerts.WriteFile(t, dir, "ca.pem", append(append([]byte{}, ca1.PEM...), ca2.PEM...))
	time.Sleep(500 * time.Millisecond)
	c2leaf := ca2.Issue(t, bidderName, time.Now().Add(-time.Hour), false)
	b.certs.SetCert(c2leaf) // the rotation instant: new handshakes get CA 2's certificate
	time.Sleep(500 * time.Millisecond)
	c2 := clientCA.Issue(t, "bidguard", time.Now().Add(-time.Hour), true)
	testcerts.WriteFile(t, dir, "client.pem", c2.CertPEM) // the pair does not match until the key follows
	testcerts.WriteFile(t, dir, "client.key", c2.KeyPEM)
	res := <-done

	m := p.metrics()
	handshakes := metricIn(t, m, `bidguard_upstream_tls_handshake_seconds_count{upstream="dsp"}`)
	t.Logf("rotation under load: %s; %v handshakes, %v bidder calls; %s", res, handshakes, b.calls.Load(), upstreamErrors(m))
	require.Positive(t, res.answered)
	require.Zero(t, res.errors, "every request answered")
	require.Zero(t, res.noBids+res.other, "no failed auction")
	require.LessOrEqual(t, res.lateShare(), 0.01, "answers by the deadline (+%v)", deadlineTolerance)
	require.Zero(t, metricIn(t, m, `bidguard_upstream_errors_total{upstream="dsp",kind="tls"}`))
	serials := b.certs.ClientSerials()
	require.Equal(t, c1.Serial, serials[0])
	first := slices.Index(serials, c2.Serial)
	require.Positive(t, first, "the new client certificate is used after the rotation")
	for _, s := range serials[first:] {
		require.Equal(t, c2.Serial, s, "once rotated, only the new client certificate")
	}
	require.Less(t, handshakes, float64(b.calls.Load())/10, "connections are reused: no handshake per request")
	p.healthy()
}
