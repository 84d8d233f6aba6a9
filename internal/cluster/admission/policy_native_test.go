package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// nativeSynthetic are pods, besides the corpus's, that nativeMay tells apart: a Cloud SQL Auth
// Proxy inject converts, one alone in its pod, a hand-written handshake over a shared volume,
// a sidecar that only shares a volume with an init container, and a pod that asks Istio's
// injector for its proxy.
var nativeSynthetic = []string{
	`spec: {containers: [{name: app, image: example/app:1, command: [/app]}, {name: proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]}`,
	`spec: {containers: [{name: proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]}`,
	`metadata: {annotations: {sidesync.io/classic: " other, proxy "}}
spec: {containers: [{name: app, image: example/app:1, command: [/app]}, {name: proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]}`,
	`metadata: {annotations: {sidesync.io/classic: "prox"}}
spec: {containers: [{name: app, image: example/app:1, command: [/app]}, {name: proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i]}]}`,
	`spec: {containers: [{name: app, image: example/app:1, command: [/app]}, {name: proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0, args: [p:r:i], restartPolicy: Never}]}`,
	`spec: {volumes: [{name: done, emptyDir: {}}], containers: [{name: app, image: example/app:1, command: [sh, -c, "/app; touch /done/x"], volumeMounts: [{name: done, mountPath: /done}]}, {name: istio-proxy, image: istio/proxyv2, command: [sh, -c, "envoy & while [ ! -f /done/x ]; do sleep 1; done; kill %1"], volumeMounts: [{name: done, mountPath: /done}]}]}`,
	`spec: {volumes: [{name: cfg, emptyDir: {}}], initContainers: [{name: init, image: example/init:1, volumeMounts: [{name: cfg, mountPath: /cfg}]}], containers: [{name: app, image: example/app:1, command: [/app]}, {name: istio-proxy, image: istio/proxyv2, args: [proxy], volumeMounts: [{name: cfg, mountPath: /cfg}]}]}`,
	`metadata: {labels: {sidecar.istio.io/inject: "true"}}
spec: {containers: [{name: app, image: example/app:1, command: [/app]}]}`,
}

// TestNativeMayCEL: the policy's variable nativeMay, evaluated as the API server evaluates it,
// is nativeMay on every pod of the corpus, the examples, inject's testdata and nativeSynthetic.
func TestNativeMayCEL(t *testing.T) {
	env := celeval.For(t)
	spec, err := policySpec(nativePolicy())
	if err != nil {
		t.Fatal(err)
	}
	count := map[bool]int{}
	for _, p := range celeval.WithSynthetic(t, nativeSynthetic) {
		vars := map[string]any{}
		for _, v := range spec.Variables {
			got, err := env.Eval(v.Expression, p.Object, vars)
			if err != nil {
				t.Fatalf("%s: variable %s: %v", p.Name, v.Name, err)
			}
			vars[v.Name] = got
		}
		got, _ := vars["nativeMay"].(bool)
		want := nativeMay(catalog.Sort(p.View, catalog.Options{Requests: true}))
		if got != want {
			t.Errorf("%s: nativeMay in CEL %v, in Go %v", p.Name, got, want)
		}
		count[want]++
	}
	if count[true] < 5 || count[false] < 20 {
		t.Errorf("nativeMay holds for %d pods and not for %d", count[true], count[false])
	}
}

// TestNativeMayCoversInject: on every pod of the corpus, the examples, inject's testdata and
// nativeSynthetic for which nativeMay does not hold, inject.Apply with Options.Native makes the
// pod (and the reason) it makes without, so that the policy, which makes that pod, makes
// inject's; and nativeMay holds wherever the two differ.
func TestNativeMayCoversInject(t *testing.T) {
	differ := 0
	for _, p := range celeval.WithSynthetic(t, nativeSynthetic) {
		apply := func(native bool) (map[string]any, inject.Report, error) {
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": p.Object["metadata"], "spec": p.Object["spec"]}
			return inject.Apply(jsonCopy(t, pod), manifest.TypeMeta{}, inject.Options{Version: testPolicy.Version, Image: testPolicy.Image,
				Delivery: testPolicy.Delivery, Native: native}, nil)
		}
		classic, rc, errc := apply(false)
		native, rn, errn := apply(true)
		// the reasons' words differ where every sidecar is native (notNeededMessage reads Native's)
		same := cmp.Equal(classic, native) && (rc.Reason == "") == (rn.Reason == "") && (errc == nil) == (errn == nil)
		if !same {
			differ++
		}
		if !same && !nativeMay(catalog.Sort(p.View, catalog.Options{Requests: true})) {
			t.Errorf("%s: inject with Native makes another pod, and nativeMay does not hold: %s", p.Name, cmp.Diff(classic, native))
		}
	}
	if differ < 3 {
		t.Errorf("inject with Native changes only %d pods", differ)
	}
}

// nativePolicy is testPolicy with Native.
func nativePolicy() PolicyOptions {
	o := testPolicy
	o.Native = true
	return o
}
