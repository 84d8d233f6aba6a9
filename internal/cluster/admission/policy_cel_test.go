package admission

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
	env := celeval.For(t)
	spec, err := policySpec(testPolicy)
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
		out, r, err := inject.Apply(jsonCopy(t, pod), manifest.TypeMeta{}, inject.Options{Version: testPolicy.Version, Image: testPolicy.Image, Delivery: testPolicy.Delivery}, nil)
		injected := err == nil && len(r.Wrapped) > 0
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
	if wrapped < 20 {
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
