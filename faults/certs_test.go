package faults

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testcerts"
)

// bidderName is the name the TLS fake bidders' certificates are issued
// for; bidguard reaches them at 127.0.0.1 with tls.serverName set to it.
const bidderName = "bidder.test"

// tlsBidder is an HTTPS fake bidder (net/http) whose certificate can be
// swapped while it serves; it records the serial of every client
// certificate it verified.
type tlsBidder struct {
	*httptest.Server
	url   string // https://127.0.0.1:port/bid
	certs *testcerts.Server
	calls atomic.Int64
}

// newTLSBidder serves h over TLS with cert; clientCA, when not nil, is
// required to have signed the client's certificate; configure (optional)
// changes the server before it starts. Session tickets are off: every
// handshake shows the client's certificate.
func newTLSBidder(t testing.TB, cert testcerts.Leaf, clientCA *testcerts.CA, h func(w http.ResponseWriter, r *http.Request, body []byte), configure ...func(*http.Server)) *tlsBidder {
	t.Helper()
	b := &tlsBidder{certs: testcerts.NewServer(cert)}
	cfg := b.certs.Config()
	cfg.SessionTicketsDisabled = true
	cfg.NextProtos = []string{"http/1.1"}
	if clientCA != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCA.Pool()
	}
	b.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.calls.Add(1)
		h(w, r, body)
	}))
	b.Listener = tls.NewListener(b.Listener, cfg)
	for _, f := range configure {
		f(b.Config)
	}
	b.Start()
	b.url = "https://" + b.Listener.Addr().String() + "/bid"
	t.Cleanup(b.Close)
	return b
}

// stallingListener accepts TCP connections and never writes a byte: a
// TLS handshake against it stalls. Connections close when the test ends.
func stallingListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held sync.Map
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Store(c, true)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		held.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
	})
	return "https://" + ln.Addr().String() + "/bid"
}

// upstreamYAML is an upstreams block routing /bid to url with more flow
// keys (", tls: {...}") for procOpts.extra (procOpts.upstream left empty).
func upstreamYAML(url, keys string) string {
	return "upstreams:\n  - {name: dsp, url: \"" + url + "\", path: /bid" + keys + "}\n"
}
