//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// TestVersions runs, on a real API server of each Kubernetes release the project supports (the
// oldest, 1.33, and the newest), one server per release: the chart's webhook end to end, inject's
// init-copy output and the policy's objects (dry runs), what the server stores for each feature
// sidesync's output may use, and the injector's check of image volumes at its start. A feature a
// release lacks is refused by sidesync with a message naming the release that has it; the test
// shows what the server would do otherwise.
func TestVersions(t *testing.T) {
	for _, v := range kubetest.Versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			c := kubetest.StartWith(t, kubetest.Options{Version: v})
			kv, err := kubeversion.Parse(c.Version)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("the chart's webhook wraps as Apply does", func(t *testing.T) { testWebhookOn(t, c) })
			t.Run("inject's init-copy output under Pod Security restricted", func(t *testing.T) { testInitCopyRestricted(t, c) })
			t.Run("the policy's objects", func(t *testing.T) { testPolicyObjects(t, c, kv) })
			t.Run("what the server stores", func(t *testing.T) { testStored(t, c, kv) })
			t.Run("the chart refuses image volumes it lacks", func(t *testing.T) {
				_, err := chart.Injector.RenderOn(c.Version, map[string]any{"delivery": string(inject.ImageVolume)}, ownNamespace)
				if kubeversion.ImageVolume.In(kv) != (err == nil) {
					t.Errorf("delivery: image-volume on %s: %v", c.Version, err)
				}
				if err != nil && !strings.Contains(err.Error(), "need Kubernetes "+kubeversion.ImageVolume.Since.String()) {
					t.Errorf("the refusal does not name %s: %v", kubeversion.ImageVolume.Since, err)
				}
			})
			t.Run("the injector checks image volumes at its start", func(t *testing.T) { testImageVolumeCheck(t, c, kv) })
		})
	}
}

// testWebhookOn registers the chart's webhook configurations (rendered for c's version) for an
// injector, and compares the pod the API server stores with Apply's.
func testWebhookOn(t *testing.T, c *kubetest.Cluster) {
	in, _ := webhookOn(t, c)
	c.CreateNamespaceLabelled(t, "selected", map[string]string{admission.InjectLabel: admission.Enabled})
	c.CreateNamespace(t, "plain")
	p, err := manifest.DecodeJSONObject([]byte(mustJSONT(t, pod("wrapped", []string{"/app", "--n", "1"}, nil, nil))))
	if err != nil {
		t.Fatal(err)
	}
	stored := c.CreatePod(t, "selected", p)
	out, r, err := inject.Apply(p, manifest.TypeMeta{}, inject.Options{Version: testVersion, Image: testImage}, nil)
	if err != nil || !r.Changed {
		t.Fatalf("Apply: %v %+v", err, r)
	}
	want := c.CreatePod(t, "plain", out)
	if g, w := mustJSONT(t, withoutToken(stored)["spec"]), mustJSONT(t, withoutToken(want)["spec"]); g != w {
		t.Errorf("stored spec differs from Apply's:\n got %s\nwant %s", g, w)
	}
	// The webhook records its native choice besides (the API server has no nodes: classic, as
	// Apply's Options make it).
	got := annotationsOf(stored)
	if !strings.HasPrefix(fmt.Sprint(got[admission.NativeAnnotation]), "classic (auto): ") {
		t.Errorf("the webhook's native choice: %q, want classic (auto): ...", got[admission.NativeAnnotation])
	}
	delete(got, admission.NativeAnnotation)
	if g, w := mustJSONT(t, got), mustJSONT(t, annotationsOf(want)); g != w {
		t.Errorf("stored annotations differ from Apply's:\n got %s\nwant %s", g, w)
	}
	if t.Failed() {
		t.Logf("injector log:\n%s", in.stderr)
	}
}

// restrictedContext is a container securityContext the restricted Pod Security Standard admits.
func restrictedContext() map[string]any {
	return map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
		"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
}

// testInitCopyRestricted dry-run creates inject's init-copy output of a restricted pod with a
// native sidecar in a namespace that enforces the restricted Pod Security Standard.
func testInitCopyRestricted(t *testing.T, c *kubetest.Cluster) {
	c.CreateNamespaceLabelled(t, "restricted", map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"})
	p := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "job"},
		"spec": map[string]any{"restartPolicy": "Never",
			"initContainers": []any{map[string]any{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
				"args": []any{"proxy", "sidecar"}, "restartPolicy": "Always", "securityContext": restrictedContext()}},
			"containers": []any{map[string]any{"name": "app", "image": "example.com/app:1", "command": []any{"/app"},
				"securityContext": restrictedContext()}}}}
	out, r, err := inject.Apply(p, manifest.TypeMeta{}, inject.Options{Version: testVersion, Image: testImage, Delivery: inject.InitCopy}, nil)
	if err != nil || !r.Changed {
		t.Fatalf("Apply: %v %+v", err, r)
	}
	resp := c.Send(t, "POST", "/api/v1/namespaces/restricted/pods?dryRun=All", out)
	if resp.Code != 201 || len(resp.Warnings) > 0 {
		t.Fatalf("inject's output in a restricted namespace: %d %s, warnings %q", resp.Code, resp.Body, resp.Warnings)
	}
	var stored map[string]any
	if err := json.Unmarshal(resp.Body, &stored); err != nil {
		t.Fatal(err)
	}
	spec := stored["spec"].(map[string]any)
	if !hasNamed(spec["initContainers"], contract.InitContainer) || !hasNamed(spec["volumes"], contract.BinVolume) {
		t.Errorf("the stored pod lacks the %s init container or the %s volume: %s", contract.InitContainer, contract.BinVolume, resp.Body)
	}
}

// testPolicyObjects checks that the release serves `kubectl sidesync policy`'s objects only from
// kubeversion.MutatingAdmissionPolicy.Since on (kubectl's "no matches for kind" below it, which
// is why the policy names the release it needs), and dry-run creates its backstop, which every
// supported release serves. (internal/cluster/admission creates the policies themselves on 1.37.)
func testPolicyObjects(t *testing.T, c *kubetest.Cluster, kv kubeversion.Version) {
	policies, bindings, err := admission.Policy(admission.PolicyOptions{Image: testImage, Version: testVersion, Delivery: inject.InitCopy})
	if err != nil {
		t.Fatal(err)
	}
	var group struct{ Resources []struct{ Kind string } }
	if code := c.Do(t, "GET", "/apis/admissionregistration.k8s.io/v1", nil, &group); code != 200 {
		t.Fatalf("GET /apis/admissionregistration.k8s.io/v1: %d", code)
	}
	served := map[string]bool{}
	for _, r := range group.Resources {
		served[r.Kind] = true
	}
	for _, kind := range []string{policies[0].Kind, bindings[0].Kind} {
		if served[kind] != kubeversion.MutatingAdmissionPolicy.In(kv) {
			t.Errorf("%s served by %s: %v, but kubeversion says %s are in %s and later", kind, c.Version, served[kind],
				kubeversion.MutatingAdmissionPolicy.Name, kubeversion.MutatingAdmissionPolicy.Since)
		}
	}
	vap, vapBindings := admission.Backstop(admission.Options{}, admission.ByWebhook)
	objs := []any{vap}
	for _, b := range vapBindings {
		objs = append(objs, b)
	}
	for _, o := range objs {
		m, err := manifest.DecodeJSONObject([]byte(mustJSONT(t, o)))
		if err != nil {
			t.Fatal(err)
		}
		path, _ := kubetest.CollectionPath(m, "")
		if r := c.Send(t, "POST", path+"?dryRun=All&fieldValidation=Strict", m); r.Code != 201 || len(r.Warnings) > 0 {
			t.Errorf("%s: %d %s, warnings %q", m["kind"], r.Code, r.Body, r.Warnings)
		}
	}
}

// storedCase is a pod that uses one feature, and whether the stored pod still has it.
type storedCase struct {
	feature kubeversion.Feature
	spec    map[string]any
	kept    func(spec map[string]any) bool
}

func storedCases() []storedCase {
	app := func(extra map[string]any) map[string]any {
		ctr := map[string]any{"name": "app", "image": "example.com/app:1", "command": []any{"/app"}}
		for k, v := range extra {
			ctr[k] = v
		}
		return ctr
	}
	return []storedCase{
		{kubeversion.NativeSidecars, map[string]any{
			"initContainers": []any{map[string]any{"name": "proxy", "image": "example.com/proxy:1", "restartPolicy": "Always"}},
			"containers":     []any{app(nil)}},
			func(spec map[string]any) bool {
				ics, _ := spec["initContainers"].([]any)
				return len(ics) == 1 && ics[0].(map[string]any)["restartPolicy"] == "Always"
			}},
		{kubeversion.ImageVolume, map[string]any{
			"volumes":    []any{map[string]any{"name": "tools", "image": map[string]any{"reference": testImage}}},
			"containers": []any{app(map[string]any{"volumeMounts": []any{map[string]any{"name": "tools", "mountPath": "/tools"}}})}},
			func(spec map[string]any) bool {
				vs, _ := spec["volumes"].([]any)
				for _, v := range vs {
					if v := v.(map[string]any); v["name"] == "tools" && v["image"] != nil {
						return true
					}
				}
				return false
			}},
		{kubeversion.RestartRules, map[string]any{
			"containers": []any{app(map[string]any{"restartPolicy": "Never", "restartPolicyRules": []any{
				map[string]any{"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{42}}}}})}},
			func(spec map[string]any) bool {
				rules, _ := spec["containers"].([]any)[0].(map[string]any)["restartPolicyRules"].([]any)
				return len(rules) == 1
			}},
	}
}

// testStored dry-run creates a pod that uses each feature, as a client (or a webhook's patch)
// sends it, and reads what the server would store: a release that has the feature keeps it; one
// that lacks it drops it in silence or refuses the pod.
func testStored(t *testing.T, c *kubetest.Cluster, kv kubeversion.Version) {
	c.CreateNamespace(t, "features")
	for i, sc := range storedCases() {
		spec := map[string]any{"restartPolicy": "Never"}
		for k, v := range sc.spec {
			spec[k] = v
		}
		p := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": fmt.Sprintf("feature-%d", i)}, "spec": spec}
		r := c.Send(t, "POST", "/api/v1/namespaces/features/pods?dryRun=All", p)
		outcome := fmt.Sprintf("refused (%d)", r.Code)
		if r.Code == 201 {
			var stored map[string]any
			if err := json.Unmarshal(r.Body, &stored); err != nil {
				t.Fatal(err)
			}
			outcome = "dropped"
			if sc.kept(stored["spec"].(map[string]any)) {
				outcome = "kept"
			}
		}
		t.Logf("%s on %s: %s; warnings %q", sc.feature.Name, c.Version, outcome, r.Warnings)
		if (outcome == "kept") != sc.feature.In(kv) {
			t.Errorf("%s on %s: %s, but kubeversion says it is in %s and later: %.400s", sc.feature.Name, c.Version, outcome, sc.feature.Since, r.Body)
		}
	}
}

// testImageVolumeCheck runs the injector with image-volume delivery as its ServiceAccount, with
// only the chart's RBAC: it refuses to start below 1.35 naming 1.35, starts on a release that
// keeps image volumes, and refuses to start where a policy strips the volume.
func testImageVolumeCheck(t *testing.T, c *kubetest.Cluster, kv kubeversion.Version) {
	if c.Do(t, "GET", "/api/v1/namespaces/"+ownNamespace, nil, nil) == 404 { // when the webhook's test did not make it
		c.CreateNamespace(t, ownNamespace)
	}
	ca := newTestCA(t)
	kc := c.Kubeconfig(t, chartServiceAccount(t, c))
	args := []string{"--kubeconfig=" + kc, "--namespace=" + ownNamespace, "--delivery=" + string(inject.ImageVolume)}
	if !kubeversion.ImageVolume.In(kv) {
		code, stderr := runInjector(t, ca, args...)
		want := "need Kubernetes " + kubeversion.ImageVolume.Since.String() + " or newer, and the API server is " + c.Version
		if code != exitRefused || !strings.Contains(stderr, want) {
			t.Errorf("on %s: exit %d, want %d with %q:\n%s", c.Version, code, exitRefused, want, stderr)
		}
		return
	}
	in := startInjector(t, ca, args...)
	in.stop(t)

	// A policy that turns the image volume into an emptyDir, as a webhook that strips it would.
	if !kubeversion.MutatingAdmissionPolicy.In(kv) {
		return
	}
	stripImageVolumes(t, c, "stripped")
	code, stderr := runInjector(t, ca, "--kubeconfig="+c.Kubeconfig(t, c.AdminToken), "--namespace=stripped", "--delivery="+string(inject.ImageVolume))
	if want := "stores a pod without its image volume " + contract.BinVolume; code != exitRefused || !strings.Contains(stderr, want) {
		t.Errorf("with the volume stripped: exit %d, want %d with %q:\n%s", code, exitRefused, want, stderr)
	}
}

// chartServiceAccount creates the injector's ServiceAccount and the chart's RBAC for it (with
// image-volume delivery) in ownNamespace, and returns a token of the ServiceAccount once RBAC
// lets it create pods there.
func chartServiceAccount(t *testing.T, c *kubetest.Cluster) string {
	t.Helper()
	objs, err := chart.Render(map[string]any{"delivery": string(inject.ImageVolume)}, ownNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range chart.OfKind(objs, kind) {
			path, _ := kubetest.CollectionPath(o, ownNamespace)
			c.Create(t, path, o)
		}
	}
	token := c.ServiceAccountToken(t, ownNamespace, chart.ReleaseName)
	// RBAC authorizes from a cache: wait until the Role is in force.
	review := map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{"namespace": ownNamespace, "verb": "create", "resource": "pods"}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct{ Status struct{ Allowed bool } }
		c.DoAs(t, token, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, &out)
		if out.Status.Allowed {
			return token
		}
		if time.Now().After(deadline) {
			t.Fatal("the chart's Role does not let the injector create pods after 30 s")
		}
		time.Sleep(50 * time.Millisecond) // polling RBAC's cache, bounded by deadline
	}
}

// runInjector runs the injector until it exits, for a start that must fail; it fails the test
// if the injector serves instead.
func runInjector(t *testing.T, ca *testCA, args ...string) (int, string) {
	t.Helper()
	var stderr syncBuffer
	all := append([]string{"--listen=127.0.0.1:0", "--probe-listen=127.0.0.1:0", "--tls-cert-file=" + ca.certFile(),
		"--tls-key-file=" + ca.keyFile(), "--drain-delay=0s", "--image=" + testImage}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, all, buildinfo.Info{Version: testVersion, Commit: "test"}, &stderr, func(string, string) {
		t.Errorf("the injector serves")
		cancel()
	})
	return code, stderr.String()
}

// stripImageVolumes installs a MutatingAdmissionPolicy that turns contract.BinVolume's image
// volume into an emptyDir in namespace ns (which it creates, labelled for the binding), and waits
// until the API server applies it.
func stripImageVolumes(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	const label = "sidesync-test/strip-image-volumes"
	c.CreateNamespaceLabelled(t, ns, map[string]string{label: "yes"})
	idx := fmt.Sprintf("object.spec.volumes.map(v, v.name).indexOf(%q)", contract.BinVolume)
	c.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies", map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
		"metadata": map[string]any{"name": "strip-image-volumes"},
		"spec": map[string]any{
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE"}, "resources": []any{"pods"}}}},
			"matchConditions": []any{map[string]any{"name": "has-image-volume", "expression": fmt.Sprintf(
				"has(object.spec.volumes) && object.spec.volumes.exists(v, v.name == %q && has(v.image))", contract.BinVolume)}},
			"variables":          []any{map[string]any{"name": "i", "expression": "string(" + idx + ")"}},
			"failurePolicy":      "Fail",
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": `[
				JSONPatch{op: "remove", path: "/spec/volumes/" + variables.i + "/image"},
				JSONPatch{op: "add", path: "/spec/volumes/" + variables.i + "/emptyDir", value: Object.spec.volumes.emptyDir{}}]`}}},
		}})
	c.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings", map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "strip-image-volumes"},
		"spec": map[string]any{"policyName": "strip-image-volumes",
			"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{label: "yes"}}}}})
	p, err := checkPod(inject.Options{Version: testVersion, Image: testImage, Delivery: inject.ImageVolume})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All", p)
		if r.Code == 201 && strings.Contains(string(r.Body), `"emptyDir"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy does not strip the image volume a minute after its creation: %d %s", r.Code, r.Body)
		}
		time.Sleep(100 * time.Millisecond) // polling the API server's watch of policies, bounded by deadline
	}
}

// hasNamed reports whether list (a decoded JSON array of objects) has an item named name.
func hasNamed(list any, name string) bool {
	items, _ := list.([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); m["name"] == name {
			return true
		}
	}
	return false
}
