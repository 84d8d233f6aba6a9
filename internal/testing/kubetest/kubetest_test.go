//go:build linux

package kubetest_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// A Pod with an app container and a native sidecar: an init container with restartPolicy
// Always. The apiserver validates the field, so creating it proves the sidecar is accepted.
const podJSON = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "p1", "labels": {"app": "demo"}},
  "spec": {
    "initContainers": [
      {"name": "envoy", "image": "envoyproxy/envoy:v1.31.0", "restartPolicy": "Always"}
    ],
    "containers": [
      {"name": "app", "image": "busybox:1.36", "command": ["sidesync", "--", "true"]}
    ]
  }
}`

const podPath = "/api/v1/namespaces/ns1/pods/p1"

// TestPodReadWithRBAC reads a Pod from a real kube-apiserver as a program inside the pod would:
// plain net/http, the CA file, a bearer token, and the in-cluster URL.
func TestPodReadWithRBAC(t *testing.T) {
	c := kubetest.Start(t)

	c.CreateNamespace(t, "ns1")
	created := c.CreatePod(t, "ns1", podJSON)
	if uid, _ := created["metadata"].(map[string]any)["uid"].(string); uid == "" {
		t.Fatalf("created Pod has no uid: %v", created)
	}
	// The validation is the real one: a container's restartPolicy is an enum. (Kubernetes 1.37
	// also accepts OnFailure and Never on an init container; only Always makes a sidecar.)
	bad := strings.NewReplacer(`"name": "p1"`, `"name": "p2"`, `"restartPolicy": "Always"`, `"restartPolicy": "Sometimes"`).Replace(podJSON)
	var status struct{ Kind, Reason, Message string }
	if code := c.Do(t, http.MethodPost, "/api/v1/namespaces/ns1/pods", bad, &status); code != http.StatusUnprocessableEntity ||
		status.Reason != "Invalid" || !strings.Contains(status.Message, "restartPolicy") {
		t.Errorf("init container with restartPolicy Sometimes: %d %+v, want 422 Invalid about restartPolicy", code, status)
	}
	c.CreateRole(t, "ns1", "pod-reader", kubetest.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}})
	c.CreateRoleBinding(t, "ns1", "pod-reader", "pod-reader", kubetest.Subject{Kind: "User", Name: kubetest.PodReader})
	// RBAC reads bindings through a cache: wait until this one is in force.
	c.WaitForStatus(t, c.Token(kubetest.PodReader), http.MethodGet, podPath, http.StatusOK)

	client := inClusterClient(t, c.CAFile)
	base := "https://" + net.JoinHostPort(c.Host, c.Port) // $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT

	code, body := get(t, client, base+podPath, c.Token(kubetest.PodReader))
	if code != http.StatusOK {
		t.Fatalf("pod-reader: GET %s: %d %s, want 200", podPath, code, body)
	}
	var pod struct {
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			InitContainers []struct{ Name, RestartPolicy string }
			Containers     []struct{ Name string }
		}
	}
	if err := json.Unmarshal(body, &pod); err != nil {
		t.Fatalf("decoding the Pod: %v", err)
	}
	if pod.Metadata.Name != "p1" || pod.Metadata.Namespace != "ns1" {
		t.Errorf("got Pod %s/%s, want ns1/p1", pod.Metadata.Namespace, pod.Metadata.Name)
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "envoy" ||
		pod.Spec.InitContainers[0].RestartPolicy != "Always" {
		t.Errorf("init containers = %+v, want envoy with restartPolicy Always", pod.Spec.InitContainers)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "app" {
		t.Errorf("containers = %+v, want app", pod.Spec.Containers)
	}

	// Authenticated but not authorised.
	code, body = get(t, client, base+podPath, c.Token(kubetest.Nobody))
	if code != http.StatusForbidden {
		t.Errorf("nobody: GET %s: %d %s, want 403", podPath, code, body)
	}
	status.Kind, status.Reason = "", ""
	if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" || status.Reason != "Forbidden" {
		t.Errorf("nobody: body %s (err %v), want a Status with reason Forbidden", body, err)
	}
	// The Role grants get, not list.
	if code, body = get(t, client, base+"/api/v1/namespaces/ns1/pods", c.Token(kubetest.PodReader)); code != http.StatusForbidden {
		t.Errorf("pod-reader: list pods: %d %s, want 403", code, body)
	}
	// Not authenticated at all.
	if code, body = get(t, client, base+podPath, "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("bad token: GET %s: %d %s, want 401", podPath, code, body)
	}
}

// TestServiceAccountToken reads the Pod with a token that the apiserver itself signed for a
// ServiceAccount, as a pod's projected token is.
func TestServiceAccountToken(t *testing.T) {
	c := kubetest.Start(t)

	c.CreateNamespace(t, "ns1")
	c.CreateServiceAccount(t, "ns1", "sidesync")
	c.Apply(t, "/api/v1/namespaces/ns1/pods", strings.Replace(podJSON, `"spec": {`, `"spec": {"serviceAccountName": "sidesync",`, 1))
	c.CreateRole(t, "ns1", "read-pods", kubetest.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}})
	c.CreateRoleBinding(t, "ns1", "sidesync-reads-pods", "read-pods",
		kubetest.Subject{Kind: "ServiceAccount", Name: "sidesync", Namespace: "ns1"})

	tok := c.ServiceAccountToken(t, "ns1", "sidesync")
	c.WaitForStatus(t, tok, http.MethodGet, podPath, http.StatusOK)

	var pod struct {
		Spec struct {
			ServiceAccountName string
			Volumes            []struct{ Name string }
		}
	}
	if code := c.DoAs(t, tok, http.MethodGet, podPath, nil, &pod); code != http.StatusOK {
		t.Fatalf("service account: GET %s: %d", podPath, code)
	}
	if pod.Spec.ServiceAccountName != "sidesync" {
		t.Errorf("serviceAccountName = %q, want sidesync", pod.Spec.ServiceAccountName)
	}
	// The ServiceAccount admission plugin adds the projected token volume, as in a real cluster.
	if len(pod.Spec.Volumes) == 0 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") {
		t.Errorf("volumes = %+v, want the kube-api-access-* projected volume", pod.Spec.Volumes)
	}
	// Another namespace's pods are not the service account's to read.
	c.CreateNamespace(t, "ns2")
	if code := c.DoAs(t, tok, http.MethodGet, "/api/v1/namespaces/ns2/pods/p1", nil, nil); code != http.StatusForbidden {
		t.Errorf("service account: GET in ns2: %d, want 403", code)
	}
}

// TestUnknownTokenUserPanics checks that asking for a user the cluster lacks is loud.
func TestUnknownTokenUserPanics(t *testing.T) {
	var c kubetest.Cluster
	defer func() {
		if recover() == nil {
			t.Error("Token of an unknown user did not panic")
		}
	}()
	c.Token("someone-else")
}

// TestSkipWithoutBinaries checks that Start skips, naming the build script, when the binaries
// are absent.
func TestSkipWithoutBinaries(t *testing.T) {
	t.Setenv(kubetest.EnvBinDir, t.TempDir())
	t.Setenv(kubetest.EnvRequired, "")
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Skip ends its goroutine with runtime.Goexit
		defer close(done)
		kubetest.Start(rec)
		t.Error("Start returned without binaries")
	}()
	<-done
	if !rec.skipped || !strings.Contains(rec.msg, ".ci/build-kube.sh") {
		t.Errorf("skipped=%v msg=%q, want a skip that names .ci/build-kube.sh", rec.skipped, rec.msg)
	}
}

// TestSkipWithoutOldest checks that StartWith skips, naming the build script, when the oldest
// release's API server is absent, although the newest's binaries are there.
func TestSkipWithoutOldest(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(kubetest.EnvBinDir, dir)
	t.Setenv(kubetest.EnvRequired, "")
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		kubetest.StartWith(rec, kubetest.Options{Version: kubetest.Oldest})
		t.Error("StartWith returned without the oldest release's binary")
	}()
	<-done
	if want := filepath.Join(dir, kubetest.Oldest); !rec.skipped || !strings.Contains(rec.msg, ".ci/build-kube.sh") || !strings.Contains(rec.msg, want) {
		t.Errorf("skipped=%v msg=%q, want a skip that names .ci/build-kube.sh and %s", rec.skipped, rec.msg, want)
	}
}

// TestVersionsPinned checks that the releases the tests run are those .ci/build-kube.sh builds,
// and that the oldest is the oldest sidesync supports (kubeversion.Oldest).
func TestVersionsPinned(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "..", ".ci", "build-kube.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range []struct{ variable, minor string }{
		{"KUBE_VERSION", kubetest.Newest},
		{"OLDEST_KUBE_VERSION", kubetest.Oldest},
	} {
		if !strings.Contains(string(script), "\n"+pin.variable+"=v"+pin.minor+".") {
			t.Errorf(".ci/build-kube.sh pins no %s=v%s.N", pin.variable, pin.minor)
		}
	}
	if got, want := kubetest.Oldest, kubeversion.Oldest.String(); got != want {
		t.Errorf("kubetest.Oldest is %s, kubeversion.Oldest %s", got, want)
	}
	if got, want := kubetest.Versions, []string{kubetest.Oldest, kubetest.Newest}; !slices.Equal(got, want) {
		t.Errorf("Versions %q, want %q", got, want)
	}
}

// recorder is a testing.TB whose Skip is recorded instead of skipping the real test.
type recorder struct {
	testing.TB
	skipped bool
	msg     string
}

func (r *recorder) Skip(args ...any) {
	r.skipped = true
	r.msg = strings.TrimSuffix(fmt.Sprintln(args...), "\n")
	runtime.Goexit()
}

// inClusterClient returns the client a program in a pod builds: trust exactly the CA file.
func inClusterClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", caFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, client *http.Client, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading: %v", url, err)
	}
	return resp.StatusCode, body
}
