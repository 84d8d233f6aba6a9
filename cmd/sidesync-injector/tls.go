package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
)

// certSource is where the served certificate comes from: files (certReloader) or the
// self-managed Secret (selfCerts).
type certSource interface {
	tlsConfig() *tls.Config
	// ready reports whether the webhook can be called: a certificate the API server trusts.
	ready() bool
}

// certReloader serves the key pair in two files and loads it again when either changes (a
// renewed cert-manager Certificate, a Secret's volume swapped by the kubelet): every handshake
// checks the files' modification times and sizes, which costs two stats, and a pair that
// fails to load keeps the last good one in use.
type certReloader struct {
	certFile, keyFile string

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp string // the files' modification times and sizes when cert was loaded
	err   error  // the last failed reload, for the log
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	return r, nil
}

// stampOf says when the files last changed.
func (r *certReloader) stampOf() (string, error) {
	var s string
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return s, nil
}

// get returns the key pair, loaded again if the files changed.
func (r *certReloader) get() (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamp, err := r.stampOf()
	if err == nil && stamp == r.stamp && r.cert != nil {
		return r.cert, nil
	}
	if err == nil {
		var c tls.Certificate
		c, err = tls.LoadX509KeyPair(r.certFile, r.keyFile)
		if err == nil {
			r.cert, r.stamp, r.err = &c, stamp, nil
			return r.cert, nil
		}
	}
	err = fmt.Errorf("TLS key pair %s, %s: %w", r.certFile, r.keyFile, err)
	if r.cert == nil {
		return nil, err
	}
	r.err = err
	return r.cert, nil // keep serving the last good pair
}

// ready is always true: the pair was loaded at the start, and the caBundle is someone else's.
func (r *certReloader) ready() bool { return true }

// tlsConfig is TLS 1.2 or newer, with the key pair of the files.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.get()
		},
	}
}
