//go:build linux

// Package kubetest starts a real kube-apiserver backed by a real etcd for integration tests.
//
// Kubernetes pieces are tested against the real Kubernetes API machinery, not a hand-made
// imitation of it. The two binaries are built from source by .ci/build-kube.sh into a cache
// directory outside the repository; this package only runs them, and skips the test when they
// are missing (or fails it, when SIDESYNC_KUBE_REQUIRED is set, as CI may do).
//
// The package uses only the standard library: it talks to the apiserver with net/http and JSON,
// exactly as a program inside a pod would.
package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment variables read by Start.
const (
	// EnvBinDir names the directory that holds kube-apiserver and etcd. When it is unset the
	// directory is ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube, as in .ci/build-kube.sh.
	EnvBinDir = "SIDESYNC_KUBE_BIN"
	// EnvRequired, when set to anything but "" or "0", turns the skip for missing binaries into a
	// test failure, so that a CI run which built them cannot silently skip these tests.
	EnvRequired = "SIDESYNC_KUBE_REQUIRED"
)

// Users that the apiserver authenticates by bearer token (its --token-auth-file). Every
// authenticated user is also in group system:authenticated.
const (
	// Admin is in group system:masters: it may do anything.
	Admin = "admin"
	// PodReader has no permissions of its own; tests bind it to roles.
	PodReader = "pod-reader"
	// Nobody has no permissions and is never bound; its requests are authenticated and denied (403).
	Nobody = "nobody"
)

// users lists the token users and their groups beyond system:authenticated.
var users = []struct{ name, groups string }{
	{Admin, "system:masters"},
	{PodReader, ""},
	{Nobody, ""},
}

// Timeouts. They bound waits on conditions; nothing sleeps for synchronisation.
const (
	readyTimeout = 90 * time.Second // etcd healthy, then kube-apiserver /readyz
	stopTimeout  = 15 * time.Second // per process, after SIGTERM and before SIGKILL
	pollInterval = 100 * time.Millisecond
	startTries   = 5 // fresh ports after a bind failure
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

	tokens map[string]string
	client *http.Client
	dir    string
}

// BinDir returns the directory where Start looks for kube-apiserver and etcd.
func BinDir() string {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), ".cache")
	}
	return filepath.Join(cache, "sidesync-ci", "kube")
}

// Start starts etcd and kube-apiserver on loopback and returns once the apiserver's /readyz
// answers 200. It builds nothing: when the binaries are not in BinDir it skips the test with a
// message that names .ci/build-kube.sh (or fails it, if EnvRequired is set). Both processes are
// stopped and their data removed by a t.Cleanup. Each call starts a separate cluster.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := BinDir()
	apiserverBin := filepath.Join(bin, "kube-apiserver")
	etcdBin := filepath.Join(bin, "etcd")
	for _, p := range []string{apiserverBin, etcdBin} {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			msg := fmt.Sprintf("kubetest: no %s in %s: build kube-apiserver and etcd with `bash .ci/build-kube.sh` (or set %s)",
				filepath.Base(p), bin, EnvBinDir)
			if r := os.Getenv(EnvRequired); r != "" && r != "0" {
				t.Fatalf("%s; %s is set, so this is a failure", msg, EnvRequired)
			}
			t.Skip(msg)
		}
	}
	if stamp, err := os.ReadFile(filepath.Join(bin, "stamp")); err == nil {
		t.Logf("kubetest: binaries in %s: %s", bin, strings.TrimSpace(string(stamp)))
	}

	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c := &Cluster{dir: dir, tokens: map[string]string{}}
	var procs []*process // stopped in reverse order: apiserver first, then etcd
	t.Cleanup(func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(t)
		}
		if t.Failed() {
			for _, p := range procs {
				p.logTail(t, 40)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("kubetest: removing %s: %v", dir, err)
		}
	})

	if err := c.writeFiles(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	begin := time.Now()
	deadline := begin.Add(readyTimeout)

	etcdURL, etcd := startRetrying(t, "etcd", func(attempt int) (*process, string, error) {
		ports, err := freePorts(2)
		if err != nil {
			return nil, "", err
		}
		client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		p, err := startProcess(filepath.Join(dir, fmt.Sprintf("etcd-%d.log", attempt)), etcdBin,
			"--name=kubetest",
			"--data-dir="+filepath.Join(dir, "etcd"),
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=kubetest="+peer,
			"--initial-cluster-state=new",
			"--unsafe-no-fsync", // a throwaway test store: durability buys nothing
			"--log-level=warn",
		)
		if err != nil {
			return nil, "", err
		}
		plain := &http.Client{Timeout: 2 * time.Second}
		err = p.waitFor(deadline, func() bool {
			resp, err := plain.Get(client + "/health")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var h struct{ Health string }
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
		})
		plain.CloseIdleConnections()
		return p, client, err
	})
	procs = append(procs, etcd)

	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	t.Cleanup(c.client.CloseIdleConnections)

	_, apiserver := startRetrying(t, "kube-apiserver", func(attempt int) (*process, string, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, "", err
		}
		c.Host, c.Port = "127.0.0.1", strconv.Itoa(ports[0])
		c.URL = "https://" + net.JoinHostPort(c.Host, c.Port)
		p, err := startProcess(filepath.Join(dir, fmt.Sprintf("kube-apiserver-%d.log", attempt)), apiserverBin,
			c.apiserverArgs(etcdURL)...)
		if err != nil {
			return nil, "", err
		}
		err = p.waitFor(deadline, func() bool {
			return c.status(http.MethodGet, "/readyz", c.AdminToken) == http.StatusOK
		})
		return p, "", err
	})
	procs = append(procs, apiserver)

	var v struct{ GitVersion string }
	if code := c.Do(t, http.MethodGet, "/version", nil, &v); code != http.StatusOK {
		t.Fatalf("kubetest: GET /version: %d", code)
	}
	c.Version = v.GitVersion
	t.Logf("kubetest: kube-apiserver %s ready at %s after %s", c.Version, c.URL,
		time.Since(begin).Round(time.Millisecond))
	return c
}

// apiserverArgs returns kube-apiserver's flags; c.dir holds the files that writeFiles wrote.
func (c *Cluster) apiserverArgs(etcdURL string) []string {
	f := func(name string) string { return filepath.Join(c.dir, name) }
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + c.Port,
		"--tls-cert-file=" + f("apiserver.crt"),
		"--tls-private-key-file=" + f("apiserver.key"),
		"--token-auth-file=" + f("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f("sa.pub"),
		"--service-account-signing-key-file=" + f("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No endpoints for the "kubernetes" Service: a loopback address is not a valid endpoint,
		// and nothing here routes to it.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}

// writeFiles writes the CA, the serving certificate, the service-account key pair and the token
// file into c.dir, and sets CAFile, AdminToken and the tokens.
func (c *Cluster) writeFiles() error {
	f := func(name string) string { return filepath.Join(c.dir, name) }

	// A CA and a serving certificate for loopback and the names a pod would use.
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}

	// The service-account token signing key pair.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}

	// Static bearer tokens: token,user,uid,"groups".
	var tokens strings.Builder
	for _, u := range users {
		tok, err := randomHex(16)
		if err != nil {
			return err
		}
		c.tokens[u.name] = tok
		fmt.Fprintf(&tokens, "%s,%s,%s,%q\n", tok, u.name, u.name, u.groups)
	}
	c.AdminToken = c.tokens[Admin]
	c.CAFile = f("ca.crt")

	files := []struct {
		name string
		data []byte
	}{
		{"ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})},
		{"apiserver.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})},
		{"apiserver.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{"sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{"sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})},
		{"tokens.csv", []byte(tokens.String())},
	}
	for _, file := range files {
		if err := os.WriteFile(f(file.name), file.data, 0o600); err != nil {
			return err
		}
	}
	return nil
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

// Do sends method path (e.g. "/api/v1/namespaces") to the apiserver as Admin and returns the
// status code. A nil body sends none; a string, []byte or json.RawMessage is sent as JSON text;
// anything else is marshalled to JSON. PATCH bodies are sent as a JSON merge patch. If out is not
// nil the response body, whatever the status, is decoded into it as JSON (or, for *[]byte, stored
// as is). A transport or decoding error fails the test.
func (c *Cluster) Do(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	return c.DoAs(t, c.AdminToken, method, path, body, out)
}

// DoAs is Do with the given bearer token ("" sends none).
func (c *Cluster) DoAs(t testing.TB, token, method, path string, body, out any) int {
	t.Helper()
	code, data, err := c.roundTrip(context.Background(), token, method, path, body)
	if err != nil {
		t.Fatalf("kubetest: %s %s: %v", method, path, err)
	}
	switch o := out.(type) {
	case nil:
	case *[]byte:
		*o = data
	default:
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("kubetest: %s %s: %d, decoding %.200q: %v", method, path, code, data, err)
		}
	}
	return code
}

// Create POSTs obj (as for Do's body) to path as Admin, fails the test unless the answer is 2xx,
// and returns the created object.
func (c *Cluster) Create(t testing.TB, path string, obj any) map[string]any {
	t.Helper()
	var raw []byte
	code := c.Do(t, http.MethodPost, path, obj, &raw)
	if code/100 != 2 {
		t.Fatalf("kubetest: POST %s: %d: %s", path, code, bytes.TrimSpace(raw))
	}
	var created map[string]any
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatalf("kubetest: POST %s: decoding %.200q: %v", path, raw, err)
	}
	return created
}

// Apply POSTs rawJSON to path as Admin (a create, e.g. of a Pod at
// /api/v1/namespaces/NS/pods) and fails the test unless the answer is 2xx.
func (c *Cluster) Apply(t testing.TB, path string, rawJSON string) {
	t.Helper()
	c.Create(t, path, rawJSON)
}

// CreateNamespace creates a namespace and, as Kubernetes' service-account controller would
// (none runs here), its "default" ServiceAccount, which the ServiceAccount admission plugin
// requires of every Pod.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	c.Create(t, "/api/v1/namespaces", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	})
	c.CreateServiceAccount(t, name, "default")
}

// CreateServiceAccount creates a ServiceAccount.
func (c *Cluster) CreateServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name},
	})
}

// CreatePod creates a Pod from pod, raw JSON text or a Go value (a map, say) as for Do's body,
// and returns the Pod as the apiserver stored it. No kubelet runs: the Pod stays Pending.
func (c *Cluster) CreatePod(t testing.TB, namespace string, pod any) map[string]any {
	t.Helper()
	return c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/pods", pod)
}

// PolicyRule is an RBAC rule, as in a Role.
type PolicyRule struct {
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	Verbs         []string `json:"verbs"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// Subject is whom a RoleBinding binds: Kind "User", "Group" or "ServiceAccount" (which also
// needs Namespace).
type Subject struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	APIGroup  string `json:"apiGroup,omitempty"`
}

// CreateRole creates an RBAC Role.
func (c *Cluster) CreateRole(t testing.TB, namespace, name string, rules ...PolicyRule) {
	t.Helper()
	for i := range rules {
		if rules[i].APIGroups == nil {
			rules[i].APIGroups = []string{""}
		}
	}
	c.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+url.PathEscape(namespace)+"/roles", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": name},
		"rules":    rules,
	})
}

// CreateRoleBinding creates an RBAC RoleBinding of role (a Role in namespace) to subjects. RBAC
// caches what it reads: wait with WaitForStatus before relying on the binding.
func (c *Cluster) CreateRoleBinding(t testing.TB, namespace, name, role string, subjects ...Subject) {
	t.Helper()
	for i := range subjects {
		if subjects[i].APIGroup == "" && subjects[i].Kind != "ServiceAccount" {
			subjects[i].APIGroup = "rbac.authorization.k8s.io"
		}
	}
	c.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+url.PathEscape(namespace)+"/rolebindings", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
		"subjects": subjects,
	})
}

// ServiceAccountToken returns a token of ServiceAccount namespace/name from the TokenRequest
// API, signed by the apiserver as a pod's projected token would be, valid for an hour.
func (c *Cluster) ServiceAccountToken(t testing.TB, namespace, name string) string {
	t.Helper()
	created := c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/serviceaccounts/"+url.PathEscape(name)+"/token",
		map[string]any{
			"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
			"spec": map[string]any{"expirationSeconds": 3600},
		})
	status, _ := created["status"].(map[string]any)
	tok, _ := status["token"].(string)
	if tok == "" {
		t.Fatalf("kubetest: TokenRequest for %s/%s returned no token: %v", namespace, name, created)
	}
	return tok
}

// WaitForStatus repeats method path with token (no body) until the apiserver answers want, and
// fails the test if it has not within 30 s. Use it where the apiserver is eventually consistent,
// such as a new RoleBinding reaching RBAC's cache.
func (c *Cluster) WaitForStatus(t testing.TB, token, method, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := c.status(method, path, token)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubetest: %s %s: still %d after 30s, want %d", method, path, got, want)
		}
		time.Sleep(pollInterval) // polling a condition, bounded by deadline
	}
}

// status returns the status code of method path with token, or -1 on a transport error. Each
// try is bounded, so that a stuck connection cannot outlast the caller's deadline by much.
func (c *Cluster) status(method, path, token string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	code, _, err := c.roundTrip(ctx, token, method, path, nil)
	if err != nil {
		return -1
	}
	return code
}

// roundTrip sends one request and reads the whole answer. The client's own timeout bounds it too.
func (c *Cluster) roundTrip(ctx context.Context, token, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		var data []byte
		switch b := body.(type) {
		case string:
			data = []byte(b)
		case []byte:
			data = b
		case json.RawMessage:
			data = b
		default:
			var err error
			if data, err = json.Marshal(body); err != nil {
				return 0, nil, err
			}
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		ct := "application/json"
		if method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// errPortInUse reports a process that could not bind a port that was free a moment before.
var errPortInUse = errors.New("address already in use")

// startRetrying calls start with fresh ports until it succeeds, retrying only on a bind failure,
// and fails the test otherwise.
func startRetrying(t testing.TB, name string, start func(attempt int) (*process, string, error)) (string, *process) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, addr, err := start(attempt)
		if err == nil {
			return addr, p
		}
		if p != nil {
			p.stop(t)
		}
		if errors.Is(err, errPortInUse) && attempt < startTries {
			t.Logf("kubetest: %s: %v; retrying with other ports", name, err)
			continue
		}
		if p != nil {
			p.logTail(t, 40)
		}
		t.Fatalf("kubetest: starting %s: %v", name, err)
	}
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment ago. The flags of
// etcd and kube-apiserver take no port 0, so a later bind can still lose a race: callers retry.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// process is a started etcd or kube-apiserver.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited; err is then set
	err     error
}

// startProcess starts bin with args, its output going to logPath. Linux's parent-death signal
// kills the process should the test binary die without running its cleanups (a panic, a
// timeout, a kill).
func startProcess(logPath, bin string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitFor polls ready until it reports true, the process exits, or the deadline passes.
func (p *process) waitFor(deadline time.Time, ready func() bool) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(p.logPath)
			if bytes.Contains(log, []byte("address already in use")) {
				return fmt.Errorf("%s exited (%v): %w", p.name, p.err, errPortInUse)
			}
			return fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
		case <-timeout.C:
			return fmt.Errorf("%s not ready after %s", p.name, readyTimeout)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM, then SIGKILL if the process has not exited within stopTimeout, and waits.
func (p *process) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		t.Logf("kubetest: %s did not exit within %s of SIGTERM; killing it", p.name, stopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail logs the last n lines of the process's output.
func (p *process) logTail(t testing.TB, n int) {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("kubetest: last lines of %s:\n%s", filepath.Base(p.logPath), strings.Join(lines, "\n"))
}
