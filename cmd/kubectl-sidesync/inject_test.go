package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// devBuild is a development build: it has no image of its own.
var devBuild = buildinfo.Info{Version: "(devel)", Commit: "unknown"}

// injectRun runs "kubectl sidesync inject ARGS" with stdin, as main would, as a development
// build.
func injectRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return injectRunAs(t, devBuild, stdin, args...)
}

// injectRunAs is injectRun as the given build.
func injectRunAs(t *testing.T, build buildinfo.Info, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"inject"}, args...), build, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

const injectJob = `apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: job, image: example/report:1.0, command: [python, job.py], args: [--date=$(DATE)]}
      - {name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0}
      - name: cloud-sql-proxy
        image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0
        args: [--health-check, --quitquitquit, p:r:i]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
`

const injectImage = "--image=ghcr.io/sidesync/sidesync:v9.9.9"

// The lines inject writes on stderr around its reports: --native auto without --kube-version,
// and the Kubernetes the output needs.
const (
	autoNote    = "kubectl sidesync inject: --native auto without --kube-version: assuming Kubernetes 1.33, the oldest sidesync supports, whose kubelets run native sidecars\n"
	needsOldest = "kubectl sidesync inject: the output needs Kubernetes 1.33 or newer (the oldest sidesync supports)\n"
	needsNative = "kubectl sidesync inject: the output needs Kubernetes 1.33 or newer (the oldest sidesync supports; native sidecars (init containers with restartPolicy: Always) 1.29)\n"
)

// TestInjectCommand runs the command line end to end: exit codes, stdout, the summary on stderr.
func TestInjectCommand(t *testing.T) {
	code, stdout, stderr := injectRun(t, injectJob, injectImage)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := autoNote +
		"Job/report: made native cloud-sql-proxy (startup probe GET :9090/startup); wrapped job (init-copy); left istio-proxy (a known sidecar: istio; " +
		"not made native: added by Istio's injector, which makes it native itself when the pod asks with sidecar.istio.io/nativeSidecar: \"true\")\n" +
		"ConfigMap/settings: passed through (kind ConfigMap v1 is not injected: only Pods, Jobs and CronJobs are)\n" + needsNative
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	for _, piece := range []string{
		"command: [/sidesync/bin/sidesync]\n        args: [--pod-info=/sidesync/podinfo, --, python, job.py, --date=$(DATE)]\n",
		"sidesync.io/found-sidecars: cloudsql:native=true,startup-probe=true,istio\n",
		"        restartPolicy: Always\n        startupProbe:\n",
		"image: ghcr.io/sidesync/sidesync:v9.9.9\n",
		"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: \"1\"}\n", // as it was, to the byte
	} {
		if !strings.Contains(stdout, piece) {
			t.Errorf("stdout lacks %q:\n%s", piece, stdout)
		}
	}
	// Injecting the output again changes nothing.
	code, again, stderr := injectRun(t, stdout, injectImage)
	if diff := cmp.Diff(stdout, again); diff != "" || code != 0 {
		t.Errorf("second inject: exit %d, stdout (-first +second):\n%s", code, diff)
	}
	if !strings.HasPrefix(stderr, autoNote+"Job/report: unchanged: job already wrapped (init-copy); left") {
		t.Errorf("second inject's summary: %s", stderr)
	}
}

// TestInjectFormats: -f FILE, JSON in and JSON out, a List's items.
func TestInjectFormats(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pod.json")
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x", "command": ["run"]}]}}`
	if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := injectRun(t, "", "-f", file, injectImage, "--delivery=image-volume")
	if code != 0 || !strings.HasPrefix(stdout, "{\n  \"apiVersion\": \"v1\",") || !strings.Contains(stdout, `"reference": "ghcr.io/sidesync/sidesync:v9.9.9"`) {
		t.Errorf("JSON file: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	list := "apiVersion: v1\nkind: List\nitems:\n- " + pod + "\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
	code, stdout, stderr = injectRun(t, list, "--filename=-", injectImage)
	want := autoNote + "Pod/p: wrapped a (init-copy)\nService/s: passed through (kind Service v1 is not injected: only Pods, Jobs and CronJobs are)\n" + needsOldest
	if code != 0 || stderr != want || strings.Count(stdout, "/sidesync/bin/sidesync") != 1 {
		t.Errorf("List: exit %d, stderr %q\nstdout:\n%s", code, stderr, stdout)
	}
}

// TestInjectErrors: bad flags and bad input exit 2, say what is wrong, and write nothing.
func TestInjectErrors(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  []string // in stderr
	}{
		{"no image in a development build", injectJob, nil, []string{"--image is required", "development build"}},
		{"bad flags, all named", injectJob, []string{injectImage, "--delivery=copy", "--platform=linux/amd64", "--sidecar=mesh", "extra"},
			[]string{`delivery "copy"`, "--platform needs --resolve", `unknown sidecar "mesh"`, `unexpected arguments ["extra"]`}},
		{"bad platform", injectJob, []string{injectImage, "--resolve", "--platform=windows/amd64", "--timeout=0s"},
			[]string{`--platform "windows/amd64": not a linux platform`, "--timeout 0s: must be positive"}},
		{"unknown flag", injectJob, []string{"--nope"}, []string{"error: unknown flag: --nope\nSee 'kubectl sidesync inject --help' for usage.\n"}},
		{"malformed YAML in document 2", "kind: ConfigMap\n---\nkind: [Job\n", []string{injectImage}, []string{"-: document 2: "}},
		{"a document that is no object", "kind: ConfigMap\n---\njust words\n", []string{injectImage}, []string{"-: document 2: not an object"}},
		{"an unknown container", injectJob, []string{injectImage, "--containers=job,jbo"},
			[]string{"document 1: Job/report: no app container jbo (the app containers are job)"}},
		{"a sidecar named", injectJob, []string{injectImage, "--containers=istio-proxy"}, []string{"container istio-proxy is a sidecar: sidesync never wraps sidecars"}},
		{"a bad object after a good one", "kind: ConfigMap\n---\n" + injectJob + "\n---\n{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: 3}}\n",
			[]string{injectImage}, []string{"document 4: Pod/p: spec.containers: not a list"}},
		{"no such file", "", []string{injectImage, "-f", "/nonexistent/job.yaml"}, []string{`the path "/nonexistent/job.yaml" does not exist`}},
		{"a container name the API server refuses", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: Main_1, image: x, command: [run]}]}\n",
			[]string{injectImage}, []string{`document 1: Pod/p: spec.containers[0].name: "Main_1" is not a container name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := injectRun(t, tt.stdin, tt.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestInjectReleaseImage: a release build defaults --image to its own image.
func TestInjectReleaseImage(t *testing.T) {
	code, stdout, stderr := injectRunAs(t, buildinfo.Info{Version: "v1.2.3", Commit: "abc"}, injectJob)
	if code != 0 || !strings.Contains(stdout, "image: ghcr.io/sidesync/sidesync:v1.2.3\n") ||
		!strings.Contains(stdout, "sidesync.io/injected: v1.2.3 init-copy\n") {
		t.Errorf("exit %d, stderr %s\nstdout:\n%s", code, stderr, stdout)
	}
}

func TestInjectHelp(t *testing.T) {
	code, stdout, stderr := injectRun(t, "", "--help")
	if code != 0 || !strings.Contains(stdout, "Usage:\n  kubectl sidesync inject [-f FILENAME] [flags]\n") || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestInjectSeveralFiles: every -f is read, and the results are written as one stream (the
// last file alone was written before).
func TestInjectSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	pod := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {restartPolicy: Never, containers: [{name: app, image: x, command: [run]}]}\n"
	}
	if err := os.WriteFile(a, []byte(pod("a")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("# b\n"+pod("b")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := injectRun(t, "", "-f", a, "--filename", b, injectImage)
	if code != 0 || stderr != autoNote+"Pod/a: wrapped app (init-copy)\nPod/b: wrapped app (init-copy)\nConfigMap/c: passed through (kind ConfigMap v1 is not injected: only Pods, Jobs and CronJobs are)\n"+needsOldest {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	docs, _, err := stream.Read(strings.NewReader(stdout))
	if err != nil || len(docs) != 3 || !strings.Contains(stdout, "\n---\n# b\napiVersion: v1\n") {
		t.Errorf("%d documents (%v):\n%s", len(docs), err, stdout)
	}
	code, _, stderr = injectRun(t, "", "-f", a, "-f", filepath.Join(dir, "missing.yaml"), injectImage)
	if code != 2 || !strings.Contains(stderr, `missing.yaml" does not exist`) {
		t.Errorf("a missing second file: exit %d, %s", code, stderr)
	}
}

// TestInjectForce: a pod whose sidecars are all native with startup probes is left unchanged,
// saying why; --force wraps it.
func TestInjectForce(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(examplesDir, "plain", "cloudsql-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := injectRun(t, string(src), injectImage)
	if code != 0 || stdout != string(src) || !strings.Contains(stderr, "left unchanged (every sidecar is native with a startup probe") {
		t.Errorf("without --force: exit %d, unchanged %v, stderr:\n%s", code, stdout == string(src), stderr)
	}
	code, stdout, stderr = injectRun(t, string(src), injectImage, "--force")
	if code != 0 || !strings.Contains(stdout, contract.Binary) || !strings.Contains(stderr, "wrapped report (init-copy)") {
		t.Errorf("--force: exit %d, stderr:\n%s", code, stderr)
	}
}
