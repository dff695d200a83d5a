package client_test

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
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

// testPKI is a CA with one server and one client certificate, in files.
type testPKI struct {
	dir                       string
	caFile, certFile, keyFile string // client side
	pool                      *x509.CertPool
	server                    tls.Certificate
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mrcgen test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, name string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	pemFile := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = pemFile("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := issue(2, "switch.lab", x509.ExtKeyUsageServerAuth)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliDER, cliKey := issue(3, "controller", x509.ExtKeyUsageClientAuth)
	keyDER, _ := x509.MarshalECPrivateKey(cliKey)
	p.certFile = pemFile("client.pem", "CERTIFICATE", cliDER)
	p.keyFile = pemFile("client-key.pem", "EC PRIVATE KEY", keyDER)
	return p
}

func tlsServer(t *testing.T, p *testPKI, mutual bool) *p4rttest.Server {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientCAs, cfg.ClientAuth = p.pool, tls.RequireAndVerifyClientCert
	}
	s := p4rttest.Start(p4rttest.Options{DeviceID: 1, ServerOptions: []grpc.ServerOption{grpc.Creds(credentials.NewTLS(cfg))}})
	t.Cleanup(s.Close)
	return s
}

// TestTLS: the client verifies the device against a CA file (TLS) and
// presents its own certificate (mTLS); a client without the CA, without a
// certificate where one is required, or in plaintext does not get in.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	try := func(s *p4rttest.Server, tr client.Transport) error {
		t.Helper()
		c := newClient(t, s, 1, func(cfg *client.Config) {
			cfg.Transport = tr
			cfg.Backoff = client.Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}
		})
		return c.WaitPrimary(ctxTimeout(t, time.Second))
	}
	tlsOnly := tlsServer(t, p, false)
	if err := try(tlsOnly, client.Transport{CAFile: p.caFile, ServerName: "switch.lab"}); err != nil {
		t.Errorf("TLS with the CA: %v", err)
	}
	if err := try(tlsOnly, client.Transport{ServerName: "switch.lab"}); err == nil {
		t.Error("TLS against the system roots accepted a certificate of a private CA")
	}
	if err := try(tlsOnly, client.Transport{CAFile: p.caFile, ServerName: "other.lab"}); err == nil {
		t.Error("TLS accepted a certificate for another name")
	}
	if err := try(tlsOnly, client.Transport{Insecure: true}); err == nil {
		t.Error("a plaintext client got through to a TLS device")
	}

	mutual := tlsServer(t, p, true)
	if err := try(mutual, client.Transport{CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile, ServerName: "switch.lab"}); err != nil {
		t.Errorf("mTLS with a client certificate: %v", err)
	}
	if err := try(mutual, client.Transport{CAFile: p.caFile, ServerName: "switch.lab"}); err == nil {
		t.Error("mTLS device accepted a client without a certificate")
	}
}
