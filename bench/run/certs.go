package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// tlsFiles are the PEM files of the TLS upstream row: a private CA, the
// fake bidder's certificate for 127.0.0.1 and bidguard's client
// certificate, both signed by it.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// bidderFlags are the fake bidder's flags serving TLS on addr with these
// files, requiring a client certificate of the CA.
func (f tlsFiles) bidderFlags(addr string) []string {
	return []string{"-tls-listen", addr, "-tls-cert", f.serverCert, "-tls-key", f.serverKey, "-tls-client-ca", f.ca}
}

// writeTLSFiles makes the CA and the two certificates (valid for a day,
// ECDSA P-256) and writes them into dir.
func writeTLSFiles(dir string) (tlsFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tlsFiles{}, err
	}
	f := tlsFiles{ca: filepath.Join(dir, "ca.pem"),
		serverCert: filepath.Join(dir, "bidder.pem"), serverKey: filepath.Join(dir, "bidder.key"),
		clientCert: filepath.Join(dir, "bidguard.pem"), clientKey: filepath.Join(dir, "bidguard.key")}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tlsFiles{}, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchrun private CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tlsFiles{}, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return tlsFiles{}, err
	}
	if err := writePEM(f.ca, "CERTIFICATE", caDER); err != nil {
		return tlsFiles{}, err
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "EC PRIVATE KEY", kb)
	}
	if err := leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, f.serverCert, f.serverKey); err != nil {
		return tlsFiles{}, fmt.Errorf("bidder certificate: %w", err)
	}
	if err := leaf(3, "bidguard", x509.ExtKeyUsageClientAuth, f.clientCert, f.clientKey); err != nil {
		return tlsFiles{}, fmt.Errorf("client certificate: %w", err)
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
