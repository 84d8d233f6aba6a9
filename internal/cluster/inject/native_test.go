package inject

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// nativeOpts are opts with Options.Native.
func nativeOpts() Options {
	o := opts()
	o.Native = true
	return o
}

// names are the names of the pod's containers of a kind ("containers", "initContainers").
func names(t *testing.T, out map[string]any, kind string) []string {
	t.Helper()
	l, _ := at(t, out, "spec", kind).([]any)
	var n []string
	for _, c := range l {
		n = append(n, manifest.Str(c.(map[string]any), "name"))
	}
	return n
}

// containerOf is the pod's container called name, of a kind.
func containerOf(t *testing.T, out map[string]any, kind, name string) map[string]any {
	t.Helper()
	l, _ := at(t, out, "spec", kind).([]any)
	for _, c := range l {
		if m := c.(map[string]any); manifest.Str(m, "name") == name {
			return m
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, names(t, out, kind))
	return nil
}

const proxyV2 = `{name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [--quitquitquit, p:r:i]}`

// TestNativeConverts: the Cloud SQL Auth Proxy v2 written as a classic sidecar becomes a native
// one, its health check turned on and bound where the kubelet can probe it, with a startup
// probe on /startup; the app needs no wrapper then, and the report says so and that the output
// needs native sidecars.
func TestNativeConverts(t *testing.T) {
	out, r := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]}, `+proxyV2+`]`, "")), nativeOpts(), nil)
	if got := names(t, out, "containers"); !cmp.Equal(got, []string{"app"}) {
		t.Errorf("containers %q, want the app alone", got)
	}
	c := containerOf(t, out, "initContainers", "cloud-sql-proxy")
	want := map[string]any{
		"name": "cloud-sql-proxy", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0",
		"args":          []any{"--quitquitquit", "p:r:i"},
		"restartPolicy": "Always",
		"env": []any{
			map[string]any{"name": "CSQL_PROXY_HEALTH_CHECK", "value": "true"},
			map[string]any{"name": "CSQL_PROXY_HTTP_ADDRESS", "value": "0.0.0.0"}},
		"startupProbe": map[string]any{"httpGet": map[string]any{"path": "/startup", "port": json.Number("9090")},
			"periodSeconds": json.Number("1"), "failureThreshold": json.Number("120")},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("the native sidecar (-want +got):\n%s", diff)
	}
	if at(t, containerOf(t, out, "containers", "app"), "command").([]any)[0] != "run" {
		t.Errorf("the app was wrapped: %v", containerOf(t, out, "containers", "app"))
	}
	if _, ok := at(t, out, "metadata").(map[string]any)["annotations"]; ok {
		t.Errorf("annotations written on a pod with no wrapper: %v", at(t, out, "metadata"))
	}
	if !r.Changed || len(r.Wrapped) > 0 || !cmp.Equal(r.Converted, []Left{{"cloud-sql-proxy", "startup probe GET :9090/startup"}}) {
		t.Errorf("report %+v", r)
	}
	if !slices.Contains(r.Needs, kubeversion.NativeSidecars) {
		t.Errorf("Needs %v, want native sidecars", r.Needs)
	}
	if s := r.String(); !strings.Contains(s, "made native cloud-sql-proxy (startup probe GET :9090/startup); apps not wrapped") {
		t.Errorf("report line %q", s)
	}
}

// TestNativeProbePortAndUserFields: the probe's port is the one the proxy's flag sets, and
// every field the user wrote stays as written: a startup probe of its own, its env first, its
// resources; a setting the probe needs that the user set another way stops the conversion.
func TestNativeProbePortAndUserFields(t *testing.T) {
	out, r := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]},
	  {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [--http-port=9190, --health-check, p:r:i],
	   env: [{name: A, value: "1"}], resources: {limits: {memory: 64Mi}}}]`, "")), nativeOpts(), nil)
	c := containerOf(t, out, "initContainers", "db")
	if got := at(t, c, "startupProbe", "httpGet", "port"); got != json.Number("9190") {
		t.Errorf("probe port %v, want 9190", got)
	}
	wantEnv := []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "CSQL_PROXY_HTTP_ADDRESS", "value": "0.0.0.0"}}
	if diff := cmp.Diff(wantEnv, c["env"]); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if at(t, c, "resources", "limits", "memory") != "64Mi" {
		t.Errorf("resources %v", c["resources"])
	}
	if len(r.Converted) != 1 {
		t.Errorf("report %+v", r)
	}

	own, _ := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]},
	  {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i], startupProbe: {tcpSocket: {port: 5432}}}]`, "")), nativeOpts(), nil)
	if got := at(t, containerOf(t, own, "initContainers", "db"), "startupProbe"); !cmp.Equal(got, map[string]any{"tcpSocket": map[string]any{"port": json.Number("5432")}}) {
		t.Errorf("the user's startup probe became %v", got)
	}

	loopback, r := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]},
	  {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [--http-address=127.0.0.1, --quitquitquit, p:r:i]}]`, "")), nativeOpts(), nil)
	if got := names(t, loopback, "containers"); !cmp.Equal(got, []string{"app", "db"}) || len(r.Wrapped) != 1 {
		t.Errorf("containers %q, report %q: want db kept classic and app wrapped", got, r)
	}
	if !slices.ContainsFunc(r.Left, func(l Left) bool {
		return l.Container == "db" && strings.Contains(l.Why, `not made native: the address of its health check (--http-address) is set to "127.0.0.1" by flag --http-address`)
	}) {
		t.Errorf("Left %q, want why db is not made native", r.Left)
	}
}

// TestNativePlacement: a converted sidecar goes before every init container (which may use it),
// but after one that shares a volume with it (which may write its credentials); two keep their
// order.
func TestNativePlacement(t *testing.T) {
	out, _ := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]},
	  {name: db1, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:a]},
	  {name: db2, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [--http-port=9191, p:r:b], volumeMounts: [{name: creds, mountPath: /creds}]}]`,
		`[{name: creds, image: example/creds, command: [write], volumeMounts: [{name: creds, mountPath: /out}]},
	  {name: migrate, image: example/migrate, command: [migrate]}]`)), nativeOpts(), nil)
	if got, want := names(t, out, "initContainers"), []string{"db1", "creds", "db2", "migrate"}; !cmp.Equal(got, want) {
		t.Errorf("initContainers %q, want %q", got, want)
	}
}

// TestNativeLeaves: a sidecar with a hand-written shutdown handshake is neither converted nor
// wrapped for; one the user keeps classic stays, and the app is wrapped; Istio's proxy that
// a manifest holds is its injector's to make native.
func TestNativeLeaves(t *testing.T) {
	handshake := `[{name: app, image: example/app, command: [sh, -c, "run; touch /tmp/pod/terminated"], volumeMounts: [{name: pod, mountPath: /tmp/pod}]},
	  {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, command: [/bin/sh, -c],
	   args: ["/cloud-sql-proxy p:r:i & CHILD=$!; while ! test -f /tmp/pod/terminated; do sleep 1; done; kill $CHILD"],
	   volumeMounts: [{name: pod, mountPath: /tmp/pod, readOnly: true}]}]`
	in := decode(t, podWith(handshake, ""))
	out, r := apply(t, in, nativeOpts(), nil)
	if r.Changed || len(r.Wrapped) > 0 || len(r.Converted) > 0 {
		t.Errorf("report %+v, want nothing changed", r)
	}
	if !sameJSON(in, out) {
		t.Errorf("the pod changed: %s", toYAML(t, out))
	}
	if !slices.ContainsFunc(r.Left, func(l Left) bool {
		return l.Container == "cloud-sql-proxy" && strings.HasPrefix(l.Why, "a hand-written shutdown handshake")
	}) {
		t.Errorf("Left %q", r.Left)
	}

	marked := decode(t, podWith(`[{name: app, image: example/app, command: [run]}, `+proxyV2+`]`, ""))
	at(t, marked, "metadata").(map[string]any)["annotations"] = map[string]any{contract.ClassicAnnotation: "other, cloud-sql-proxy"}
	out, r = apply(t, marked, nativeOpts(), nil)
	if got := names(t, out, "containers"); !cmp.Equal(got, []string{"app", "cloud-sql-proxy"}) || !cmp.Equal(r.Wrapped, []string{"app"}) {
		t.Errorf("containers %q, report %q: want the proxy kept classic and the app wrapped", got, r)
	}
	if !slices.ContainsFunc(r.Left, func(l Left) bool {
		return strings.Contains(l.Why, "kept classic by the annotation "+contract.ClassicAnnotation)
	}) {
		t.Errorf("Left %q", r.Left)
	}

	_, r = apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]}, {name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0}]`, "")), nativeOpts(), nil)
	if len(r.Converted) > 0 || !slices.ContainsFunc(r.Left, func(l Left) bool {
		return strings.Contains(l.Why, `not made native: added by Istio's injector, which makes it native itself when the pod asks with sidecar.istio.io/nativeSidecar: "true"`)
	}) {
		t.Errorf("report %+v", r)
	}
}

// TestNativeWithoutProbe: the Cloud SQL Auth Proxy v1 and Vault Agent have no health endpoint:
// they become native sidecars without a startup probe (nothing could wait for them, wrapped or
// not), and the app needs no wrapper.
func TestNativeWithoutProbe(t *testing.T) {
	for _, sc := range []string{
		`{name: proxy, image: gcr.io/cloudsql-docker/gce-proxy:1.33.2, command: [/cloud_sql_proxy, -instances=p:r:i=tcp:5432]}`,
		`{name: vault-agent, image: hashicorp/vault:1.20, command: [vault, agent]}`,
	} {
		out, r := apply(t, decode(t, podWith(`[{name: app, image: example/app, command: [run]}, `+sc+`]`, "")), nativeOpts(), nil)
		n := names(t, out, "initContainers")
		if len(n) != 1 || len(r.Converted) != 1 || len(r.Wrapped) > 0 {
			t.Fatalf("%s: initContainers %q, report %+v", sc, n, r)
		}
		c := containerOf(t, out, "initContainers", n[0])
		if _, ok := c["startupProbe"]; ok || c["env"] != nil || c["restartPolicy"] != "Always" {
			t.Errorf("%s: %v, want restartPolicy Always alone added", sc, c)
		}
		if !strings.HasPrefix(r.Converted[0].Why, "no startup probe: ") {
			t.Errorf("%s: %q", sc, r.Converted[0].Why)
		}
	}
}

// TestNativeAsksMesh: a pod that asks Istio for a sidecar asks for a native one with Istio's
// annotation, and stays wrapped (an Istio too old for the annotation adds a classic sidecar); a
// pod that asks for a classic one is left as it asks.
func TestNativeAsksMesh(t *testing.T) {
	pod := func(ann string) map[string]any {
		return decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {sidecar.istio.io/inject: \"true\"}, annotations: {"+ann+"}}\nspec:\n  restartPolicy: Never\n  containers: [{name: app, image: example/app, command: [run]}]\n")
	}
	out, r := apply(t, pod(""), nativeOpts(), nil)
	if got := at(t, out, "metadata", "annotations", "sidecar.istio.io/nativeSidecar"); got != "true" {
		t.Errorf("nativeSidecar annotation %v", got)
	}
	if !cmp.Equal(r.Wrapped, []string{"app"}) || len(r.Asked) != 1 || !strings.HasPrefix(r.Asked[0], `sidecar.istio.io/nativeSidecar: "true" (Istio 1.24+`) {
		t.Errorf("report %+v", r)
	}
	out, r = apply(t, pod(`sidecar.istio.io/nativeSidecar: "false"`), nativeOpts(), nil)
	if got := at(t, out, "metadata", "annotations", "sidecar.istio.io/nativeSidecar"); got != "false" || len(r.Asked) > 0 {
		t.Errorf("the pod's own choice became %v, report %+v", got, r)
	}
}

// TestNativeNoRegistryRead: an app without a command beside a sidecar that becomes native needs
// no wrapper, so no image is read for it, and the pod is not left unchanged for want of it.
func TestNativeNoRegistryRead(t *testing.T) {
	obj := decode(t, podWith(`[{name: app, image: example/app}, `+proxyV2+`]`, ""))
	images, err := Images(obj, manifest.TypeMeta{}, nativeOpts())
	if err != nil || len(images) > 0 {
		t.Errorf("Images: %q, %v; want none", images, err)
	}
	if images, _ := Images(obj, manifest.TypeMeta{}, opts()); !cmp.Equal(images, []string{"example/app"}) {
		t.Errorf("Images without Native: %q, want the app's", images)
	}
	_, r := apply(t, obj, nativeOpts(), nil)
	if len(r.Converted) != 1 || len(r.Warnings) > 0 {
		t.Errorf("report %+v", r)
	}
}

// TestNativeNever: without Native, a classic sidecar stays where it is and the app is wrapped,
// as before; one that nothing can tell to quit is reported as unfixed, with the fix.
func TestNativeNever(t *testing.T) {
	in := decode(t, podWith(`[{name: app, image: example/app, command: [run]}, {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]`, ""))
	out, r := apply(t, in, opts(), nil)
	if got := names(t, out, "containers"); !cmp.Equal(got, []string{"app", "cloud-sql-proxy"}) || !cmp.Equal(r.Wrapped, []string{"app"}) || len(r.Converted) > 0 {
		t.Errorf("containers %q, report %+v", got, r)
	}
	if len(r.Unfixed) != 1 || !strings.Contains(r.Unfixed[0], "nothing can tell Cloud SQL Auth Proxy to quit") || !strings.Contains(r.Unfixed[0], "--native") {
		t.Errorf("Unfixed %q", r.Unfixed)
	}
	_, r = apply(t, in, nativeOpts(), nil)
	if len(r.Unfixed) > 0 {
		t.Errorf("with Native: Unfixed %q", r.Unfixed)
	}
}

// TestNativeIdempotent: converting the converted pod changes nothing, and Patch agrees with Apply
// on both.
func TestNativeIdempotent(t *testing.T) {
	for _, y := range []string{
		podWith(`[{name: app, image: example/app, command: [run]}, `+proxyV2+`]`, `[{name: migrate, image: m, command: [m]}]`),
		podWith(`[{name: app, image: example/app, command: [run]}, {name: istio-proxy, image: docker.io/istio/proxyv2:1.28.0}, `+proxyV2+`]`, ""),
	} {
		once, _ := apply(t, decode(t, y), nativeOpts(), nil)
		twice, r := apply(t, roundTrip(t, once), nativeOpts(), nil)
		if r.Changed || !sameJSON(roundTrip(t, once), twice) {
			t.Errorf("second inject %q changed:\n%s", r, toYAML(t, twice))
		}
		checkPatch(t, "native", decode(t, y), manifest.TypeMeta{}, nativeOpts(), nil)
		checkPatch(t, "native twice", once, manifest.TypeMeta{}, nativeOpts(), nil)
	}
}

// TestParseNativeMode: the three modes and the default; anything else is an error naming the
// flag; auto resolves by the oldest kubelet.
func TestParseNativeMode(t *testing.T) {
	for in, want := range map[string]NativeMode{"": NativeAuto, "auto": NativeAuto, "always": NativeAlways, "never": NativeNever} {
		if got, err := ParseNativeMode(in); got != want || err != nil {
			t.Errorf("ParseNativeMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseNativeMode("yes"); err == nil || !strings.Contains(err.Error(), `--native "yes"`) {
		t.Errorf("ParseNativeMode(yes): %v", err)
	}
	for _, tc := range []struct {
		m    NativeMode
		v    int
		want bool
	}{{NativeAuto, 28, false}, {NativeAuto, 29, true}, {NativeAuto, 33, true}, {NativeAlways, 28, true}, {NativeNever, 35, false}} {
		if got := tc.m.Native(kubeversion.Version{Minor: tc.v}); got != tc.want {
			t.Errorf("%s.Native(1.%d) = %v, want %v", tc.m, tc.v, got, tc.want)
		}
	}
}
