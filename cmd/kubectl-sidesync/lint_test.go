package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Manifests for the exit-code table.
const (
	lintHangs = `apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: job, image: example/report, command: [python, job.py]}
      - {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1, args: [my:project:db]}
`
	lintWarns = `apiVersion: batch/v1
kind: Job
metadata: {name: logs}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: job, image: example/report}]
      initContainers: [{name: fluent-bit, image: fluent/fluent-bit, restartPolicy: Always}]
`
	lintClean = `apiVersion: batch/v1
kind: Job
metadata: {name: meshed}
spec:
  template:
    metadata:
      annotations: {linkerd.io/inject: enabled, config.linkerd.io/proxy-admin-shutdown: enabled}
    spec:
      restartPolicy: Never
      containers: [{name: job, image: example/report, command: [/sidesync/bin/sidesync, "--"], args: [python, job.py]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: nginx}, {name: istio-proxy, image: istio/proxyv2}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: skipped}
`
)

// lintRun runs `kubectl-sidesync lint ARGS` with stdin and returns the exit code and outputs.
func lintRun(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"lint"}, args...), devBuild, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestLintExitCodes: 1 when an error is found, 0 otherwise (warnings alone too), 2 for
// unreadable input or bad flags; the findings on stdout, the summary on stderr.
func TestLintExitCodes(t *testing.T) {
	dir := t.TempDir()
	hangs := filepath.Join(dir, "hangs.yaml")
	if err := os.WriteFile(hangs, []byte(lintHangs), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantOut    string // a piece of stdout; "" means empty
		wantStderr string // a piece of stderr
	}{
		{"an error, stdin", lintHangs, nil, 1, "Job/report: error: container cloud-sql-proxy (Cloud SQL Auth Proxy) is a classic sidecar whose /quitquitquit endpoint (--quitquitquit) is off", "2 errors, 1 warning in 1 object\n"},
		{"an error, -f -", lintHangs, []string{"-f", "-"}, 1, "Job/report: error:", "2 errors, 1 warning in 1 object"},
		{"an error, -f FILE", "", []string{"-f", hangs}, 1, "Job/report: error:", "2 errors, 1 warning in 1 object"},
		{"an error, --filename=FILE", "", []string{"--filename=" + hangs}, 1, "Job/report: error:", "2 errors"},
		{"two files, one of them stdin", lintWarns, []string{"-f", hangs, "-f", "-"}, 1, "Job/logs: warning:", "2 errors, 2 warnings in 2 objects"},
		{"warnings alone", lintWarns, nil, 0, "Job/logs: warning: container fluent-bit is a native sidecar without a startupProbe", "0 errors, 1 warning in 1 object"},
		{"clean", lintClean, nil, 0, "", "0 errors, 0 warnings in 2 objects"},
		{"nothing to read", "", nil, 0, "", "0 errors, 0 warnings in 0 objects"},
		{"info is printed, not counted", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: b}]}\n", nil, 0,
			"Pod/p: info: no sidecar found", "0 errors, 0 warnings in 1 object"},
		{"YAML that cannot be read", "kind: [\n", nil, 2, "", "kubectl sidesync lint: stdin: document 1"},
		{"a second document that cannot be read", lintHangs + "---\nhello\n", nil, 2, "", "stdin: document 2: not an object (a mapping with apiVersion and kind)"},
		{"a container name the API server refuses", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: Main_1, image: x, command: [run]}]}\n",
			nil, 2, "", `stdin: document 1: Pod/p: spec.containers[0].name: "Main_1" is not a container name`},
		{"a file that is not there", "", []string{"-f", filepath.Join(dir, "missing.yaml")}, 2, "", `the path "` + filepath.Join(dir, "missing.yaml") + `" does not exist`},
		{"an unknown flag", "", []string{"--bogus"}, 2, "", "error: unknown flag: --bogus\nSee 'kubectl sidesync lint --help' for usage.\n"},
		{"an unknown output", lintHangs, []string{"-o", "xml"}, 2, "", `error: unable to match a printer suitable for the output format "xml", allowed formats are: text,json,yaml` + "\nSee 'kubectl sidesync lint -h' for help and examples\n"},
		{"a stray argument", lintHangs, []string{"job.yaml"}, 2, "", `unexpected arguments ["job.yaml"]: give manifests with -f FILENAME`},
		{"-f without a value", "", []string{"-f"}, 2, "", "flag needs an argument"},
		{"help", "", []string{"--help"}, 0, "Usage:\n  kubectl sidesync lint [-f FILENAME | -n NAMESPACE | -A] [flags]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := lintRun(tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			if tt.wantOut == "" && out != "" || !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout:\n%s\nwant it to hold %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("stderr:\n%s\nwant it to hold %q", errOut, tt.wantStderr)
			}
		})
	}
}

// TestLintOutputText: one finding per line, nothing else on stdout; the summary alone on stderr.
func TestLintOutputText(t *testing.T) {
	_, out, errOut := lintRun(lintHangs + "---\n" + lintWarns)
	want := []string{
		"Job/report: error: container cloud-sql-proxy (Cloud SQL Auth Proxy) is a classic sidecar and nothing tells it to quit: it keeps running after the app ends, so the Job never completes; wrap the apps with sidesync (kubectl sidesync inject; an app without a command needs --resolve), or run it as a native sidecar, as kubectl sidesync inject --native does: move it into initContainers with restartPolicy: Always, startupProbe: {httpGet: {path: /startup, port: 9090}}, and env CSQL_PROXY_HEALTH_CHECK=true, CSQL_PROXY_HTTP_ADDRESS=0.0.0.0",
		"Job/report: error: container cloud-sql-proxy (Cloud SQL Auth Proxy) is a classic sidecar whose /quitquitquit endpoint (--quitquitquit) is off: nothing can tell it to quit, so the Job never completes; add --quitquitquit (and --admin-port if 9091 is taken), or run it as a native sidecar, as kubectl sidesync inject --native does: move it into initContainers with restartPolicy: Always, startupProbe: {httpGet: {path: /startup, port: 9090}}, and env CSQL_PROXY_HEALTH_CHECK=true, CSQL_PROXY_HTTP_ADDRESS=0.0.0.0",
		"Job/report: warning: container cloud-sql-proxy (Cloud SQL Auth Proxy) runs without its health check (--health-check): sidesync cannot wait for it, so the app may start before it is ready; add --health-check (and --http-port if 9090 is taken)",
		"Job/logs: warning: container fluent-bit is a native sidecar without a startupProbe: Kubernetes starts the app as soon as the sidecar's process runs, ready or not; add a startupProbe, or wrap the apps with sidesync and name this sidecar (--sidecar http:ready=URL)",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out, "\n"), "\n")); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if errOut != "2 errors, 2 warnings in 2 objects\n" {
		t.Errorf("stderr = %q, want the summary alone", errOut)
	}
}

// TestLintOutputJSON: --output json is one document with the findings and the counts.
func TestLintOutputJSON(t *testing.T) {
	code, out, _ := lintRun(lintHangs, "--output", "json")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	var got struct {
		Findings []struct {
			Object, Severity, Rule, Container, Message, Fix string
		}
		Errors, Warnings, Objects int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if got.Errors != 2 || got.Warnings != 1 || got.Objects != 1 || len(got.Findings) != 3 {
		t.Fatalf("got %+v, want 2 errors, 1 warning, 1 object, 3 findings", got)
	}
	f := got.Findings[1]
	if f.Object != "Job/report" || f.Severity != "error" || f.Rule != "cloudsql-no-quitquitquit" || f.Container != "cloud-sql-proxy" || f.Fix == "" {
		t.Errorf("second finding = %+v", f)
	}
	_, out, _ = lintRun(lintClean, "-o", "json")
	if !strings.Contains(out, `"findings": []`) {
		t.Errorf("no findings: got\n%s\nwant an empty list, not null", out)
	}
}
