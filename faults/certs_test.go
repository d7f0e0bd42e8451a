package faults

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bidderName is the name the TLS fake bidders' certificates are issued
// for; bidguard reaches them at 127.0.0.1 with tls.serverName set to it.
const bidderName = "bidder.test"

// certAuthority is a CA made in the test with crypto/x509.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var certSerial atomic.Int64

func newCA(t testing.TB, name string) *certAuthority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(certSerial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &certAuthority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// pool is a cert pool of the CA alone.
func (ca *certAuthority) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leaf is an issued certificate and its PEM files' contents.
type leaf struct {
	pair            tls.Certificate
	serial          int64
	certPEM, keyPEM []byte
}

// issue signs a day-long leaf for name from notBefore, for a server or a
// client.
func (ca *certAuthority) issue(t testing.TB, name string, notBefore time.Time, client bool) leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	n := certSerial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	l := leaf{serial: n, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}
	l.pair, err = tls.X509KeyPair(l.certPEM, l.keyPEM)
	require.NoError(t, err)
	return l
}

// replaceFile writes data to dir/name by a rename, as a certificate
// rotation does, and returns the path.
func replaceFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p+".tmp", data, 0o600))
	require.NoError(t, os.Rename(p+".tmp", p))
	return p
}

// tlsBidder is an HTTPS fake bidder (net/http) whose certificate can be
// swapped while it serves; it records the serial of every client
// certificate it verified.
type tlsBidder struct {
	*httptest.Server
	url   string // https://127.0.0.1:port/bid
	cert  atomic.Pointer[tls.Certificate]
	calls atomic.Int64

	mu      sync.Mutex
	clients []int64
}

// newTLSBidder serves h over TLS with cert; clientCA, when not nil, is
// required to have signed the client's certificate; configure (optional)
// changes the server before it starts. Session tickets are off: every
// handshake shows the client's certificate.
func newTLSBidder(t testing.TB, cert leaf, clientCA *certAuthority, h func(w http.ResponseWriter, r *http.Request, body []byte), configure ...func(*http.Server)) *tlsBidder {
	t.Helper()
	b := &tlsBidder{}
	b.cert.Store(&cert.pair)
	cfg := &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return b.cert.Load(), nil },
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				b.mu.Lock()
				b.clients = append(b.clients, cs.PeerCertificates[0].SerialNumber.Int64())
				b.mu.Unlock()
			}
			return nil
		},
		SessionTicketsDisabled: true,
		NextProtos:             []string{"http/1.1"},
	}
	if clientCA != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCA.pool()
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

func (b *tlsBidder) clientSerials() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.clients...)
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
