//go:build linux

package main

import (
	"path/filepath"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// podWithRestartRules is a Job pod as the API stores it: the job container is restarted in place
// on exit code 42 (a restartPolicyRule, Kubernetes 1.35+), and the Cloud SQL Auth Proxy runs
// beside it as an ordinary container.
func podWithRestartRules(sqlHTTP, sqlAdmin string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "restart-pod"},
		"spec": map[string]any{
			"serviceAccountName":           "job",
			"automountServiceAccountToken": false,
			"restartPolicy":                "Never",
			"containers": []any{
				map[string]any{"name": "job", "image": "example/job:1", "restartPolicy": "Never",
					"restartPolicyRules": []any{map[string]any{"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{42}}}}},
				map[string]any{"name": "cloud-sql-proxy", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0",
					"args": []any{"--health-check", "--http-port=" + sqlHTTP, "--quitquitquit", "--admin-port", sqlAdmin, "p:r:i"}},
			},
		},
	}
}

// TestRestartFromKubernetesAPI: with no restart setting, sidesync reads this container's
// restartPolicyRules from its Pod in a real kube-apiserver, the container named by
// SIDESYNC_CONTAINER, and keeps the sidecar for an exit that the kubelet restarts. Without the
// container's name it cannot tell (another container could be this one), says so, and quits.
func TestRestartFromKubernetesAPI(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t)
	const ns = "jobs"
	c.CreateNamespace(t, ns)
	c.CreateServiceAccount(t, ns, "job")
	csql := startProfile(t, "cloudsql")
	c.CreatePod(t, ns, podWithRestartRules(csql.port("http"), csql.port("admin")))
	c.CreateRole(t, ns, "read-own-pod", kubetest.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}})
	c.CreateRoleBinding(t, ns, "job-reads-pod", "read-own-pod", kubetest.Subject{Kind: "ServiceAccount", Name: "job", Namespace: ns})
	token := c.ServiceAccountToken(t, ns, "job")
	c.WaitForStatus(t, token, "GET", "/api/v1/namespaces/"+ns+"/pods/restart-pod", 200)
	env := []string{"KUBERNETES_SERVICE_HOST=" + c.Host, "KUBERNETES_SERVICE_PORT=" + c.Port, "HOSTNAME=restart-pod"}
	args := []string{"--pod-info", filepath.Join(t.TempDir(), "no-podinfo"), "--service-account-dir", serviceAccountDir(t, c, token, ns),
		"--", bin.testcmd, "exit", "42"}

	r := sidesync(t, append(env, "SIDESYNC_CONTAINER=job"), args...)
	if r.code != 42 {
		t.Fatalf("exit %d, want 42; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "detected sidecar sidecar=cloudsql",
		"not telling the sidecars to quit: the kubelet restarts this container in place after exit 42 (restartPolicyRules[0]: Restart when the exit code is In [42])",
		`from="the Kubernetes API, pod jobs/restart-pod, container job"`)

	r = sidesync(t, env, args...)
	if r.code != 42 || csql.waitExit() != 0 || csql.quits() != 1 {
		t.Errorf("without the container's name: exit %d, %d quits in all; want 42, 1; stderr:\n%s", r.code, csql.quits(), r.stderr)
	}
	mustContain(t, r.stderr, "cannot tell whether the kubelet restarts this container: containers job set their own restartPolicy", "quit=ok")
}
