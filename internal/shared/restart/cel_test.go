package restart_test

import (
	"testing"

	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// TestPolicyCEL: the restartPolicy PolicyCEL writes for each regular container is the one
// Effective chooses, once the wrapper reads it (ParsePolicy): evaluated as the API server does,
// for every regular container of the corpus, the examples and inject's testdata, and for every
// combination of the container's and the pod's policies (unset, blank, each policy, another case,
// a word that is none).
func TestPolicyCEL(t *testing.T) {
	env, err := celeval.New()
	if err != nil {
		t.Fatal(err)
	}
	expr := "object.spec.containers.map(c, " + restart.PolicyCEL("c", "object.spec") + ")[0]"
	type pair struct{ container, pod string }
	var cases []pair
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.View.Containers {
			cases = append(cases, pair{c.RestartPolicy, p.View.RestartPolicy})
		}
	}
	policies := []string{"", " ", string(restart.Never), string(restart.OnFailure), string(restart.Always), "onfailure", "Sometimes"}
	for _, c := range policies {
		for _, p := range policies {
			cases = append(cases, pair{c, p})
		}
	}
	for _, tc := range cases {
		container := map[string]any{"name": "app"}
		if tc.container != "" {
			container["restartPolicy"] = tc.container
		}
		spec := map[string]any{"containers": []any{container}}
		if tc.pod != "" {
			spec["restartPolicy"] = tc.pod
		}
		written, err := env.String(expr, map[string]any{"spec": spec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := restart.Effective(tc.container, tc.pod, nil)
		read, readErr := restart.ParsePolicy(written)
		if (wantErr != nil) != (readErr != nil) || wantErr == nil && read != want.Policy {
			t.Errorf("container %q, pod %q: Effective gives %q (%v); PolicyCEL writes %q, read as %q (%v)\nCEL: %s",
				tc.container, tc.pod, want.Policy, wantErr, written, read, readErr, expr)
		}
	}
}
