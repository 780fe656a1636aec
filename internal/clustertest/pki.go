package clustertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's certificate authority and the files made with it,
// all in one folder: ca.crt and ca.key; the service-account signing key
// (sa.key, sa.pub); and a certificate and key (NAME.crt, NAME.key) for
// each identity the cluster needs. Keys are ECDSA P-256: quick to make,
// and every component takes them.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

// identity is who a certificate names: its common name and organizations
// (Kubernetes reads them as the user and its groups), and for a serving
// certificate the names and addresses it answers for.
type identity struct {
	name   string   // the files' base name
	cn     string   // common name: the user, or the server
	orgs   []string // organizations: the user's groups
	server bool     // a serving certificate (else a client one)
	dns    []string
	ips    []net.IP
}

// certLife is how long the certificates are valid: a test's cluster lives
// minutes.
const certLife = 24 * time.Hour

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ctxcode clustertest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLife),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, caKey: key, serial: 1}
	if err := writePEM(p.path("ca.crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return p, writeKey(p.path("ca.key"), key)
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// issue makes id's key and certificate, signed by the CA, as
// id.name+".crt" and ".key".
func (p *pki) issue(id identity) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	p.serial++
	now := time.Now()
	usage := x509.ExtKeyUsageClientAuth
	if id.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: id.cn, Organization: id.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     id.dns,
		IPAddresses:  id.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return fmt.Errorf("certificate for %s: %w", id.cn, err)
	}
	if err := writePEM(p.path(id.name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(p.path(id.name+".key"), key)
}

// serviceAccountKey makes the key the apiserver signs service-account
// tokens with (sa.key) and checks them with (sa.pub).
func (p *pki) serviceAccountKey() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	return writeKey(p.path("sa.key"), key)
}

// kubeconfig writes a kubeconfig file at path for the identity name (its
// certificate and key embedded), trusting the CA, for the apiserver at
// server, its context's namespace namespace ("": none). JSON is YAML:
// client-go and kubectl read it as they read any.
func (p *pki) kubeconfig(path, name, server, namespace string) error {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(p.path(name + ".crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.path(name + ".key"))
	if err != nil {
		return err
	}
	cfg := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": "clustertest",
		"clusters": []any{map[string]any{"name": "clustertest", "cluster": map[string]any{
			"server": server, "certificate-authority-data": ca}}},
		"users": []any{map[string]any{"name": name, "user": map[string]any{
			"client-certificate-data": cert, "client-key-data": key}}},
		"contexts": []any{map[string]any{"name": "clustertest", "context": map[string]any{
			"cluster": "clustertest", "user": name, "namespace": namespace}}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
