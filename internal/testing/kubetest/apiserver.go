//go:build linux

package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// newAPIClient returns a client that trusts only the CA in caFile, as a pod's client would, and
// dials with dial (nil: net.Dialer's).
func newAPIClient(caFile string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DialContext: dial},
	}, nil
}

// startAPIServer starts kube-apiserver against etcdURL and waits until its /readyz answers 200.
// It sets URL, Host and Port.
func (c *Cluster) startAPIServer(t testing.TB, bin, etcdURL string, deadline time.Time) {
	t.Helper()
	_, p := startRetrying(t, "kube-apiserver", func(attempt int) (*process, string, error) {
		p, err := c.tryStartAPIServer(bin, etcdURL, attempt, deadline)
		return p, "", err
	})
	c.procs = append(c.procs, p)
}

// tryStartAPIServer is one attempt of startAPIServer, on a fresh port.
func (c *Cluster) tryStartAPIServer(bin, etcdURL string, attempt int, deadline time.Time) (*process, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	c.Host, c.Port = "127.0.0.1", strconv.Itoa(ports[0])
	c.URL = "https://" + net.JoinHostPort(c.Host, c.Port)
	p, err := startProcess(c.logPath("kube-apiserver", attempt), bin, c.apiserverArgs(etcdURL)...)
	if err != nil {
		return nil, err
	}
	return p, p.waitFor(deadline, func() bool {
		return c.status(http.MethodGet, "/readyz", c.AdminToken) == http.StatusOK
	})
}

// apiserverArgs returns kube-apiserver's flags; c.dir holds the files that writeFiles wrote.
func (c *Cluster) apiserverArgs(etcdURL string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + c.Port,
		"--tls-cert-file=" + c.path(servingCertFile),
		"--tls-private-key-file=" + c.path(servingKeyFile),
		"--token-auth-file=" + c.path(tokensFile),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path(saPublicKeyFile),
		"--service-account-signing-key-file=" + c.path(saPrivateKeyFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No endpoints for the "kubernetes" Service: a loopback address is not a valid endpoint,
		// and nothing here routes to it.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}
