//go:build linux

package kubetest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// startEtcd starts etcd, waits until it reports itself healthy, and returns its client URL.
func (c *Cluster) startEtcd(t testing.TB, bin string, deadline time.Time) string {
	t.Helper()
	clientURL, p := startRetrying(t, "etcd", func(attempt int) (*process, string, error) {
		return c.tryStartEtcd(bin, attempt, deadline)
	})
	c.procs = append(c.procs, p)
	return clientURL
}

// tryStartEtcd is one attempt of startEtcd, on fresh ports.
func (c *Cluster) tryStartEtcd(bin string, attempt int, deadline time.Time) (*process, string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	p, err := startProcess(c.logPath("etcd", attempt), bin, etcdArgs(c.path("etcd"), clientURL, peerURL)...)
	if err != nil {
		return nil, "", err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	err = p.waitFor(deadline, func() bool { return etcdHealthy(plain, clientURL) })
	plain.CloseIdleConnections()
	return p, clientURL, err
}

// etcdArgs returns the flags of a single-member etcd with its data in dataDir.
func etcdArgs(dataDir, clientURL, peerURL string) []string {
	return []string{
		"--name=kubetest",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubetest=" + peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync", // a throwaway test store: durability buys nothing
		"--log-level=warn",
	}
}

// etcdHealthy reports whether etcd's /health answers 200 with {"health":"true"}.
func etcdHealthy(client *http.Client, clientURL string) bool {
	resp, err := client.Get(clientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct{ Health string }
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
}
