package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWriteTLSFiles: the bidder's certificate is valid for 127.0.0.1
// under the private CA, bidguard's client certificate for client auth
// under it, and a server requiring client certificates of the CA accepts a
// client that presents it and refuses one that does not.
func TestWriteTLSFiles(t *testing.T) {
	files, err := writeTLSFiles(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, []string{"-tls-listen", "127.0.0.1:9", "-tls-cert", files.serverCert, "-tls-key", files.serverKey, "-tls-client-ca", files.ca},
		files.bidderFlags("127.0.0.1:9"))
	caPEM, err := os.ReadFile(files.ca)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	server, err := tls.LoadX509KeyPair(files.serverCert, files.serverKey)
	require.NoError(t, err)
	client, err := tls.LoadX509KeyPair(files.clientCert, files.clientKey)
	require.NoError(t, err)

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	dial := func(certs []tls.Certificate) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: certs})
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err == nil && string(b) != "ok" {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	require.NoError(t, dial([]tls.Certificate{client}), "the client certificate is accepted")
	require.Error(t, dial(nil), "no client certificate: refused (TLS 1.3: on the first read)")
}

func TestHandshakeNote(t *testing.T) {
	metrics := `# TYPE bidguard_upstream_tls_handshake_seconds histogram
bidguard_upstream_tls_handshake_seconds_bucket{upstream="bench",le="+Inf"} 24
bidguard_upstream_tls_handshake_seconds_count{upstream="bench"} 24
bidguard_upstream_duration_seconds_count{upstream="bench"} 120000
bidguard_upstream_tls_resumed_total{upstream="bench"} 2
`
	require.Equal(t, "bidguard, TLS upstream: 24 TLS handshakes (2 resumed) for 120000 bidder calls over its 12 attacks, warmups included (`bidguard_upstream_tls_handshake_seconds_count`): "+
		"5000 calls per handshake, 2 handshakes per attack (its connections are opened again after resting past the upstream's idleTimeoutMs while the other targets run).",
		handshakeNote(metrics, 12))
	require.Contains(t, handshakeNote("bidguard_upstream_tls_handshake_seconds_count{upstream=\"bench\"} 0\nbidguard_upstream_duration_seconds_count{upstream=\"bench\"} 5\n", 12), ": no handshake.")
	require.Equal(t, "bidguard, TLS upstream: its /metrics has no TLS handshake or call count for the upstream.", handshakeNote("go_goroutines 7\n", 12))
	v, ok := metricValue("a 1\nb{x=\"y\"} 2.5\n", `b{x="y"}`)
	require.True(t, ok)
	require.Equal(t, 2.5, v)
}

// TestRenderReportTLSRow: the TLS upstream row is a target like the
// others, and each mode gets a line comparing it with plain bidguard.
func TestRenderReportTLSRow(t *testing.T) {
	r := results{}
	r.add("closed", tFast, sum(30000, 400, 1000, 10, 10))
	r.add("closed", tBidguard, sum(10000, 1000, 2000, 10, 10))
	r.add("closed", tBidguardTLS, sum(8000, 1250, 3000, 10, 10))
	r.add("open-2000", tBidguard, sum(2000, 400, 1000, 10, 10))
	r.add("open-2000", tBidguardTLS, sum(2000, 500, 1500, 10, 10))
	o := compareOptions{rounds: 1, duration: time.Second, connections: 64}
	modes, err := parseModes("2000")
	require.NoError(t, err)
	md := renderReport(machine{}, "make compare", o, modes, []string{tFast, tBidguard, tBidguardTLS}, r, []string{"handshake note"})
	require.Contains(t, md, "| bidguard, TLS upstream | 8000 | 125.0 | 3.12× | n/a | 0.27× | 1.250 | 3.000 | 3.000 | 0.00% |")
	require.Contains(t, md, "bidguard, TLS upstream against bidguard: 0.80× the throughput, 1.25× the CPU per request.")
	require.Contains(t, md, "bidguard, TLS upstream against bidguard: p50 1.25×, p99 1.50×.")
	require.Contains(t, md, "handshake note")

	delete(r["closed"], tBidguardTLS)
	delete(r["open-2000"], tBidguardTLS)
	md = renderReport(machine{}, "make compare", o, modes, []string{tFast, tBidguard, tBidguardTLS}, r, nil)
	require.NotContains(t, md, "TLS upstream", "no TLS line without the TLS row")
	require.Equal(t, "bidguard-TLS-upstream", fileName(tBidguardTLS))
}
