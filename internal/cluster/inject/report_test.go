package inject

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
)

func TestReportString(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want string
	}{
		{"passed through", Report{Object: "ConfigMap/c", Reason: "kind ConfigMap v1 is not injected"},
			"ConfigMap/c: passed through (kind ConfigMap v1 is not injected)"},
		{"wrapped, sidecars left", Report{Object: "Job/report", Injected: true, Changed: true, Delivery: InitCopy,
			Wrapped: []string{"job", "worker"}, Left: []Left{{"istio-proxy", "a known sidecar: istio"}, {"cloud-sql-proxy", "a known sidecar: cloudsql"}}},
			"Job/report: wrapped job, worker (init-copy); left istio-proxy (a known sidecar: istio), cloud-sql-proxy (a known sidecar: cloudsql)"},
		{"injected before", Report{Object: "Pod/p", Injected: true, Delivery: ImageVolume, AlreadyWrapped: []string{"app"}},
			"Pod/p: unchanged: app already wrapped (image-volume)"},
		{"delivery switched", Report{Object: "Pod/p", Injected: true, Changed: true, Delivery: ImageVolume, AlreadyWrapped: []string{"app"}},
			"Pod/p: app already wrapped (image-volume)"},
		{"one more", Report{Object: "Pod/p", Injected: true, Changed: true, Delivery: InitCopy, Wrapped: []string{"b"}, AlreadyWrapped: []string{"a"}},
			"Pod/p: wrapped b, a already wrapped (init-copy)"},
		{"nothing", Report{Object: "Pod/p", Injected: true, Left: []Left{{"app", "no command"}}},
			"Pod/p: wrapped nothing; left app (no command)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.String(); got != tt.want {
				t.Errorf("String()\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string // pieces of the error; none: valid
	}{
		{"minimal", Options{Version: "v1", Image: "i"}, nil},
		{"everything", Options{Version: "v1", Image: "i", Delivery: ImageVolume, Containers: []string{"a", "b"},
			Sidecars: []string{"istio", "cloudsql:ready-port=9190,quit-port=9191", "istio,linkerd:native=true", "http:ready=http://127.0.0.1:8080/ready"}}, nil},
		{"all wrong at once", Options{Delivery: "copy", Containers: []string{"a", "a", ""}, Sidecars: []string{"mesh", "port=1", "istio:native", "istio:ready-port=70000", "http:quit=http://10.1.2.3/quit", ""}},
			[]string{`version ""`, `image ""`, `delivery "copy"`, `container "a": named twice`, `container "": not a container name`,
				`sidecar "mesh": unknown sidecar "mesh"`, `sidecar "port=1": "port=1": a setting before any sidecar name`,
				`sidecar "istio:native": "native": settings are KEY=VALUE`, `sidecar "istio:ready-port=70000": istio: ready-port="70000": not a port`,
				`sidecar "http:quit=http://10.1.2.3/quit": http: quit URL http://10.1.2.3/quit is not on a loopback address`, `sidecar "": no sidecar named`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// TestSidecarNotesAreWarnings: what detection notes about a sidecar (a Cloud SQL Auth Proxy
// without --quitquitquit) reaches the report.
func TestSidecarNotesAreWarnings(t *testing.T) {
	_, r := apply(t, decode(t, podWith(`[{name: app, image: a, command: [x]}, {name: sql, image: cloud-sql-proxy:2, args: [--health-check, p:r:i]}]`, "")), opts(), nil)
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "container sql: ") || !strings.Contains(r.Warnings[0], "--quitquitquit") {
		t.Errorf("warnings %q: want one about sql's --quitquitquit", r.Warnings)
	}
}

// TestJobWithoutRestartPolicyWarns: a Job's template needs one; the wrapper is told Always,
// as Kubernetes would default it.
func TestJobWithoutRestartPolicyWarns(t *testing.T) {
	out, r := apply(t, decode(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: [{name: a, command: [x]}]}}}}`), opts(), nil)
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "restartPolicy") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if got := at(t, out, "spec", "template", "spec", "containers", 0, "env", 0, "value"); got != "Always" {
		t.Errorf("%s = %v, want Always", contract.Env(contract.FlagRestartPolicy), got)
	}
}
