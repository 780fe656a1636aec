package dockertest

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

// writeCerts makes a throwaway certificate authority and, signed by it, a
// server certificate for addr and a client certificate, in dir: ca.pem,
// cert.pem and key.pem as DOCKER_CERT_PATH names a client's, and
// server-cert.pem and server-key.pem for dockerd. A daemon that listens on
// TCP without --tlsverify is slowed down at start on purpose (15 s in
// Docker 20.10), and a daemon reached over TCP is reached with TLS.
func writeCerts(dir, addr string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ctxcode dockertest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, certFile), "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(filepath.Join(dir, keyFile), "EC PRIVATE KEY", keyDER)
	}
	ip := net.ParseIP(addr)
	if ip == nil {
		return fmt.Errorf("not an IP address: %q", addr)
	}
	if err := leaf(2, "dockerd", x509.ExtKeyUsageServerAuth, []net.IP{ip}, "server-cert.pem", "server-key.pem"); err != nil {
		return err
	}
	return leaf(3, "client", x509.ExtKeyUsageClientAuth, nil, "cert.pem", "key.pem")
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
