package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

var testPolicy = PolicyOptions{Version: "v0.1.0", Image: "ghcr.io/sidesync/sidesync:v0.1.0", Delivery: inject.InitCopy}

// install creates objects (typed API values) on the cluster.
func installObjects(t *testing.T, c *kubetest.Cluster, objs ...any) {
	t.Helper()
	paths := map[string]string{
		"MutatingAdmissionPolicy":          "mutatingadmissionpolicies",
		"MutatingAdmissionPolicyBinding":   "mutatingadmissionpolicybindings",
		"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
		"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
	}
	for _, o := range objs {
		j, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatal(err)
		}
		r := c.Send(t, "POST", "/apis/admissionregistration.k8s.io/v1/"+paths[m["kind"].(string)], j)
		if r.Code != 201 {
			t.Fatalf("creating %s: %d %s", m["kind"], r.Code, r.Body)
		}
	}
}

// testPod is a pod of the given containers.
func testPod(name string, labels, ann map[string]string, containers ...map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	for key, m := range map[string]map[string]string{"labels": labels, "annotations": ann} {
		if m == nil {
			continue
		}
		obj := map[string]any{}
		for k, v := range m {
			obj[k] = v
		}
		meta[key] = obj
	}
	var cs []any
	for _, c := range containers {
		cs = append(cs, c)
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": map[string]any{"containers": cs, "restartPolicy": "Never"}}
}

func testApp(name string) map[string]any {
	return map[string]any{"name": name, "image": "example/app:1", "command": []any{"/app"}, "args": []any{"--x=$(Y)"}}
}

// waitMutating waits until both policies act on a new pod in ns, one selected by its
// namespace and one by its own label: the API server loads policies and bindings
// asynchronously.
func waitMutating(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for _, labels := range []map[string]string{nil, {InjectLabel: Enabled}} {
		for {
			r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All", testPod("probe", labels, nil, testApp("a")))
			if r.Code == 201 && strings.Contains(string(r.Body), contract.InjectedAnnotation) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the policy never acted in %s on a pod labelled %v: %d %s", ns, labels, r.Code, r.Body)
			}
			time.Sleep(100 * time.Millisecond) // polling the API server's informers; bounded by the deadline
		}
	}
}

// ownedParts is what Apply owns of a stored pod: its spec and annotations, without the
// ServiceAccount admission's projected volume, whose name is random.
func ownedParts(t *testing.T, stored map[string]any) string {
	t.Helper()
	spec := stored["spec"].(map[string]any)
	strip := func(l any, key string) []any {
		var out []any
		list, _ := l.([]any)
		for _, e := range list {
			if n, _ := e.(map[string]any)[key].(string); strings.HasPrefix(n, "kube-api-access-") {
				continue
			}
			out = append(out, e)
		}
		return out
	}
	spec["volumes"] = strip(spec["volumes"], "name")
	for _, f := range []string{"containers", "initContainers"} {
		list, _ := spec[f].([]any)
		for _, c := range list {
			c := c.(map[string]any)
			c["volumeMounts"] = strip(c["volumeMounts"], "name")
		}
	}
	ann := stored["metadata"].(map[string]any)["annotations"]
	out, err := yaml.Marshal(map[string]any{"annotations": ann, "spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// examplePods are the pods of deploy/examples/plain and inject's testdata, each workload's pod
// template as a Pod.
func examplePods(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob("../../../deploy/examples/plain/*.yaml")
	more, _ := filepath.Glob("../inject/testdata/*.yaml")
	corpus, _ := filepath.Glob("../../testing/corpus/testdata/*.yaml")
	pods := map[string]map[string]any{}
	for _, f := range slices.Concat(files, more, corpus) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(src), -1) {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil || string(j) == "null" {
				continue
			}
			d := json.NewDecoder(bytes.NewReader(j))
			d.UseNumber()
			var obj map[string]any
			if err := d.Decode(&obj); err != nil {
				t.Fatal(err)
			}
			w, err := manifest.Locate(obj, manifest.TypeMeta{})
			if err != nil || w == nil || w.Template["spec"] == nil {
				continue
			}
			if _, _, err := inject.Apply(obj, manifest.TypeMeta{}, inject.Options{Version: "v", Image: "i"}, nil); err != nil {
				continue // inject refuses it: nothing to compare
			}
			name := fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(f), ".yaml"), i)
			meta, _ := w.Template["metadata"].(map[string]any)
			m := map[string]any{}
			for k, v := range meta {
				m[k] = v
			}
			m["name"] = name
			delete(m, "namespace")
			pods[name] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": w.Template["spec"]}
		}
	}
	if len(pods) < 10 {
		t.Fatalf("only %d example pods", len(pods))
	}
	return pods
}

// startPolicy starts a kube-apiserver with the policies of delivery d installed, and waits until
// they act in the selected namespace "sel"; "plain" is not selected.
func startPolicy(t *testing.T, d inject.Delivery) *kubetest.Cluster {
	t.Helper()
	o := testPolicy
	o.Delivery = d
	return startPolicyWith(t, o)
}

// startPolicyWith is startPolicy with the policies of o.
func startPolicyWith(t *testing.T, o PolicyOptions) *kubetest.Cluster {
	t.Helper()
	c := kubetest.Start(t)
	policies, bindings, err := Policy(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		installObjects(t, c, p)
	}
	for _, b := range bindings {
		installObjects(t, c, b)
	}
	c.CreateNamespaceLabelled(t, "sel", map[string]string{InjectLabel: Enabled})
	c.CreateNamespace(t, "plain")
	waitMutating(t, c, "sel")
	return c
}

// applied is inject.Apply's pod for pod, with the default options of delivery d.
func applied(t *testing.T, pod map[string]any, d inject.Delivery) (map[string]any, inject.Report) {
	t.Helper()
	return appliedWith(t, pod, inject.Options{Version: testPolicy.Version, Image: testPolicy.Image, Delivery: d})
}

// appliedWith is inject.Apply's pod for pod, with o.
func appliedWith(t *testing.T, pod map[string]any, o inject.Options) (map[string]any, inject.Report) {
	t.Helper()
	out, r, err := inject.Apply(pod, manifest.TypeMeta{}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out, r
}

// checkSame creates pod in "sel", where the policy acts, and Apply's result in "plain", where
// nothing acts, and compares what the API server stored of both.
func checkSame(t *testing.T, c *kubetest.Cluster, pod map[string]any, d inject.Delivery) inject.Report {
	t.Helper()
	o := testPolicy
	o.Delivery = d
	return checkSameWith(t, c, pod, o)
}

// checkSameWith is checkSame for the policies of o (installed in c). With o.Native, a pod that
// nativeMay holds for is stored as it was created, with ReasonPolicyCannot (the policy does
// not convert), every other as inject.Apply with Native makes it.
func checkSameWith(t *testing.T, c *kubetest.Cluster, pod map[string]any, po PolicyOptions) inject.Report {
	t.Helper()
	if rp, _ := pod["spec"].(map[string]any)["restartPolicy"].(string); rp == "" || rp == "Always" {
		// Namespace-wide selection is for pods that run to completion (RunsToCompletion): this
		// one opts in itself.
		pod = deepCopyJSON(t, pod)
		meta := pod["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels[InjectLabel] = Enabled
		meta["labels"] = labels
	}
	o := inject.Options{Version: po.Version, Image: po.Image, Delivery: po.Delivery, Native: po.Native}
	want, r := appliedWith(t, pod, o)
	cannot := false
	if po.Native {
		v, err := manifest.ReadPod(pod, "")
		if err != nil {
			t.Fatal(err)
		}
		if cannot = nativeMay(catalog.Sort(v, catalog.Options{Requests: true})); cannot {
			want = pod
		}
	}
	if sa, _ := pod["spec"].(map[string]any)["serviceAccountName"].(string); sa != "" {
		for _, ns := range []string{"sel", "plain"} {
			// a name the API server refuses leaves the pod refused both ways
			c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": sa}})
		}
	}
	rGot := c.Send(t, "POST", "/api/v1/namespaces/sel/pods", pod)
	rExp := c.Send(t, "POST", "/api/v1/namespaces/plain/pods", want)
	if rGot.Code != 201 || rExp.Code != 201 {
		if rGot.Code != rExp.Code {
			t.Errorf("%s: the API server answered %d to the policy's pod, %d to inject's: %s %s", r.Object, rGot.Code, rExp.Code, rGot.Body, rExp.Body)
		} else {
			t.Logf("%s: refused either way (%d), as an invalid pod", r.Object, rGot.Code)
		}
		return r
	}
	var storedGot, storedExp map[string]any
	if err := json.Unmarshal(rGot.Body, &storedGot); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rExp.Body, &storedExp); err != nil {
		t.Fatal(err)
	}
	// Where inject leaves the pod unchanged and says why, the policy records why, as the webhook
	// does (which reason: TestPolicySkipsAsTheWebhook); nowhere else.
	gotAnn, _ := storedGot["metadata"].(map[string]any)["annotations"].(map[string]any)
	if cannot {
		if skipped, _ := gotAnn[SkippedAnnotation].(string); !strings.HasPrefix(skipped, ReasonPolicyCannot+": ") {
			t.Errorf("%s: the policy's %s: %q; want %s", r.Object, SkippedAnnotation, skipped, ReasonPolicyCannot)
		}
	} else if _, skipped := gotAnn[SkippedAnnotation]; skipped != (r.Injected && r.Reason != "") {
		t.Errorf("%s: the policy's %s: %q; inject's reason %q", r.Object, SkippedAnnotation, gotAnn[SkippedAnnotation], r.Reason)
	}
	// (An explicit pod is selected in "plain" too, where the policy records the same.)
	for _, stored := range []map[string]any{storedGot, storedExp} {
		meta := stored["metadata"].(map[string]any)
		if ann, _ := meta["annotations"].(map[string]any); ann != nil {
			delete(ann, SkippedAnnotation)
			if len(ann) == 0 { // the policy added the annotations with the skipped one
				delete(meta, "annotations")
			}
		}
	}
	got, exp := ownedParts(t, storedGot), ownedParts(t, storedExp)
	if got != exp {
		t.Errorf("%s: the policy's pod differs from inject's (%s)\n--- inject:\n%s\n--- policy:\n%s", r.Object, r, exp, got)
	}
	// The webhook, called on what the policy stored (both installed, or the webhook installed
	// later and the pod created again by its controller), changes nothing.
	if ops, rep, err := inject.Patch(rGot.Body, manifest.TypeMeta{}, o, nil); !cannot && (err != nil || len(ops) > 0) {
		j, _ := json.Marshal(ops)
		t.Errorf("%s: the webhook would change the policy's pod: %v, %s (%s)", r.Object, err, j, rep)
	}
	return r
}

func testExamples(t *testing.T, d inject.Delivery) {
	c := startPolicy(t, d)
	wrapped := 0
	for name, pod := range examplePods(t) {
		t.Run(name, func(t *testing.T) {
			r := checkSame(t, c, pod, d)
			t.Log(r)
			if len(r.Wrapped) > 0 {
				wrapped++
			}
		})
	}
	if wrapped < 20 {
		t.Errorf("only %d example pods were wrapped", wrapped)
	}
}

// TestPolicyExamples: every example pod, created where the MutatingAdmissionPolicy acts (no
// webhook runs), is stored as inject.Apply's pod is.
func TestPolicyExamplesInitCopy(t *testing.T) {
	t.Parallel()
	testExamples(t, inject.InitCopy)
}

func TestPolicyExamplesImageVolume(t *testing.T) {
	t.Parallel()
	testExamples(t, inject.ImageVolume)
}

// TestPolicyExamplesNative: with Native, every example pod is stored as inject.Apply with
// Native stores it, or, where inject may convert a sidecar (nativeMay), as it was created, with
// ReasonPolicyCannot.
func TestPolicyExamplesNative(t *testing.T) {
	t.Parallel()
	o := nativePolicy()
	c := startPolicyWith(t, o)
	count := map[string]int{}
	for name, pod := range examplePods(t) {
		t.Run(name, func(t *testing.T) {
			r := checkSameWith(t, c, pod, o)
			v, err := manifest.ReadPod(pod, "")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case nativeMay(catalog.Sort(v, catalog.Options{Requests: true})):
				count["cannot"]++
			case len(r.Wrapped) > 0:
				count["wrapped"]++
			}
		})
	}
	if count["cannot"] < 5 || count["wrapped"] < 10 {
		t.Errorf("example pods: %v", count)
	}
	t.Logf("example pods: %v", count)
}

// TestPolicyCases: a pod of 50 apps (the CEL's cost), several apps, and the pods the policy must
// leave alone.
func TestPolicyCases(t *testing.T) {
	t.Parallel()
	c := startPolicy(t, inject.InitCopy)
	c.CreateNamespaceLabelled(t, "kube-system-like", map[string]string{InjectLabel: Enabled})
	backstop, backstopBindings := Backstop(Options{}, ByPolicy)
	installObjects(t, c, backstop)
	for _, b := range backstopBindings {
		installObjects(t, c, b)
	}

	t.Run("50 containers", func(t *testing.T) {
		var cs []map[string]any
		for i := range 50 {
			cs = append(cs, testApp(fmt.Sprintf("app-%d", i)))
		}
		cs[7] = map[string]any{"name": "istio-proxy", "image": "istio/proxyv2:1.28.0", "args": []any{"proxy"}}
		r := checkSame(t, c, testPod("fifty", nil, map[string]string{"sidecar.istio.io/status": "{}"}, cs...), inject.InitCopy)
		if len(r.Wrapped) != 49 {
			t.Errorf("inject wrapped %d: %s", len(r.Wrapped), r)
		}
	})
	t.Run("native sidecars with flags and ports", func(t *testing.T) {
		proxy := map[string]any{"name": "proxy", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2", "restartPolicy": "Always",
			"args":         []any{"--health-check", "--http-port", "9190", "--quitquitquit=false", "db"},
			"startupProbe": map[string]any{"httpGet": map[string]any{"path": "/startup", "port": 9190}}}
		pod := testPod("native", nil, map[string]string{"dapr.io/enabled": "true", "dapr.io/http-port": "3600"}, testApp("a"), testApp("b"),
			map[string]any{"name": "daprd", "image": "daprio/daprd", "args": []any{"./daprd"}})
		pod["spec"].(map[string]any)["initContainers"] = []any{proxy}
		r := checkSame(t, c, pod, inject.InitCopy)
		if len(r.Wrapped) != 2 || len(r.Sidecars) != 2 || !strings.Contains(strings.Join(r.Sidecars, " "), "startup-probe=true") {
			t.Errorf("inject: %s %q", r, r.Sidecars)
		}
	})

	// unchanged creates pod in ns and checks that the policy changed nothing but
	// SkippedAnnotation, which begins with skip (none when skip is "").
	unchanged := func(t *testing.T, ns string, pod map[string]any, skip string) {
		t.Helper()
		stored := c.CreatePod(t, ns, pod)
		ann, _ := stored["metadata"].(map[string]any)["annotations"].(map[string]any)
		if ann[contract.InjectedAnnotation] != nil {
			t.Errorf("%s/%s was injected: %v", ns, pod["metadata"].(map[string]any)["name"], ann)
		}
		if got, _ := ann[SkippedAnnotation].(string); skip == "" && got != "" || !strings.HasPrefix(got, skip) {
			t.Errorf("%s/%s: %s %q, want %q...", ns, pod["metadata"].(map[string]any)["name"], SkippedAnnotation, got, skip)
		} else if got != "" {
			t.Logf("%s: %s", SkippedAnnotation, got)
		}
		delete(ann, SkippedAnnotation)
		if len(ann) == 0 { // the policy added the annotations with the skipped one
			delete(stored["metadata"].(map[string]any), "annotations")
		}
		ref := deepCopyJSON(t, pod)
		ref["metadata"].(map[string]any)["name"] = pod["metadata"].(map[string]any)["name"].(string) + "-ref"
		refNS := ns
		if ns == "sel" {
			refNS = "plain"
		}
		want := c.CreatePod(t, refNS, ref)
		if ownedParts(t, stored) != ownedParts(t, want) {
			t.Errorf("%s/%s was changed", ns, pod["metadata"].(map[string]any)["name"])
		}
	}
	noCommand := testApp("b")
	delete(noCommand, "command")
	wrappedBefore := testApp("a")
	wrappedBefore["command"] = []any{contract.Binary}
	ownsEnv := testApp("a")
	ownsEnv["env"] = []any{map[string]any{"name": contract.Env(contract.FlagRestartPolicy), "value": "Never"}}
	clash := testPod("u9", nil, nil, testApp("a"))
	clash["spec"].(map[string]any)["volumes"] = []any{map[string]any{"name": contract.BinVolume, "emptyDir": map[string]any{}}}
	for name, tc := range map[string]struct {
		ns   string
		pod  map[string]any
		skip string
	}{
		"unselected namespace":  {"plain", testPod("u1", nil, nil, testApp("a")), ""},
		"opt-out label":         {"sel", testPod("u2", map[string]string{InjectLabel: Disabled}, nil, testApp("a")), ""},
		"opt-out annotation":    {"sel", testPod("u3", nil, map[string]string{InjectLabel: OptOutAnnotationValue}, testApp("a")), ""},
		"app without a command": {"sel", testPod("u4", nil, nil, testApp("a"), noCommand), ReasonNoCommand + ": container b has no command, so the ENTRYPOINT of its image example/app:1 decides what runs, which the admission policy cannot read"},
		"sidecars only":         {"sel", testPod("u5", nil, nil, map[string]any{"name": "istio-proxy", "image": "istio/proxyv2", "args": []any{"proxy"}}), ""},
		"wrapped before":        {"sel", testPod("u7", nil, map[string]string{"x": "y"}, wrappedBefore), ReasonPolicyCannot + ": container a runs " + contract.Binary},
		"sets sidesync's env":   {"sel", testPod("u8", nil, nil, ownsEnv), ReasonPolicyCannot + ": container a sets " + contract.Env(contract.FlagRestartPolicy)},
		"a name sidesync owns":  {"sel", clash, ReasonInvalid + ": "},
	} {
		t.Run(name, func(t *testing.T) { unchanged(t, tc.ns, tc.pod, tc.skip) })
	}
	t.Run("a pod wrapped loses an earlier skipped annotation", func(t *testing.T) {
		// as at a reinvocation that finds the pod wrappable, or the webhook's
		stored := c.CreatePod(t, "sel", testPod("was-skipped", nil, map[string]string{SkippedAnnotation: ReasonNoCommand + ": earlier"}, testApp("a")))
		ann, _ := stored["metadata"].(map[string]any)["annotations"].(map[string]any)
		if _, wrapped := ann[contract.InjectedAnnotation]; !wrapped || ann[SkippedAnnotation] != nil {
			t.Errorf("annotations %v, want %s and no %s", ann, contract.InjectedAnnotation, SkippedAnnotation)
		}
	})
	// Without a webhook, the skipped annotation is the user's only word: the backstop quotes
	// it, and is silent for a pod wrapped, or whose sidecars need no sidesync.
	t.Run("the backstop quotes the policy's reason", func(t *testing.T) {
		warning := func(pod map[string]any) string {
			r := c.Send(t, "POST", "/api/v1/namespaces/sel/pods?dryRun=All", pod)
			if r.Code != 201 {
				t.Fatalf("%d %s (the backstop must never deny)", r.Code, r.Body)
			}
			return strings.Join(r.Warnings, "\n")
		}
		deadline := time.Now().Add(3 * time.Minute)
		want := BackstopMessage + ", " + SkippedAnnotation + ": " + ReasonNoCommand + ": container b has no command"
		for w := warning(testPod("warned", nil, nil, testApp("a"), noCommand)); !strings.Contains(w, want); w = warning(testPod("warned", nil, nil, testApp("a"), noCommand)) {
			if time.Now().After(deadline) {
				t.Fatalf("no warning %q for a pod the policy left alone: %q", want, w)
			}
			time.Sleep(100 * time.Millisecond) // the API server loads policies and bindings asynchronously
		}
		native := testPod("native-only", nil, nil, testApp("a"))
		native["spec"].(map[string]any)["initContainers"] = []any{map[string]any{"name": "proxy", "image": "example/proxy:1", "restartPolicy": "Always",
			"startupProbe": map[string]any{"tcpSocket": map[string]any{"port": 1}}}}
		for name, pod := range map[string]map[string]any{"wrapped": testPod("ok", nil, nil, testApp("a")), "not needed": native} {
			if w := warning(pod); strings.Contains(w, BackstopMessage) {
				t.Errorf("%s: warned %q", name, w)
			}
		}
	})
	t.Run("excluded namespace by its name label", func(t *testing.T) {
		o := Options{Namespace: "kube-system-like"}
		if got := o.excluded().Values; got[len(got)-1] != "kube-system-like" {
			t.Fatalf("excluded %q", got)
		}
		policies, bindings, err := Policy(PolicyOptions{Version: testPolicy.Version, Image: testPolicy.Image, Namespace: "kube-system-like"})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bindings {
			if !strings.Contains(fmt.Sprint(b.Spec.MatchResources.NamespaceSelector), "kube-system-like") {
				t.Errorf("binding %s does not exclude the namespace: %v", b.Name, b.Spec.MatchResources.NamespaceSelector)
			}
		}
		_ = policies
		// The installed policy excludes kube-system by the same selector: a pod there stays as it
		// is, whatever its labels.
		if code := c.Do(t, "PATCH", "/api/v1/namespaces/kube-system", map[string]any{"metadata": map[string]any{"labels": map[string]any{InjectLabel: Enabled}}}, nil); code != 200 {
			t.Fatalf("labelling kube-system: %d", code)
		}
		c.CreateServiceAccount(t, "kube-system", "default")
		unchanged(t, "kube-system", testPod("u6", map[string]string{InjectLabel: Enabled}, nil, testApp("a")), "")
	})
}

// TestBackstop: with neither webhook nor policy, a selected pod admitted unwrapped gets the
// backstop's warning, and a wrapped one, an unselected one and an opted-out one none.
func TestBackstop(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t)
	policy, bindings := Backstop(Options{}, ByWebhook)
	installObjects(t, c, policy)
	for _, b := range bindings {
		installObjects(t, c, b)
	}
	c.CreateNamespaceLabelled(t, "sel", map[string]string{InjectLabel: Enabled})
	c.CreateNamespace(t, "plain")
	warned := func(ns string, pod map[string]any) bool {
		r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods", pod)
		if r.Code != 201 {
			t.Fatalf("%s: %d %s (the backstop must never deny)", ns, r.Code, r.Body)
		}
		for _, w := range r.Warnings {
			if strings.Contains(w, BackstopMessage) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, labels := range []map[string]string{nil, {InjectLabel: Enabled}} {
		for i := 0; !warned("sel", testPod(fmt.Sprintf("first-%d-%d", len(labels), i), labels, nil, testApp("a"))); i++ {
			if time.Now().After(deadline) {
				t.Fatalf("no warning for an unwrapped pod labelled %v in a selected namespace", labels)
			}
			time.Sleep(100 * time.Millisecond) // the API server loads policies and bindings asynchronously
		}
	}
	forever := testPod("forever", nil, nil, testApp("a"))
	forever["spec"].(map[string]any)["restartPolicy"] = "Always"
	wrappedPod, r := applied(t, testPod("wrapped", nil, nil, testApp("a")), inject.InitCopy)
	if len(r.Wrapped) != 1 {
		t.Fatal(r)
	}
	for name, tc := range map[string]struct {
		ns   string
		pod  map[string]any
		want bool
	}{
		"unwrapped, explicit":    {"plain", testPod("explicit", map[string]string{InjectLabel: Enabled}, nil, testApp("a")), true},
		"wrapped":                {"sel", wrappedPod, false},
		"skipped":                {"sel", testPod("skipped", nil, map[string]string{SkippedAnnotation: "no command"}, testApp("a")), false},
		"unselected":             {"plain", testPod("plain", nil, nil, testApp("a")), false},
		"runs forever":           {"sel", forever, false},
		"opted out (label)":      {"sel", testPod("out1", map[string]string{InjectLabel: Disabled}, nil, testApp("a")), false},
		"opted out (annotation)": {"sel", testPod("out2", nil, map[string]string{InjectLabel: OptOutAnnotationValue}, testApp("a")), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := warned(tc.ns, tc.pod); got != tc.want {
				t.Errorf("warned %v, want %v", got, tc.want)
			}
		})
	}
}

func deepCopyJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackstopOnlyWarns: the backstop's bindings warn and audit, never deny, and select as the
// webhooks do; its policy fails open.
func TestBackstopOnlyWarns(t *testing.T) {
	policy, bindings := Backstop(Options{Namespace: "sidesync-system"}, ByWebhook)
	if *policy.Spec.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy %s", *policy.Spec.FailurePolicy)
	}
	hooks := MutatingWebhookConfiguration(Options{Namespace: "sidesync-system"}).Webhooks
	if len(bindings) != len(hooks) {
		t.Fatalf("%d bindings for %d webhooks", len(bindings), len(hooks))
	}
	for i, b := range bindings {
		if !reflect.DeepEqual(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}) {
			t.Errorf("%s: actions %q", b.Name, b.Spec.ValidationActions)
		}
		if !reflect.DeepEqual(b.Spec.MatchResources.NamespaceSelector, hooks[i].NamespaceSelector) || !reflect.DeepEqual(b.Spec.MatchResources.ObjectSelector, hooks[i].ObjectSelector) {
			t.Errorf("%s selects otherwise than webhook %s", b.Name, hooks[i].Name)
		}
	}
}

// TestPolicySelectsAsTheWebhooks: one policy per webhook, with its failure policy, selectors,
// match conditions and reinvocation; the same policy for the same options.
func TestPolicySelectsAsTheWebhooks(t *testing.T) {
	policies, bindings, err := Policy(PolicyOptions{Version: "v1", Image: "img:1", Namespace: "sidesync-system"})
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := Policy(PolicyOptions{Version: "v1", Image: "img:1", Namespace: "sidesync-system"})
	if err != nil || !reflect.DeepEqual(policies, again) {
		t.Errorf("Policy is not deterministic (%v)", err)
	}
	hooks := MutatingWebhookConfiguration(Options{Namespace: "sidesync-system"}).Webhooks
	for i, h := range hooks {
		p, b := policies[i], bindings[i]
		if p.Name != h.Name || b.Spec.PolicyName != p.Name || *p.Spec.FailurePolicy != *h.FailurePolicy || p.Spec.ReinvocationPolicy != *h.ReinvocationPolicy {
			t.Errorf("policy %s (%s, %s) for webhook %s (%s, %s)", p.Name, *p.Spec.FailurePolicy, p.Spec.ReinvocationPolicy, h.Name, *h.FailurePolicy, *h.ReinvocationPolicy)
		}
		if !reflect.DeepEqual(b.Spec.MatchResources.NamespaceSelector, h.NamespaceSelector) || !reflect.DeepEqual(b.Spec.MatchResources.ObjectSelector, h.ObjectSelector) {
			t.Errorf("%s selects otherwise than its webhook", b.Name)
		}
		if len(p.Spec.MatchConditions) < len(h.MatchConditions) || !reflect.DeepEqual(p.Spec.MatchConditions[:len(h.MatchConditions)], h.MatchConditions) {
			t.Errorf("%s: match conditions differ from the webhook's", p.Name)
		}
	}
	if _, _, err := Policy(PolicyOptions{Version: "v1", Image: ""}); err == nil {
		t.Error("no image: no error")
	}
}
