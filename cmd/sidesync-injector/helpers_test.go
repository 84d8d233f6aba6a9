package main

import (
	"context"
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
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// testCA signs the injector's serving certificates; swapping the leaf keeps the CA the API
// server trusts.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
	dir  string
	n    int64
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sidesync test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), dir: t.TempDir(), n: 1}
	ca.issue(t)
	return ca
}

func (ca *testCA) certFile() string { return filepath.Join(ca.dir, "tls.crt") }
func (ca *testCA) keyFile() string  { return filepath.Join(ca.dir, "tls.key") }

// issue writes a new serving key pair for 127.0.0.1 into the files, as a renewal does: each
// file replaced by a rename, the certificate first.
func (ca *testCA) issue(t testing.TB) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.n++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.n), Subject: pkix.Name{CommonName: "sidesync-injector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		tmp := name + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, name); err != nil {
			t.Fatal(err)
		}
	}
	write(ca.certFile(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(ca.keyFile(), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// injector is a running sidesync-injector.
type injector struct {
	webhook, probes string
	stderr          *syncBuffer
	cancel          context.CancelFunc
	done            chan int
	stopOnce        sync.Once
}

// startInjector runs the injector in-process with args (plus the certificate's), and stops it at
// cleanup.
func startInjector(t testing.TB, ca *testCA, args ...string) *injector {
	t.Helper()
	return launchInjector(t, append([]string{"--tls-cert-file=" + ca.certFile(), "--tls-key-file=" + ca.keyFile()}, args...))
}

// launchInjector runs the injector in-process on loopback with args, and stops it at cleanup.
func launchInjector(t testing.TB, args []string) *injector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &injector{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	started := make(chan struct{})
	all := append([]string{"--listen=127.0.0.1:0", "--probe-listen=127.0.0.1:0", "--drain-delay=0s", "--image=" + testImage}, args...)
	go func() {
		in.done <- run(ctx, all, buildinfo.Info{Version: testVersion, Commit: "test"}, in.stderr, func(w, p string) {
			in.webhook, in.probes = w, p
			close(started)
		})
	}()
	select {
	case <-started:
	case code := <-in.done:
		t.Fatalf("the injector exited %d:\n%s", code, in.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the injector did not start:\n%s", in.stderr)
	}
	t.Cleanup(func() { in.stop(t) })
	return in
}

// stop stops the injector as SIGTERM does and waits for it; it is safe to call twice.
func (in *injector) stop(t testing.TB) {
	in.stopOnce.Do(func() {
		in.cancel()
		select {
		case code := <-in.done:
			if code != 0 {
				t.Errorf("the injector exited %d:\n%s", code, in.stderr)
			}
		case <-time.After(time.Minute):
			t.Errorf("the injector did not stop:\n%s", in.stderr)
		}
	})
}

const (
	testVersion = "v1.2.3"
	testImage   = "ghcr.io/sidesync/sidesync:v1.2.3"
)

// syncBuffer is a bytes buffer safe for one writer and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

var _ io.Writer = (*syncBuffer)(nil)

// tlsDial connects to addr without checking its certificate (the test reads which one it is).
func tlsDial(addr string) (*tls.Conn, error) {
	return tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
}
