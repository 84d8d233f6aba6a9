package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// TestPolicyVariablesAsInject: the MutatingAdmissionPolicy's variables, evaluated as the API
// server evaluates them, agree with inject.Apply on every pod of the corpus, the examples and
// inject's testdata: whether the pod is wrapped (ok), which containers (wrapped), and what
// contract.FoundAnnotation records of its sidecars (found, where config.FormatSidecar's syntax
// meets the catalog's CEL). The API server tests compare whole stored pods, with real parts;
// this one runs everywhere.
func TestPolicyVariablesAsInject(t *testing.T) {
	for _, o := range []PolicyOptions{testPolicy, nativePolicy()} {
		t.Run(fmt.Sprintf("native=%v", o.Native), func(t *testing.T) { policyVariablesAsInject(t, o) })
	}
}

func policyVariablesAsInject(t *testing.T, o PolicyOptions) {
	env := celeval.For(t)
	spec, err := policySpec(o)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	wrapped := 0
	for _, p := range pods {
		vars := map[string]any{}
		for _, v := range spec.Variables {
			got, err := env.Eval(v.Expression, p.Object, vars)
			if err != nil {
				t.Fatalf("%s: variable %s: %v", p.Name, v.Name, err)
			}
			vars[v.Name] = got
		}
		ok, _ := vars["ok"].(bool)
		names, found := celStrings(t, env, "variables.wrapped", p.Object, vars), celStrings(t, env, "variables.found", p.Object, vars)
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": p.Object["metadata"], "spec": p.Object["spec"]}
		out, r, err := inject.Apply(jsonCopy(t, pod), manifest.TypeMeta{}, inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery, Native: o.Native}, nil)
		// with Native, the policy leaves alone what inject may convert (nativeMay)
		injected := err == nil && len(r.Wrapped) > 0 && !(o.Native && vars["nativeMay"] == true)
		if ok != injected {
			t.Errorf("%s: the policy wraps it: %v; inject: %v (%v, %s)", p.Name, ok, injected, err, r)
			continue
		}
		if !ok {
			continue
		}
		wrapped++
		ann, _ := out["metadata"].(map[string]any)["annotations"].(map[string]any)
		if got, want := strings.Join(names, ","), ann[contract.WrappedAnnotation]; got != want {
			t.Errorf("%s: the policy wraps %q, inject %q", p.Name, got, want)
		}
		want, _ := ann[contract.FoundAnnotation].(string)
		if got := strings.Join(found, ","); got != want {
			t.Errorf("%s: the policy finds the sidecars %q, inject %q", p.Name, got, want)
		}
	}
	if min := map[bool]int{false: 20, true: 10}[o.Native]; wrapped < min {
		t.Errorf("only %d pods wrapped", wrapped)
	}
}

// celStrings evaluates a list of strings.
func celStrings(t *testing.T, env *celeval.Env, expr string, object, vars map[string]any) []string {
	t.Helper()
	s, err := env.String(expr+`.join("\n")`, object, vars)
	if err != nil {
		t.Fatal(err)
	}
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// jsonCopy is a copy of v that inject may change.
func jsonCopy(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(fmt.Errorf("copying a pod: %w", err))
	}
	out, err := manifest.DecodeJSONObject(j)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPolicySkipsAsTheWebhook: the MutatingAdmissionPolicy's skip variable (the value of
// SkippedAnnotation it writes), evaluated as the API server evaluates it, gives the webhook's
// reason (Mutator without registry lookups) on every pod of the corpus, the examples, inject's
// testdata and the synthetic pods below that the policy sees (not injected yet, not excluded):
// the same reason where the webhook skips the pod, ReasonPolicyCannot or nothing where the
// webhook wraps it (the policy wraps what it can, as TestPolicyVariablesAsInject checks), and
// nothing where the webhook has nothing to change. Each reason is met at least once.
func TestPolicySkipsAsTheWebhook(t *testing.T) {
	for _, o := range []PolicyOptions{testPolicy, nativePolicy()} {
		t.Run(fmt.Sprintf("native=%v", o.Native), func(t *testing.T) { policySkipsAsTheWebhook(t, o) })
	}
}

func policySkipsAsTheWebhook(t *testing.T, o PolicyOptions) {
	env := celeval.For(t)
	spec, err := policySpec(o)
	if err != nil {
		t.Fatal(err)
	}
	app := `{name: app, image: example/app:1, command: [/app]%s}`
	synthetic := []string{
		`spec: {containers: [` + fmt.Sprintf(app, "") + `], volumes: [{name: sidesync-bin, emptyDir: {}}]}`,
		`spec: {containers: [` + fmt.Sprintf(app, "") + `, {name: b, image: example/b:1, volumeMounts: [{name: x, mountPath: /sidesync/x}]}]}`,
		`spec: {containers: [{name: app, image: example/app:1, command: [` + contract.Binary + `], args: [--, /app]}]}`,
		`spec: {containers: [` + fmt.Sprintf(app, ", env: [{name: SIDESYNC_RESTART_POLICY, value: Never}]") + `]}`,
		`spec: {containers: [` + fmt.Sprintf(app, ", restartPolicyRules: [{action: Re-start, exitCodes: {operator: In, values: [1]}}]") + `]}`,
		`spec: {containers: [` + fmt.Sprintf(app, "") + `], initContainers: [{name: native, image: example/native:1, restartPolicy: Always, startupProbe: {tcpSocket: {port: 1}}}]}`,
		`spec: {containers: [{name: app, image: example/app:1}, {name: istio-proxy, image: istio/proxyv2, args: [proxy]}]}`,
	}
	if o.Native {
		synthetic = append(synthetic, nativeSynthetic...)
	}
	m := &Mutator{Inject: inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery, Native: o.Native}}
	met := map[string]int{}
	for _, p := range celeval.WithSynthetic(t, synthetic) {
		if _, injected := p.Vars()["ann"].(map[string]any)[contract.InjectedAnnotation]; injected {
			continue // the policy's match condition not-injected
		}
		vars := map[string]any{}
		for _, v := range spec.Variables {
			got, err := env.Eval(v.Expression, p.Object, vars)
			if err != nil {
				t.Fatalf("%s: variable %s: %v", p.Name, v.Name, err)
			}
			vars[v.Name] = got
		}
		skip, _ := vars["skip"].(string)
		got, _, _ := strings.Cut(skip, ": ")
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": p.Object["metadata"], "spec": p.Object["spec"]}
		raw, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		res := m.Mutate(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: "jobs", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}})
		var want []string // the reasons the policy may give
		switch {
		case o.Native && vars["nativeMay"] == true && !slices.Contains([]string{ReasonExcluded, ReasonInvalid}, res.Reason):
			want = []string{ReasonPolicyCannot} // nativeMay: inject may convert (TestNativeMayCoversInject)
		case res.Reason == ReasonExcluded || res.Outcome == Errored:
			continue // the policy's match conditions, or a pod the API server refuses
		case res.Outcome == Skipped || res.Outcome == Denied:
			want = []string{res.Reason}
		case res.Outcome == Wrapped:
			want = []string{"", ReasonPolicyCannot}
		default:
			want = []string{""}
		}
		if !slices.Contains(want, got) {
			t.Errorf("%s: the policy skips it with %q, want one of %q (the webhook: %s %s: %s)", p.Name, skip, want, res.Outcome, res.Reason, res.Message)
		}
		if got == ReasonNotNeeded && skip != ReasonNotNeeded+": "+res.Message {
			t.Errorf("%s: the policy says %q, the webhook %q", p.Name, skip, ReasonNotNeeded+": "+res.Message)
		}
		if ok, _ := vars["ok"].(bool); ok != (skip == "" && res.Outcome == Wrapped) {
			t.Errorf("%s: ok %v, skip %q, the webhook %s", p.Name, ok, skip, res.Outcome)
		}
		met[got]++
	}
	for _, r := range []string{ReasonInvalid, ReasonNoCommand, ReasonNotNeeded, ReasonPolicyCannot, ""} {
		if met[r] == 0 {
			t.Errorf("no pod skipped with %q: %v", r, met)
		}
	}
	t.Logf("reasons: %v", met)
}

// TestPolicySkipReasonsDocumented: docs/POLICY.md's table of sidesync.io/skipped has a row for
// every reason the policy writes, and no other.
func TestPolicySkipReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/POLICY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "| reason | when | the webhook |\n| --- | --- | --- |\n")
	table, _, _ = strings.Cut(table, "\n\n")
	var documented, written []string
	for _, row := range strings.Split(table, "\n") {
		reason, _, _ := strings.Cut(strings.TrimPrefix(row, "| `"), "`")
		documented = append(documented, reason)
	}
	for _, c := range skipCases("", true) {
		if c.reason != "" && !slices.Contains(written, c.reason) {
			written = append(written, c.reason)
		}
	}
	slices.Sort(documented)
	slices.Sort(written)
	if !slices.Equal(documented, written) {
		t.Errorf("docs/POLICY.md documents the reasons %q; the policy writes %q", documented, written)
	}
}
