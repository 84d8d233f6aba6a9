//go:build linux

package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cluster is a real kube-apiserver backed by a real etcd, started for tests by Start. Its fields
// are set by Start and must not be changed.
type Cluster struct {
	// URL is the apiserver's base URL, https://127.0.0.1:PORT.
	URL string
	// Host and Port are the parts of URL, as a pod sees them in KUBERNETES_SERVICE_HOST and
	// KUBERNETES_SERVICE_PORT.
	Host, Port string
	// CAFile is a PEM file with the CA that signed the apiserver's serving certificate, the
	// counterpart of a pod's /var/run/secrets/kubernetes.io/serviceaccount/ca.crt.
	CAFile string
	// AdminToken is the bearer token of Admin (group system:masters).
	AdminToken string
	// Version is the apiserver's gitVersion from /version, e.g. "v1.37.2".
	Version string

	tokens      map[string]string
	controllers bool // a controller manager runs (a Node's)
	client      *http.Client
	dir         string
	procs       []*process // in order of start; stopped in reverse: apiserver first, then etcd
}

// Start starts etcd and kube-apiserver on loopback and returns once the apiserver's /readyz
// answers 200. It builds nothing: when the binaries are not in BinDir it skips the test with a
// message that names .ci/build-kube.sh (or fails it, if EnvRequired is set). Both processes are
// stopped and their data removed by a t.Cleanup. Each call starts a separate cluster.
func Start(t testing.TB) *Cluster { return StartWith(t, Options{}) }

// Options are what StartWith may change about the cluster.
type Options struct {
	// Version is the Kubernetes release of the API server, one of Versions: "1.33" is the
	// oldest release sidesync supports (in BinDir()/1.33, beside the etcd of the newest). ""
	// is Newest.
	Version string
}

// StartWith is Start with options: StartWith(t, Options{Version: "1.33"}) runs the oldest
// supported release's API server. It skips (or fails, with EnvRequired) when that release's
// binary is missing, and fails when the binary serves another release (a stale build).
func StartWith(t testing.TB, o Options) *Cluster {
	t.Helper()
	apiserverBin, etcdBin := findBinaries(t, o.Version)
	c := newCluster(t)
	if err := c.writeFiles(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	begin := time.Now()
	deadline := begin.Add(readyTimeout) // shared by both processes: one budget for the whole start

	etcdURL := c.startEtcd(t, etcdBin, deadline)
	client, err := newAPIClient(c.CAFile, nil)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.client = client
	t.Cleanup(c.client.CloseIdleConnections)
	c.startAPIServer(t, apiserverBin, etcdURL, deadline)

	c.Version = c.readVersion(t)
	if want := versionOrNewest(o.Version); !strings.HasPrefix(c.Version, "v"+want+".") {
		t.Fatalf("kubetest: %s serves %s, not %s: rebuild it with `bash .ci/build-kube.sh`", apiserverBin, c.Version, want)
	}
	t.Logf("kubetest: kube-apiserver %s ready at %s after %s", c.Version, c.URL,
		time.Since(begin).Round(time.Millisecond))
	return c
}

// findBinaries returns the paths of the API server of version ("": Newest) and of etcd in
// BinDir. It skips the test when either is missing or not executable, or fails it when
// EnvRequired is set, so that a CI run which built them cannot skip silently.
func findBinaries(t testing.TB, version string) (apiserverBin, etcdBin string) {
	t.Helper()
	bin := BinDir()
	dir, err := versionDir(bin, version)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	apiserverBin = filepath.Join(dir, "kube-apiserver")
	etcdBin = filepath.Join(bin, "etcd")
	for _, p := range []string{apiserverBin, etcdBin} {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			msg := fmt.Sprintf("kubetest: no %s in %s: build kube-apiserver and etcd with `bash .ci/build-kube.sh` (or set %s)",
				filepath.Base(p), filepath.Dir(p), EnvBinDir)
			if r := os.Getenv(EnvRequired); r != "" && r != "0" {
				t.Fatalf("%s; %s is set, so this is a failure", msg, EnvRequired)
			}
			t.Skip(msg)
		}
	}
	logStamp(t, bin)
	if dir != bin {
		logStamp(t, dir)
	}
	return apiserverBin, etcdBin
}

// logStamp logs the stamp of the binaries in dir (what .ci/build-kube.sh built), if any.
func logStamp(t testing.TB, dir string) {
	if stamp, err := os.ReadFile(filepath.Join(dir, "stamp")); err == nil {
		t.Logf("kubetest: binaries in %s: %s", dir, strings.TrimSpace(string(stamp)))
	}
}

// newCluster makes the cluster's temporary directory and registers the cleanup that tears the
// cluster down. It is registered before any other of the cluster's cleanups, so it runs after
// them (t.Cleanup is last in, first out).
func newCluster(t testing.TB) *Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c := &Cluster{dir: dir, tokens: map[string]string{}}
	t.Cleanup(func() { c.shutdown(t) })
	return c
}

// shutdown stops the processes, the apiserver before the etcd it depends on, shows their last
// log lines if the test failed, and removes the cluster's directory.
func (c *Cluster) shutdown(t testing.TB) {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(t)
	}
	if t.Failed() {
		for _, p := range c.procs {
			p.logTail(t, logTailLines)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		t.Errorf("kubetest: removing %s: %v", c.dir, err)
	}
}

// path returns the path of the named file in the cluster's directory.
func (c *Cluster) path(name string) string {
	return filepath.Join(c.dir, name)
}

// logPath returns the log file of one attempt to start a process. Each attempt has its own, so
// that a retry does not hide why the attempt before it failed.
func (c *Cluster) logPath(name string, attempt int) string {
	return c.path(fmt.Sprintf("%s-%d.log", name, attempt))
}

// readVersion returns the apiserver's gitVersion from /version.
func (c *Cluster) readVersion(t testing.TB) string {
	t.Helper()
	v, err := c.gitVersion()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return v
}

// gitVersion reads the apiserver's gitVersion from /version.
func (c *Cluster) gitVersion() (string, error) {
	var v struct{ GitVersion string }
	code, body, _, err := c.roundTrip(context.Background(), c.AdminToken, http.MethodGet, "/version", nil)
	switch {
	case err != nil:
		return "", fmt.Errorf("GET /version: %w", err)
	case code != http.StatusOK:
		return "", fmt.Errorf("GET /version: %d", code)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("GET /version: %w", err)
	}
	return v.GitVersion, nil
}

// Token returns the bearer token of one of the users that the apiserver authenticates: Admin,
// PodReader or Nobody. It panics on any other name, which is a mistake in the test.
func (c *Cluster) Token(user string) string {
	tok, ok := c.tokens[user]
	if !ok {
		panic(fmt.Sprintf("kubetest: no token for user %q (have %q, %q, %q)", user, Admin, PodReader, Nobody))
	}
	return tok
}
