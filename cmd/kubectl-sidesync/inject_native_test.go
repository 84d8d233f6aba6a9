package main

import (
	"github.com/sidesync/sidesync/internal/testing/corpus"
	"regexp"
	"strings"
	"testing"
)

// proxyJob is a Job whose Cloud SQL Auth Proxy has neither its health check nor its quit
// endpoint: wrapped, it still never completes; made native, it does.
const proxyJob = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: job, image: example/migrate:1, command: [migrate]}
      - {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}
`

// TestInjectNative: --native and --kube-version, end to end: what each mode makes of a proxy that
// nothing can tell to quit, the exit codes, and the refusals that name the version.
func TestInjectNative(t *testing.T) {
	tests := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		stdout   []string // in stdout; none: stdout must be empty
		stderr   []string // in stderr
		noStderr []string // not in stderr
	}{
		{"auto assumes the oldest version and converts", proxyJob, nil, 0,
			[]string{"      initContainers:\n      - name: cloud-sql-proxy\n        image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0\n        args: ['p:r:i']\n", "restartPolicy: Always"},
			[]string{autoNote, "Job/migrate: made native cloud-sql-proxy (startup probe GET :9090/startup); apps not wrapped", needsNative}, []string{"nothing fixed"}},
		{"auto for a version without native sidecars by default", proxyJob, []string{"--kube-version=v1.28.3"}, 3,
			[]string{"/sidesync/bin/sidesync"},
			[]string{"Job/migrate: wrapped job", "Job/migrate: nothing fixed: container cloud-sql-proxy: nothing can tell Cloud SQL Auth Proxy to quit"}, []string{autoNote}},
		{"never says plainly that nothing was fixed", proxyJob, []string{"--native=never"}, 3,
			[]string{"/sidesync/bin/sidesync", "- {name: cloud-sql-proxy,"},
			[]string{"so the pod never completes, wrapped or not; inject with --native to make it a native sidecar", needsOldest}, []string{autoNote, "made native"}},
		{"always with a version", proxyJob, []string{"--native=always", "--kube-version=1.29"}, 0,
			[]string{"restartPolicy: Always"}, []string{"made native cloud-sql-proxy"}, []string{autoNote}},
		{"bad --native", proxyJob, []string{"--native=yes"}, 2, nil, []string{`--native "yes": not auto, always or never`}, nil},
		{"bad --kube-version", proxyJob, []string{"--kube-version=2.1"}, 2, nil, []string{`--kube-version: not a Kubernetes version, "2.1"`}, nil},
		{"an image volume before 1.35", proxyJob, []string{"--delivery=image-volume", "--kube-version=1.33"}, 2, nil,
			[]string{"--delivery image-volume: image volumes need Kubernetes 1.35 or newer; this is for 1.33"}, nil},
		{"native sidecars before 1.29", proxyJob, []string{"--native=always", "--kube-version=1.28"}, 2, nil,
			[]string{"--native always: native sidecars (init containers with restartPolicy: Always) need Kubernetes 1.29 or newer; this is for 1.28"}, nil},
		{"restart rules the manifest uses, before 1.35", strings.Replace(proxyJob, "command: [migrate]}", "command: [migrate], restartPolicy: Never}", 1),
			[]string{"--kube-version=1.34"}, 2, nil, []string{"Job/migrate: container restart rules (restartPolicyRules) need Kubernetes 1.35 or newer; this is for 1.34"}, nil},
		{"an image volume says what it needs", proxyJob, []string{"--delivery=image-volume", "--native=never", "--kube-version=1.35"}, 3, []string{"reference: ghcr.io/sidesync/sidesync:v9.9.9"},
			[]string{"the output needs Kubernetes 1.35 or newer (the oldest sidesync supports; image volumes 1.35)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := injectRun(t, tt.stdin, append([]string{injectImage}, tt.args...)...)
			if code != tt.code || (len(tt.stdout) == 0) != (stdout == "") {
				t.Errorf("exit %d, stdout %d bytes; want %d, stdout %v\nstderr:\n%s", code, len(stdout), tt.code, len(tt.stdout) > 0, stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.noStderr {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestInjectNativeLintClean: every manifest of the corpus and the examples in which inject made
// a sidecar native passes lint with no error and no warning once injected.
func TestInjectNativeLintClean(t *testing.T) {
	inputs := map[string][]byte{"proxyJob": []byte(proxyJob)}
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		inputs[m.Name] = m.Data
	}
	converted := 0
	for name, data := range inputs {
		injected := runAs([]string{"inject", "-f", "-"}, data)
		if injected.code != 0 || !strings.Contains(injected.stderr, "made native") {
			continue
		}
		converted++
		linted := runAs([]string{"lint", "-f", "-"}, []byte(injected.stdout))
		if linted.code != 0 || !regexp.MustCompile(`(?m)^0 errors, 0 warnings in `).MatchString(linted.stderr) {
			t.Errorf("%s: lint of the injected output: %s", name, linted)
		}
	}
	if converted < 2 {
		t.Errorf("only %d manifests had a sidecar made native", converted)
	}
}
