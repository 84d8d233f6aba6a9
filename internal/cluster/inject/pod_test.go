package inject

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// wrappedArgs returns the args of the pod's container i of a Pod.
func argsOf(t *testing.T, out map[string]any, i int) []any {
	t.Helper()
	a, _ := at(t, out, "spec", "containers", i, "args").([]any)
	return a
}

// TestSeveralApps: every app container of a pod is wrapped, each told where the wrappers share
// their state and which container it is; the pod records the wrapped set, and gets the state
// volume, mounted read-write in each. One app needs none of it.
func TestSeveralApps(t *testing.T) {
	out, r := apply(t, decode(t, podWith(`[{name: main, image: x, command: [run]}, {name: uploader, image: y, command: [upload]},
		{name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0}]`, "")), opts(), nil)
	if !cmp.Equal(r.Wrapped, []string{"main", "uploader"}) {
		t.Fatalf("report %q", r)
	}
	for i, name := range []string{"main", "uploader"} {
		want := []any{"--pod-info=" + contract.PodInfoDir, "--state-dir=" + contract.StateDir, "--container=" + name, "--"}
		if got := argsOf(t, out, i); !cmp.Equal(got[:4], want) {
			t.Errorf("%s's args %q, want them to start %q", name, got, want)
		}
		mounts := at(t, out, "spec", "containers", i, "volumeMounts").([]any)
		if !slices.ContainsFunc(mounts, func(m any) bool {
			return at(t, m, "name") == contract.StateVolume && at(t, m, "mountPath") == contract.StateDir && at(t, m, "readOnly") == nil
		}) {
			t.Errorf("%s mounts %v, want the state volume read-write at %s", name, mounts, contract.StateDir)
		}
	}
	if got := at(t, out, "metadata", "annotations", contract.WrappedAnnotation); got != "main,uploader" {
		t.Errorf("%s = %q", contract.WrappedAnnotation, got)
	}
	vols := at(t, out, "spec", "volumes").([]any)
	if !slices.ContainsFunc(vols, func(v any) bool { return at(t, v, "name") == contract.StateVolume && at(t, v, "emptyDir") != nil }) {
		t.Errorf("volumes %v, want the state emptyDir", vols)
	}

	one, _ := apply(t, decode(t, podWith(`[{name: job, image: x, command: [run]}]`, "")), opts(), nil)
	if got := argsOf(t, one, 0); !cmp.Equal(got, []any{"--pod-info=" + contract.PodInfoDir, "--", "run"}) {
		t.Errorf("one app: args %q", got)
	}
	if vols := at(t, one, "spec", "volumes").([]any); len(vols) != 2 {
		t.Errorf("one app: volumes %v, want the binary's and the pod info's alone", vols)
	}
}

// TestAllOrNone: an app without a command whose image was not resolved leaves the whole pod
// unchanged, with a warning saying why: wrapping the others would let their quit cut its
// sidecars. Resolved, both are wrapped.
func TestAllOrNone(t *testing.T) {
	y := podWith(`[{name: app, image: "example/app:1"}, {name: helper, image: x, command: [help]}, {name: istio-proxy, image: istio/proxyv2}]`, "")
	in := decode(t, y)
	out, r := apply(t, in, opts(), nil)
	if diff := cmp.Diff(in, out); diff != "" || r.Changed || len(r.Wrapped) > 0 {
		t.Errorf("report %q; the pod changed:\n%s", r, diff)
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "container app has no command") || !strings.Contains(r.Warnings[1], "no container of the pod is wrapped") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if !strings.Contains(r.String(), "left unchanged (an app container cannot be wrapped)") {
		t.Errorf("String() = %q", r)
	}
	eps := Entrypoints{"example/app:1": {Platforms: map[string]ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}}}}}
	if _, r := apply(t, in, opts(), eps); !cmp.Equal(r.Wrapped, []string{"app", "helper"}) {
		t.Errorf("resolved: report %q", r)
	}
}

// TestNotSelected: --containers leaves out an app; inject says that the sidecars are quit once
// the wrapped ones end, whether it runs or not.
func TestNotSelected(t *testing.T) {
	o := opts()
	o.Containers = []string{"main"}
	_, r := apply(t, decode(t, podWith(`[{name: main, image: x, command: [run]}, {name: wait, image: y, command: [wait]}]`, "")), o, nil)
	if !cmp.Equal(r.Wrapped, []string{"main"}) || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "container wait is not wrapped (not selected)") {
		t.Errorf("report %q, warnings %q", r, r.Warnings)
	}
}

// TestOrchestrators: pods shaped as Argo, Tekton and Airflow make them. Argo's main and wait
// are both wrapped (wait uploads after main, so it is the last to end); Tekton's steps are
// wrapped and its sidecars, which Tekton stops, are not; Airflow's XCom sidecar is its
// operator's to stop.
func TestOrchestrators(t *testing.T) {
	tests := []struct {
		name, file string
		wrapped    []string
		left       []Left
	}{
		{"argo", "argo.yaml", []string{"wait", "main"}, []Left{{"init", "an init container"}}},
		{"tekton", "tekton.yaml", []string{"step-build", "step-push"},
			[]Left{{"prepare", "an init container"}, {"place-scripts", "an init container"},
				{"sidecar-registry", "stopped by its orchestrator: Tekton, which stops a TaskRun's sidecars after its last step"}}},
		{"airflow", "airflow.yaml", []string{"base"},
			[]Left{{"airflow-xcom-sidecar", "stopped by its orchestrator: Airflow's KubernetesPodOperator, which stops it after the task's container ends"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("../../../deploy/examples/plain", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, r := apply(t, decode(t, stripComments(string(src))), opts(), nil)
			if !cmp.Equal(r.Wrapped, tt.wrapped) {
				t.Errorf("wrapped %q, want %q", r.Wrapped, tt.wrapped)
			}
			if diff := cmp.Diff(tt.left, r.Left); diff != "" {
				t.Errorf("left (-want +got):\n%s", diff)
			}
		})
	}
}

// stripComments drops a file's leading comment lines (decode reads one document).
func stripComments(s string) string {
	for strings.HasPrefix(s, "#") {
		_, s, _ = strings.Cut(s, "\n")
	}
	return s
}

// TestOSMEnvoy: in a pod as Open Service Mesh's webhook leaves it (the osm-proxy-uuid label and
// a container envoy with a command), envoy is OSM's sidecar, never wrapped.
func TestOSMEnvoy(t *testing.T) {
	y := `apiVersion: v1
kind: Pod
metadata: {name: p, labels: {osm-proxy-uuid: 5f3e8c1a}}
spec:
  restartPolicy: Never
  initContainers: [{name: osm-init, image: openservicemesh/init:v1.2.0, command: [/bin/sh, -c, iptables-restore]}]
  containers:
  - {name: job, image: x, command: [run]}
  - {name: envoy, image: envoyproxy/envoy-distroless:v1.24.1, command: [envoy], args: [--config-path, /etc/envoy/bootstrap.yaml]}
`
	out, r := apply(t, decode(t, y), opts(), nil)
	if !cmp.Equal(r.Wrapped, []string{"job"}) || !slices.Contains(r.Left, Left{"envoy", "a known sidecar: osm"}) {
		t.Errorf("report %q", r)
	}
	if got := at(t, out, "metadata", "annotations", contract.FoundAnnotation); got != "osm" {
		t.Errorf("%s = %q, want osm", contract.FoundAnnotation, got)
	}
}

// TestNativeOnly: a pod whose sidecars are all native with startup probes is left unwrapped,
// saying why; --force wraps it anyway.
func TestNativeOnly(t *testing.T) {
	y := podWith(`[{name: job, image: x, command: [run]}]`, `[{name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0,
		restartPolicy: Always, args: [--health-check, --http-address=0.0.0.0, p:r:i], startupProbe: {httpGet: {path: /startup, port: 9090}}}]`)
	in := decode(t, y)
	out, r := apply(t, in, opts(), nil)
	if r.Changed || len(r.Wrapped) > 0 || !cmp.Equal(in, out) || !strings.Contains(r.Reason, "native with a startup probe") || !strings.Contains(r.Reason, "--force") {
		t.Errorf("report %q", r)
	}
	o := opts()
	o.Force = true
	if _, r := apply(t, in, o, nil); !cmp.Equal(r.Wrapped, []string{"job"}) {
		t.Errorf("--force: report %q", r)
	}
	noProbe := decode(t, strings.Replace(y, ", startupProbe: {httpGet: {path: /startup, port: 9090}}", "", 1))
	if _, r := apply(t, noProbe, opts(), nil); !cmp.Equal(r.Wrapped, []string{"job"}) {
		t.Errorf("a native sidecar without a startup probe, which sidesync waits for: report %q", r)
	}
}

// TestOwnedNames: a volume, a mount or a container that bears a name or path sidesync owns but
// that inject did not add is an error naming it; nothing is replaced.
func TestOwnedNames(t *testing.T) {
	const app = `{name: app, image: x, command: [run]`
	tests := []struct{ name, containers, inits, volumes, want string }{
		{"a user volume named sidesync-bin", app + `, volumeMounts: [{name: sidesync-bin, mountPath: /data}]}`, "", `[{name: sidesync-bin, secret: {secretName: s}}]`,
			"spec.volumes[0]: the volume sidesync-bin belongs to sidesync"},
		{"sidesync-podinfo mounted in a sidecar", app + `}, {name: istio-proxy, image: istio/proxyv2, volumeMounts: [{name: sidesync-podinfo, mountPath: /etc/x}]}`, "", "",
			"spec.containers[1].volumeMounts[0]: the volume sidesync-podinfo belongs to sidesync"},
		{"a regular container named sidesync-install", app + `}, {name: sidesync-install, image: x, command: [run]}`, "", "",
			"spec.containers[1]: the container name sidesync-install belongs to sidesync"},
		{"an init container named sidesync-install", app + `}`, `[{name: sidesync-install, image: busybox, command: [cp, a, b]}]`, "",
			"spec.initContainers[0]: the container name sidesync-install belongs to sidesync"},
		{"a user mount at /sidesync/podinfo", app + `, volumeMounts: [{name: cfg, mountPath: /sidesync/podinfo}]}`, "", `[{name: cfg, configMap: {name: c}}]`,
			"spec.containers[0].volumeMounts[0]: the path /sidesync/podinfo belongs to sidesync"},
		{"a state volume that is no emptyDir in an injected pod", app + `}`, "", `[{name: sidesync-state, hostPath: {path: /tmp}}]`,
			"the volume sidesync-state belongs to sidesync"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := podWith(`[`+tt.containers+`]`, tt.inits)
			if tt.volumes != "" {
				y += "  volumes: " + tt.volumes + "\n"
			}
			in := decode(t, y)
			if strings.Contains(tt.name, "injected") {
				in["metadata"].(map[string]any)["annotations"] = map[string]any{contract.InjectedAnnotation: "v1.2.3 init-copy"}
			}
			if out, r, err := Apply(in, manifest.TypeMeta{}, opts(), nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v (report %q, out %v), want %q", err, r, out != nil, tt.want)
			}
		})
	}
	// A mount elsewhere, in a container inject does not wrap, is the user's business.
	y := podWith(`[`+app+`}, {name: istio-proxy, image: istio/proxyv2, volumeMounts: [{name: cfg, mountPath: /sidesync/x}]}]`, "") + "  volumes: [{name: cfg, emptyDir: {}}]\n"
	apply(t, decode(t, y), opts(), nil)
}

// TestUserSidecarsAnnotation: the user's own sidesync.io/sidecars (a Vault agent on another
// port, say) is kept as it is; inject records its own findings apart.
func TestUserSidecarsAnnotation(t *testing.T) {
	in := decode(t, podWith(`[{name: app, image: x, command: [run]}, {name: sql, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--quitquitquit]}]`, ""))
	in["metadata"].(map[string]any)["annotations"] = map[string]any{contract.SidecarsAnnotation: "vault:quit-port=8201"}
	for range 2 {
		out, _ := apply(t, in, opts(), nil)
		ann := at(t, out, "metadata", "annotations").(map[string]any)
		if ann[contract.SidecarsAnnotation] != "vault:quit-port=8201" || ann[contract.FoundAnnotation] != "cloudsql:ready=none" {
			t.Errorf("annotations %v", ann)
		}
		in = roundTrip(t, out)
	}
}

// TestReinject: a container wrapped before is brought up to date: the flags inject owns are
// rewritten (a wrapper without --pod-info gets it, a new --sidecar lands, an old one goes),
// the user's own flags and the command stay, and the report says it was updated.
func TestReinject(t *testing.T) {
	y := podWith(`[{name: app, image: x, command: [`+contract.Binary+`], args: [--timeout=5m, --sidecar=istio, --, run, --fast]}]`, "")
	in := decode(t, y)
	in["metadata"].(map[string]any)["annotations"] = map[string]any{contract.InjectedAnnotation: "v1.0.0 init-copy app"}
	o := opts()
	o.Sidecars = []string{"linkerd"}
	out, r := apply(t, in, o, nil)
	want := []any{"--pod-info=" + contract.PodInfoDir, "--sidecar=linkerd", "--timeout=5m", "--", "run", "--fast"}
	if got := argsOf(t, out, 0); !cmp.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	if !cmp.Equal(r.Updated, []string{"app"}) || !strings.Contains(r.String(), "app already wrapped, updated app") {
		t.Errorf("report %q", r)
	}
	again, r2 := apply(t, roundTrip(t, out), o, nil)
	if r2.Changed || len(r2.Updated) > 0 || !cmp.Equal(roundTrip(t, again), roundTrip(t, out)) {
		t.Errorf("second inject: report %q", r2)
	}
}

// TestInstallContainer: requests equal limits for cpu and memory (a Guaranteed pod stays
// Guaranteed; a quota on limits.cpu admits it), and no user is fixed (OpenShift's
// restricted-v2 picks one; the image's numeric user satisfies runAsNonRoot).
func TestInstallContainer(t *testing.T) {
	out, _ := apply(t, decode(t, podWith(`[{name: app, image: x, command: [run]}]`, "")), opts(), nil)
	c := at(t, out, "spec", "initContainers", 0).(map[string]any)
	res := c["resources"].(map[string]any)
	for _, k := range []string{"cpu", "memory"} {
		req, lim := at(t, res, "requests", k), at(t, res, "limits", k)
		if req == nil || req != lim {
			t.Errorf("%s: request %v, limit %v; want both, equal", k, req, lim)
		}
	}
	sc := c["securityContext"].(map[string]any)
	if _, ok := sc["runAsUser"]; ok || sc["runAsNonRoot"] != true {
		t.Errorf("securityContext %v: want runAsNonRoot and no runAsUser", sc)
	}
}

// TestUnsupportedAPIVersion: a CronJob of an API version Kubernetes no longer serves passes
// through, saying to upgrade it; lint says the same (internal/cluster/lint).
func TestUnsupportedAPIVersion(t *testing.T) {
	in := decode(t, `{apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: a, command: [x]}]}}}}}}`)
	out, r := apply(t, in, opts(), nil)
	if r.Injected || !cmp.Equal(in, out) || r.String() != "CronJob/c: passed through (apiVersion batch/v1beta1 is not served since Kubernetes 1.25: upgrade it to batch/v1)" {
		t.Errorf("report %q", r)
	}
}

// TestListItemType: an item of a typed List without a kind is of the list's kind, as kubectl
// reads it.
func TestListItemType(t *testing.T) {
	item := decode(t, `{metadata: {name: p}, spec: {restartPolicy: Never, containers: [{name: a, command: [x]}]}}`)
	_, r, err := Apply(item, manifest.TypeMeta{APIVersion: "v1", Kind: "Pod"}, opts(), nil)
	if err != nil || !cmp.Equal(r.Wrapped, []string{"a"}) || r.Object != "Pod/p" {
		t.Errorf("report %q, %v", r, err)
	}
}

// TestCloudSQLByEnvironment: the Cloud SQL Auth Proxy configured by its CSQL_PROXY_ variables,
// as its own example and its operator do, is recorded with its endpoints on.
func TestCloudSQLByEnvironment(t *testing.T) {
	out, _ := apply(t, decode(t, podWith(`[{name: app, image: x, command: [run]}, {name: sql, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0,
		env: [{name: CSQL_PROXY_QUITQUITQUIT, value: "true"}, {name: CSQL_PROXY_ADMIN_PORT, value: "9192"},
		{name: CSQL_PROXY_HEALTH_CHECK, value: "true"}, {name: CSQL_PROXY_HTTP_PORT, value: "9190"}]}]`, "")), opts(), nil)
	if got := at(t, out, "metadata", "annotations", contract.FoundAnnotation); got != "cloudsql:ready-port=9190,quit-port=9192" {
		t.Errorf("%s = %q", contract.FoundAnnotation, got)
	}
}

// TestStrippedVolume: a webhook that decodes pods into types older than the image volume source
// (Kubernetes 1.31) writes sidesync's image volume back with its name alone; inject, invoked
// again (reinvocationPolicy IfNeeded), puts the source back. Only a volume with no source at
// all is taken for a stripped one: with any other source it is the user's (TestOwnedNames).
func TestStrippedVolume(t *testing.T) {
	o := opts()
	o.Delivery = ImageVolume
	out, _ := apply(t, decode(t, podWith(`[{name: app, image: x, command: [run]}]`, "")), o, nil)
	stripped := roundTrip(t, out)
	vols := at(t, stripped, "spec", "volumes").([]any)
	for i, v := range vols {
		if manifest.Str(v.(map[string]any), "name") == contract.BinVolume {
			vols[i] = map[string]any{"name": contract.BinVolume}
		}
	}
	again, r := apply(t, stripped, o, nil)
	if !r.Changed || !cmp.Equal(roundTrip(t, again), roundTrip(t, out)) {
		t.Errorf("the stripped volume is not restored: report %q\n%s", r, toYAML(t, again))
	}
}
