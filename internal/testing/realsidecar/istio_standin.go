package realsidecar

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// standInPkg is the stand-in Envoy's package, built by EnvoyStandIn.
const standInPkg = "github.com/sidesync/sidesync/internal/testing/realsidecar/envoystandin"

var standIn struct {
	once sync.Once
	path string
	err  error
}

// EnvoyStandIn returns the stand-in Envoy binary, static, building it once per test process with the go
// command into ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/envoystandin/KEY/envoy, where KEY
// hashes its source and the Go version: later runs reuse it without building. A build writes
// a temporary file and renames it, so test processes building at once do not clash.
func EnvoyStandIn(t testing.TB) string {
	t.Helper()
	standIn.once.Do(func() { standIn.path, standIn.err = buildStandIn() })
	if standIn.err != nil {
		t.Fatalf("realsidecar: building the stand-in Envoy: %v", standIn.err)
	}
	return standIn.path
}

func buildStandIn() (string, error) {
	goCmd, err := exec.LookPath("go") // go test puts $GOROOT/bin first in PATH
	if err != nil {
		return "", err
	}
	src, err := standInSource(goCmd)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	files, _ := filepath.Glob(filepath.Join(src, "*.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	dir := filepath.Join(cacheDir(), "sidesync-ci", "envoystandin", hex.EncodeToString(h.Sum(nil))[:16])
	path := filepath.Join(dir, "envoy")
	if fi, err := os.Stat(path); err == nil && fi.Mode()&0o111 != 0 {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "envoy-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command(goCmd, "build", "-o", tmp.Name(), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", standInPkg, err, out)
	}
	return path, os.Rename(tmp.Name(), path)
}

// standInSource is the stand-in's source directory: next to this file, or where go list says.
func standInSource(goCmd string) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "envoystandin")
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command(goCmd, "list", "-f", "{{.Dir}}", standInPkg).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", standInPkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

var workloadCert struct {
	once            sync.Once
	certPEM, keyPEM []byte
	err             error
}

// WorkloadCertFiles are the files that make the agent use file-mounted certificates instead of
// asking a CA (istio-agent's initSdsServer), by their paths relative to its working directory:
// var/run/secrets/workload-spiffe-credentials/{cert-chain,key,root-cert}.pem and
// etc/certs/root-cert.pem. One self-signed certificate, with the workload's SPIFFE ID, is the
// whole chain and its own root. The same certificate every call, made once.
func WorkloadCertFiles() (map[string][]byte, error) {
	workloadCert.once.Do(func() { workloadCert.certPEM, workloadCert.keyPEM, workloadCert.err = selfSigned() })
	if workloadCert.err != nil {
		return nil, workloadCert.err
	}
	creds := filepath.Join("var", "run", "secrets", "workload-spiffe-credentials")
	return map[string][]byte{
		filepath.Join(creds, "cert-chain.pem"): workloadCert.certPEM,
		filepath.Join(creds, "key.pem"):        workloadCert.keyPEM,
		filepath.Join(creds, "root-cert.pem"):  workloadCert.certPEM,
		mountedRootCert:                        workloadCert.certPEM,
	}, nil
}

// mountedRootCert is the root certificate of Istio's old mounted-certificate layout
// (./etc/certs/root-cert.pem under the agent's working directory), which the agent takes as the
// xDS root certificate when it exists.
var mountedRootCert = filepath.Join("etc", "certs", "root-cert.pem")

// writeWorkloadCerts writes WorkloadCertFiles under the agent's working directory dir.
func writeWorkloadCerts(dir string) error {
	files, err := WorkloadCertFiles()
	if err != nil {
		return err
	}
	for rel, b := range files {
		name := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// selfSigned makes an ECDSA P-256 CA certificate for spiffe://cluster.local/ns/default/sa/default,
// valid from an hour ago for a day, and its key, in PEM.
func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	id, _ := url.Parse("spiffe://cluster.local/ns/default/sa/default")
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"sidesync test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		URIs:                  []*url.URL{id},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	var c, k bytes.Buffer
	pem.Encode(&c, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	pem.Encode(&k, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return c.Bytes(), k.Bytes(), nil
}
