// Package testcerts makes the certificates TLS tests need, with
// crypto/x509 in the test: a private CA, server and client leaves signed
// by it (an expired or wrongly named one is a leaf issued with an old
// notBefore or another name), and their PEM files written into a test's
// directory the way a certificate rotation replaces them.
//
// Test code only: no production package may import it (cmd/bidguard's
// dependency test checks).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serial numbers every certificate of the test binary apart, so a
// server can tell which client certificate it verified.
var serial atomic.Int64

// CA is a certificate authority made in the test, valid from an hour ago
// for a day.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, PEM-encoded
}

// NewCA makes a self-signed CA whose common name is name.
func NewCA(t testing.TB, name string) *CA {
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
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a cert pool of the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf is an issued certificate with its PEM files' contents.
type Leaf struct {
	Pair            tls.Certificate
	Serial          int64
	CertPEM, KeyPEM []byte
}

// Issue signs a leaf for dnsName, valid from notBefore for a day, for a
// server (client false) or a client. A notBefore more than a day ago
// makes it expired.
func (ca *CA) Issue(t testing.TB, dnsName string, notBefore time.Time, client bool) Leaf {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	l := Leaf{Serial: n, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}
	l.Pair, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	require.NoError(t, err)
	return l
}

// WriteFile replaces dir/name with data by a rename, as a certificate
// rotation does, and returns its path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p+".tmp", data, 0o600))
	require.NoError(t, os.Rename(p+".tmp", p))
	return p
}

// WriteFiles writes the leaf's certificate and key to dir/name.pem and
// dir/name.key (each by WriteFile) and returns their paths.
func (l Leaf) WriteFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	return WriteFile(t, dir, name+".pem", l.CertPEM), WriteFile(t, dir, name+".key", l.KeyPEM)
}

// Server is a TLS server's certificate that can be swapped while it
// serves, with the serial of every client certificate it was shown.
type Server struct {
	cert atomic.Pointer[tls.Certificate]

	mu      sync.Mutex
	clients []int64
}

// NewServer serves l until SetCert swaps it.
func NewServer(l Leaf) *Server {
	s := &Server{}
	s.SetCert(l)
	return s
}

// SetCert makes new handshakes get l.
func (s *Server) SetCert(l Leaf) { s.cert.Store(&l.Pair) }

// Config is a new server configuration that presents the current
// certificate and records the client's; the caller adds client
// authentication, versions and the rest.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				s.mu.Lock()
				s.clients = append(s.clients, cs.PeerCertificates[0].SerialNumber.Int64())
				s.mu.Unlock()
			}
			return nil
		},
	}
}

// ClientSerials are the serials of the client certificates seen, in
// handshake order.
func (s *Server) ClientSerials() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.clients...)
}
