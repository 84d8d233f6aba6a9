//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// podWithSidecars is a Job pod as the API stores it: Linkerd's proxy as a native sidecar (no
// startup probe), and the Cloud SQL Auth Proxy as an ordinary container whose flags give its
// ports.
func podWithSidecars(linkerdPort, sqlHTTP, sqlAdmin string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": "job-pod",
			"annotations": map[string]any{
				"linkerd.io/proxy-version":     "edge-26.8.3",
				"config.linkerd.io/admin-port": linkerdPort,
			},
		},
		"spec": map[string]any{
			"serviceAccountName":           "job",
			"automountServiceAccountToken": false,
			"restartPolicy":                "Never",
			"initContainers": []any{map[string]any{
				"name": "linkerd-proxy", "image": "cr.l5d.io/linkerd/proxy:edge-26.8.3", "restartPolicy": "Always",
			}},
			"containers": []any{
				map[string]any{"name": "job", "image": "example/job:1"},
				map[string]any{"name": "cloud-sql-proxy", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0",
					"args": []any{"--health-check", "--http-port=" + sqlHTTP, "--quitquitquit", "--admin-port", sqlAdmin, "p:r:i"}},
			},
		},
	}
}

// serviceAccountDir writes what Kubernetes mounts into a pod of c for its service account.
func serviceAccountDir(t *testing.T, c *kubetest.Cluster, token, namespace string) string {
	t.Helper()
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return writeServiceAccount(t, ca, token, namespace)
}

// TestDetectFromKubernetesAPI runs sidesync with no sidecar configured inside a "pod" of a real
// kube-apiserver: it reads its own Pod with the service account's token, finds Linkerd (a native
// sidecar: waited for, never told to quit) and the Cloud SQL Auth Proxy (waited for on the port
// its flags give, then told to quit). Without RBAC permission it says why and runs the command
// at once.
func TestDetectFromKubernetesAPI(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t)
	const ns = "jobs"
	c.CreateNamespace(t, ns)
	c.CreateServiceAccount(t, ns, "job")
	c.CreateServiceAccount(t, ns, "other")
	linkerd := startProfile(t, "linkerd", "--ready-after", "100ms")
	csql := startProfile(t, "cloudsql", "--ready-after", "200ms")
	c.CreatePod(t, ns, podWithSidecars(linkerd.port("admin"), csql.port("http"), csql.port("admin")))
	c.CreateRole(t, ns, "read-own-pod", kubetest.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}, ResourceNames: []string{"job-pod"}})
	c.CreateRoleBinding(t, ns, "job-reads-pod", "read-own-pod", kubetest.Subject{Kind: "ServiceAccount", Name: "job", Namespace: ns})
	token := c.ServiceAccountToken(t, ns, "job")
	c.WaitForStatus(t, token, "GET", "/api/v1/namespaces/"+ns+"/pods/job-pod", 200)
	env := []string{"KUBERNETES_SERVICE_HOST=" + c.Host, "KUBERNETES_SERVICE_PORT=" + c.Port, "HOSTNAME=job-pod"}
	noPodInfo := filepath.Join(t.TempDir(), "no-podinfo")

	r := sidesync(t, env, "--pod-info", noPodInfo, "--service-account-dir", serviceAccountDir(t, c, token, ns), "--", bin.testcmd, "exit", "0")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "detected sidecar sidecar=linkerd from=\"the Kubernetes API, pod jobs/job-pod\"",
		"detected sidecar sidecar=cloudsql", "waiting for a native sidecar", "sidecar ready sidecar=linkerd",
		"sidecar ready sidecar=cloudsql", "not telling a native sidecar to quit")
	if csql.waitExit() != 0 || linkerd.quits() != 0 || csql.quits() != 1 {
		t.Errorf("quits: linkerd %d (native: want 0), cloudsql %d (want 1)", linkerd.quits(), csql.quits())
	}

	other := c.ServiceAccountToken(t, ns, "other")
	otherDir := serviceAccountDir(t, c, other, ns)
	r = sidesync(t, env, "--pod-info", noPodInfo, "--service-account-dir", otherDir, "--", bin.testcmd, "exit", "5")
	if r.code != 5 {
		t.Errorf("without permission: exit %d, want the command's 5", r.code)
	}
	// Could not look is a warning with the exact RBAC, not an INFO that nothing was found.
	fix := "kubectl create role sidesync-get-pods --verb=get --resource=pods -n jobs && " +
		"kubectl create rolebinding sidesync-get-pods --role=sidesync-get-pods --serviceaccount=jobs:other -n jobs"
	mustContain(t, r.stderr, "WARN no sidecar configured or detected, but detection could not look",
		"403 Forbidden: the service account jobs:other may not get its own pod jobs/job-pod", fix)
	if strings.Count(r.stderr, "no sidecar configured or detected") != 1 {
		t.Errorf("the fallback was not said exactly once:\n%s", r.stderr)
	}
	r = sidesync(t, env, "--pod-info", noPodInfo, "--service-account-dir", otherDir, "--require-sidecar", "--", bin.testcmd, "exit", "5")
	if r.code != 69 {
		t.Errorf("without permission, with --require-sidecar: exit %d, want 69", r.code)
	}

	// Granting what the warning says is enough for detection to work.
	c.CreateRole(t, ns, "sidesync-get-pods", kubetest.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}})
	c.CreateRoleBinding(t, ns, "sidesync-get-pods", "sidesync-get-pods", kubetest.Subject{Kind: "ServiceAccount", Name: "other", Namespace: ns})
	c.WaitForStatus(t, other, "GET", "/api/v1/namespaces/"+ns+"/pods/job-pod", 200)
	r = sidesync(t, env, "--pod-info", noPodInfo, "--service-account-dir", otherDir, "--kube-api", "--no-wait", "--quit", "never", "--", bin.testcmd, "exit", "0")
	if r.code != 0 {
		t.Errorf("after the fix: exit %d", r.code)
	}
	mustContain(t, r.stderr, "detected sidecar sidecar=linkerd from=\"the Kubernetes API, pod jobs/job-pod\"")
}
