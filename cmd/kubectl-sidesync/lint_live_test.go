package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// testLintCluster: lint -n reads a namespace's Jobs from the API server, with what the
// namespace asks the meshes for; -A every namespace's; each finding names its namespace.
func testLintCluster(t *testing.T, c *kubetest.Cluster, admin string) {
	c.CreateNamespace(t, "lint-a")
	c.CreateNamespaceLabelled(t, "lint-b", map[string]string{"istio-injection": "enabled"})
	job := func(text string) map[string]any {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	c.Create(t, "/apis/batch/v1/namespaces/lint-a/jobs", job(lintHangs))
	c.Create(t, "/apis/batch/v1/namespaces/lint-b/jobs", job(lintWarns))
	lint := func(args ...string) ran {
		var out, errOut bytes.Buffer
		code := run(append([]string{"lint", "--kubeconfig", admin}, args...), devBuild, strings.NewReader(""), &out, &errOut)
		return ran{code, out.String(), errOut.String()}
	}
	r := lint("-n", "lint-a")
	if r.code != 1 || !strings.Contains(r.stdout, "Job/report -n lint-a: error: container cloud-sql-proxy") || r.stderr != "2 errors, 1 warning in 1 object\n" {
		t.Errorf("lint -n lint-a: want exit 1 and the Job's findings:\n%s", r)
	}
	r = lint("-A", "-o", "json")
	var doc struct {
		Findings []struct{ Namespace, Object, Rule string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 {
		t.Fatalf("lint -A -o json: %v\n%s", err, r)
	}
	seen := map[string]bool{}
	for _, f := range doc.Findings {
		seen[f.Namespace+" "+f.Object+" "+f.Rule] = true
	}
	// lint-b asks for Istio's sidecar, which the Job's manifest does not show.
	for _, want := range []string{"lint-a Job/report cloudsql-no-quitquitquit", "lint-b Job/logs sidecar-never-quits"} {
		if !seen[want] {
			t.Errorf("lint -A: no finding %q in %v\n%s", want, seen, r)
		}
	}
	if r := lint("-n", "lint-a", "-f", "-"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "-f reads files and -n, -A, --context or --kubeconfig the cluster: give one") {
		t.Errorf("lint -n -f: want exit 2, nothing on stdout:\n%s", r)
	}
}
