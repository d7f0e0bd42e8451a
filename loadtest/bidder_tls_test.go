package main

import (
	"bytes"
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
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pemCert makes a certificate for 127.0.0.1 signed by parent (self-signed
// CA when parent is nil) and returns it with its key and PEM files.
func pemCert(t *testing.T, parent *tls.Certificate, ca bool, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "loadtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	}
	signer, signKey := tmpl, any(key)
	if parent != nil {
		signer, signKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return pair, certPEM, keyPEM
}

func TestBidderTLSFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	ca, caPEM, _ := pemCert(t, nil, true, 0)
	_, srvPEM, srvKey := pemCert(t, &ca, false, x509.ExtKeyUsageServerAuth)
	cert, key, caFile := write("server.pem", srvPEM), write("server.key", srvKey), write("ca.pem", caPEM)

	f := func(o bidderOptions, wantErr string) *tls.Config {
		t.Helper()
		cfg, err := bidderTLS(o)
		if wantErr != "" {
			require.ErrorContains(t, err, wantErr)
			return nil
		}
		require.NoError(t, err)
		return cfg
	}
	require.Nil(t, f(bidderOptions{}, ""), "no TLS without -tls-listen")
	f(bidderOptions{tlsCert: cert, tlsKey: key}, "need -tls-listen")
	f(bidderOptions{tlsClientCA: caFile}, "need -tls-listen")
	f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert}, "needs -tls-cert and -tls-key")
	f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert, tlsKey: caFile}, "-tls-cert")
	f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert, tlsKey: key, tlsClientCA: filepath.Join(dir, "none.pem")}, "-tls-client-ca")
	f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert, tlsKey: key, tlsClientCA: key}, "no PEM certificate")
	cfg := f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert, tlsKey: key}, "")
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)
	cfg = f(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: cert, tlsKey: key, tlsClientCA: caFile}, "")
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)

	var stderr bytes.Buffer
	require.Equal(t, 2, runBidder([]string{"-tls-cert", cert}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "need -tls-listen")
	stderr.Reset()
	require.Equal(t, 2, runBidder([]string{"-listen", "127.0.0.1:0", "-tls-listen", "10.1.2.3:443", "-tls-cert", cert, "-tls-key", key}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "10.1.2.3")
}

// TestBidderTLSServes: with -tls-client-ca the bidder answers bid
// requests over TLS to a client with a certificate of that CA and refuses
// one without.
func TestBidderTLSServes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	ca, caPEM, _ := pemCert(t, nil, true, 0)
	_, srvPEM, srvKey := pemCert(t, &ca, false, x509.ExtKeyUsageServerAuth)
	client, _, _ := pemCert(t, &ca, false, x509.ExtKeyUsageClientAuth)
	cfg, err := bidderTLS(bidderOptions{tlsListen: "127.0.0.1:0", tlsCert: write("s.pem", srvPEM), tlsKey: write("s.key", srvKey), tlsClientCA: write("ca.pem", caPEM)})
	require.NoError(t, err)
	bd, err := newBidder(bidderOptions{latency: "0", seats: 2, priceMedian: 1.5, kinds: "default"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := bd.server(time.Minute)
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	post := func(certs []tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		defer c.CloseIdleConnections()
		resp, err := c.Post("https://"+ln.Addr().String()+"/bid", "application/json",
			bytes.NewReader([]byte(`{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"tmax":200}`)))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	status, err := post([]tls.Certificate{client})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	_, err = post(nil)
	require.Error(t, err, "no client certificate: refused")
	require.EqualValues(t, 1, bd.requests.Load())
}
