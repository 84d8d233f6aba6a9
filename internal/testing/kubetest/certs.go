//go:build linux

package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// The files that writeFiles writes into the cluster's directory and apiserverArgs names.
const (
	caCertFile       = "ca.crt"
	servingCertFile  = "apiserver.crt"
	servingKeyFile   = "apiserver.key"
	saPrivateKeyFile = "sa.key"
	saPublicKeyFile  = "sa.pub"
	tokensFile       = "tokens.csv"
)

// Certificates are valid from an hour ago, so that a small clock difference cannot make them
// not yet valid, for a day, which is far longer than any test.
const (
	certBackdate = time.Hour
	certLifetime = 24 * time.Hour
)

// servingDNSNames are the names that a pod would use for the apiserver; the serving
// certificate is valid for them, for loopback, and for a node's addresses (StartNode).
var servingDNSNames = []string{
	"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

// writeFiles writes the CA, the serving certificate, the service-account key pair and the token
// file into c.dir, and sets CAFile, AdminToken and the tokens.
func (c *Cluster) writeFiles() error {
	now := time.Now()
	ca, caKey, err := newCA(now)
	if err != nil {
		return fmt.Errorf("generating the CA: %w", err)
	}
	servingCert, servingKey, err := newServingCert(ca, caKey, now)
	if err != nil {
		return fmt.Errorf("generating the serving certificate: %w", err)
	}
	saKey, saPub, err := newServiceAccountKeys()
	if err != nil {
		return fmt.Errorf("generating the service-account keys: %w", err)
	}
	tokens, err := c.newTokens()
	if err != nil {
		return fmt.Errorf("generating the tokens: %w", err)
	}
	c.CAFile = c.path(caCertFile)

	files := []struct {
		name string
		data []byte
	}{
		{caCertFile, pemEncode("CERTIFICATE", ca.Raw)},
		{servingCertFile, servingCert},
		{servingKeyFile, servingKey},
		{saPrivateKeyFile, saKey},
		{saPublicKeyFile, saPub},
		{tokensFile, tokens},
	}
	for _, file := range files {
		if err := os.WriteFile(c.path(file.name), file.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// newCA returns a self-signed CA certificate and its key.
func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// newServingCert returns the apiserver's serving certificate, signed by ca, and its key, both
// PEM-encoded. It is valid for loopback and for the names in servingDNSNames.
func newServingCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-certBackdate),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     servingDNSNames,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(nodeIP), net.ParseIP(nodeServiceIP)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemEncode("CERTIFICATE", der), pemEncode("EC PRIVATE KEY", keyDER), nil
}

// newServiceAccountKeys returns the key pair with which the apiserver signs and checks
// service-account tokens, PEM-encoded.
func newServiceAccountKeys() (privatePEM, publicPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pemEncode("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), pemEncode("PUBLIC KEY", pub), nil
}

// newTokens makes a random bearer token for each of the users, records them in c.tokens and
// AdminToken, and returns them as kube-apiserver's --token-auth-file: token,user,uid,"groups".
func (c *Cluster) newTokens() ([]byte, error) {
	var csv strings.Builder
	for _, u := range users {
		tok, err := randomHex(16)
		if err != nil {
			return nil, err
		}
		c.tokens[u.name] = tok
		fmt.Fprintf(&csv, "%s,%s,%s,%q\n", tok, u.name, u.name, u.groups)
	}
	c.AdminToken = c.tokens[Admin]
	return []byte(csv.String()), nil
}

// pemEncode returns der as one PEM block of the given type.
func pemEncode(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
