package inject

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"

	"github.com/google/go-cmp/cmp"
)

// podWith is a Pod with these containers and init containers (YAML flow lists).
func podWith(containers, inits string) string {
	y := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers: " + containers + "\n"
	if inits != "" {
		y += "  initContainers: " + inits + "\n"
	}
	return y
}

// TestSidecarsAreNeverWrapped: known sidecars (by name or image, detect.Signatures), native
// sidecars and ordinary init containers are left alone, and the report says why.
func TestSidecarsAreNeverWrapped(t *testing.T) {
	out, r := apply(t, decode(t, podWith(`[
  {name: app, image: example/app, command: [run]},
  {name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0, args: [proxy]},
  {name: db-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, command: [/cloud-sql-proxy], args: [--health-check, --quitquitquit, p:r:i]},
  {name: envoy, image: 840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29, command: [envoy]},
  {name: vault-agent, image: hashicorp/vault:1.20, command: [vault, agent]}]`, `[
  {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy:edge-26.5.2, restartPolicy: Always},
  {name: logger, image: fluent/fluent-bit:4, restartPolicy: Always},
  {name: migrate, image: example/migrate, command: [migrate]}]`)), opts(), nil)
	want := []Left{
		{"linkerd-proxy", "a native sidecar: linkerd"},
		{"logger", "a native sidecar"},
		{"migrate", "an init container"},
		{"istio-proxy", "a known sidecar: istio"},
		{"db-proxy", "a known sidecar: cloudsql"},
		{"envoy", "a known sidecar: appmesh"},
		{"vault-agent", "a known sidecar: vault"},
	}
	if diff := cmp.Diff(want, r.Left); diff != "" || !cmp.Equal(r.Wrapped, []string{"app"}) {
		t.Errorf("report %q; Left (-want +got):\n%s", r, diff)
	}
	for i := 1; i <= 4; i++ {
		if cmd := at(t, out, "spec", "containers", i, "command"); cmd != nil && cmp.Equal(cmd, []any{contract.Binary}) {
			t.Errorf("container %d was wrapped", i)
		}
	}
	inits := at(t, out, "spec", "initContainers").([]any)
	if len(inits) != 4 || at(t, inits, 0, "name") != contract.InitContainer || at(t, inits, 3, "command", 0) != "migrate" {
		t.Errorf("initContainers: want %s first, then the three as they were; got %v", contract.InitContainer, inits)
	}
}

// TestContainersOption: --containers wraps only the containers named; a name that is not a
// regular container, or names a sidecar, is an error naming it.
func TestContainersOption(t *testing.T) {
	y := podWith(`[{name: a, image: x, command: [a]}, {name: b, image: x, command: [b]}, {name: istio-proxy, image: i}]`,
		`[{name: init, image: x, command: [i]}]`)
	o := opts()
	o.Containers = []string{"b"}
	out, r := apply(t, decode(t, y), o, nil)
	if !cmp.Equal(r.Wrapped, []string{"b"}) || at(t, out, "spec", "containers", 0, "command", 0) != "a" {
		t.Errorf("--containers b: report %q", r)
	}
	if !cmp.Equal(r.Left[1], Left{"a", "not selected"}) {
		t.Errorf("Left %v, want a not selected", r.Left)
	}
	for _, tt := range []struct{ name, want string }{
		{"c", "no app container c (the app containers are a, b)"},
		{"init", "container init is an init container"},
		{"istio-proxy", "container istio-proxy is a sidecar: sidesync never wraps sidecars"},
	} {
		o.Containers = []string{"a", tt.name}
		if _, _, err := Apply(decode(t, y), manifest.TypeMeta{}, o, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--containers a,%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestRestartEnv: the wrapper learns the container's effective restart policy and its restart
// rules; inject's own entries are replaced, the user's kept in place.
func TestRestartEnv(t *testing.T) {
	tests := []struct {
		name, podPolicy, container string
		want                       []any
	}{
		{"the pod's policy", "Never", `{name: a, command: [x], env: [{name: A, value: "1"}]}`,
			[]any{env("A", "1"), env(contract.Env(contract.FlagRestartPolicy), "Never")}},
		{"a Pod defaults to Always", "", `{name: a, command: [x]}`,
			[]any{env(contract.Env(contract.FlagRestartPolicy), "Always")}},
		{"the container's own policy wins", "Never", `{name: a, command: [x], restartPolicy: OnFailure}`,
			[]any{env(contract.Env(contract.FlagRestartPolicy), "OnFailure")}},
		{"rules, copied as JSON", "Never", `{name: a, command: [x], restartPolicy: Never, restartPolicyRules: [
			{action: Restart, exitCodes: {operator: NotIn, values: [0, 1]}}]}`,
			[]any{env(contract.Env(contract.FlagRestartPolicy), "Never"), env(contract.Env(contract.FlagRestartRules), `[{"action":"Restart","exitCodes":{"operator":"NotIn","values":[0,1]}}]`)}},
		{"stale entries replaced", "OnFailure", `{name: a, command: [x], env: [{name: SIDESYNC_RESTART_POLICY, value: Never},
			{name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}, {name: SIDESYNC_RESTART_RULES, value: "[]"}]}`,
			[]any{map[string]any{"name": "B", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
				env(contract.Env(contract.FlagRestartPolicy), "OnFailure")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [" + tt.container + "]}"
			in := decode(t, y)
			if tt.podPolicy != "" {
				in["spec"].(map[string]any)["restartPolicy"] = tt.podPolicy
			}
			out, _ := apply(t, in, opts(), nil)
			if diff := cmp.Diff(tt.want, at(t, roundTrip(t, out), "spec", "containers", 0, "env")); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func env(name, value string) any { return map[string]any{"name": name, "value": value} }

// TestSidecarsAnnotation: the sidecars the manifest shows are recorded in --sidecar syntax,
// native ones marked, the Cloud SQL Auth Proxy's ports read from its flags; the wrapper gets
// no --sidecar for them.
func TestSidecarsAnnotation(t *testing.T) {
	tests := []struct{ name, containers, inits, want string }{
		{"istio, cloudsql on custom ports, native linkerd with a startup probe",
			`[{name: app, image: a, command: [x]}, {name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0},
			  {name: sql, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--health-check, --http-port=9190, --quitquitquit, --admin-port=9191, p:r:i]}]`,
			`[{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy:edge, restartPolicy: Always, startupProbe: {httpGet: {port: 4191}}}]`,
			"linkerd:native=true,startup-probe=true,istio,cloudsql:ready-port=9190,quit-port=9191"},
		{"native istio without a startup probe", `[{name: app, image: a, command: [x]}]`,
			`[{name: istio-proxy, image: istio/proxyv2, restartPolicy: Always}]`, "istio:native=true"},
		{"cloudsql without its health checks and quit endpoint",
			`[{name: app, image: a, command: [x]}, {name: sql, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]`, "",
			"cloudsql:ready=none,quit=none"},
		{"the same sidecar twice, once", `[{name: app, image: a, command: [x]}, {name: s1, image: cloud-sql-proxy:2}, {name: s2, image: cloud-sql-proxy:2}]`, "",
			"cloudsql:ready=none,quit=none"},
		{"no sidecar", `[{name: app, image: a, command: [x]}]`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, r := apply(t, decode(t, podWith(tt.containers, tt.inits)), opts(), nil)
			ann := at(t, out, "metadata", "annotations").(map[string]any)
			got, _ := ann[contract.FoundAnnotation].(string)
			if got != tt.want || strings.Join(r.Sidecars, ",") != tt.want {
				t.Errorf("%s = %q (report %q), want %q", contract.FoundAnnotation, got, r.Sidecars, tt.want)
			}
			if diff := cmp.Diff([]any{"--pod-info=" + contract.PodInfoDir, "--", "x"}, at(t, out, "spec", "containers", 0, "args")); diff != "" {
				t.Errorf("wrapper args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnnotationsFollowTheManifest: re-injecting after a sidecar was removed drops it from
// the annotation; contract.WrappedAnnotation lists every wrapped container.
func TestAnnotationsFollowTheManifest(t *testing.T) {
	out, _ := apply(t, decode(t, podWith(`[{name: a, image: x, command: [a]}, {name: istio-proxy, image: i}]`, "")), opts(), nil)
	out = roundTrip(t, out)
	spec := out["spec"].(map[string]any)
	spec["containers"] = append(spec["containers"].([]any)[:1], map[string]any{"name": "b", "image": "x", "command": []any{"b"}})
	again, r := apply(t, out, opts(), nil)
	ann := at(t, again, "metadata", "annotations").(map[string]any)
	if _, ok := ann[contract.FoundAnnotation]; ok {
		t.Errorf("%s still there: %v", contract.FoundAnnotation, ann)
	}
	if got := ann[contract.InjectedAnnotation]; got != "v1.2.3 init-copy" {
		t.Errorf("%s = %q, want %q", contract.InjectedAnnotation, got, "v1.2.3 init-copy")
	}
	if got := ann[contract.WrappedAnnotation]; got != "a,b" {
		t.Errorf("%s = %q, want %q", contract.WrappedAnnotation, got, "a,b")
	}
	if !cmp.Equal(r.Wrapped, []string{"b"}) || !cmp.Equal(r.AlreadyWrapped, []string{"a"}) {
		t.Errorf("report %q", r)
	}
}

// TestNeverTwice: a container that runs sidesync by hand is not wrapped in another sidesync,
// and a Windows pod is left alone.
func TestNeverTwice(t *testing.T) {
	_, r := apply(t, decode(t, podWith(`[{name: a, image: x, command: [/sidesync, --sidecar, istio, --, job]}, {name: b, image: x, command: [b]}]`, "")), opts(), nil)
	if !cmp.Equal(r.Left, []Left{{"a", "runs sidesync already"}}) || !cmp.Equal(r.Wrapped, []string{"b"}) {
		t.Errorf("hand-wrapped: report %q", r)
	}
	in := decode(t, podWith(`[{name: a, image: x, command: [a]}]`, ""))
	in["spec"].(map[string]any)["os"] = map[string]any{"name": "windows"}
	out, r := apply(t, in, opts(), nil)
	if r.Injected || r.String() != "Pod/p: passed through (a Windows pod: sidesync runs on Linux)" || !cmp.Equal(in, out) {
		t.Errorf("windows: report %q", r)
	}
}
