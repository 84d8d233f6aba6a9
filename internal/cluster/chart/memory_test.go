package chart

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// goMemLimitOf renders ch with the memory limit and returns the container's GOMEMLIMIT and
// whether it is set.
func goMemLimitOf(ch Chart, memory any) (string, bool, error) {
	limits := map[string]any{"cpu": "1", "memory": memory} // nil: Helm drops the default's
	objs, err := ch.Render(map[string]any{"resources": map[string]any{"limits": limits}}, testNamespace)
	if err != nil {
		return "", false, err
	}
	deps := OfKind(objs, "Deployment")
	if len(deps) != 1 {
		return "", false, fmt.Errorf("%d Deployments", len(deps))
	}
	ctr := dig(deps[0], "spec", "template", "spec")["containers"].([]any)[0].(map[string]any)
	for _, e := range ctr["env"].([]any) {
		if e := e.(map[string]any); e["name"] == "GOMEMLIMIT" {
			v, ok := e["value"].(string)
			if !ok {
				return "", true, fmt.Errorf("GOMEMLIMIT is %v, not a value", e)
			}
			return v, true, nil
		}
	}
	return "", false, nil
}

// TestGoMemLimit: both charts set GOMEMLIMIT to GoMemLimitPercent of the memory limit, as
// Kubernetes reads the quantity (resource.Quantity's Value, the bytes the kubelet limits the
// container to), for the ways users write it; without a limit, none.
func TestGoMemLimit(t *testing.T) {
	quantities := []any{"256Mi", "1Gi", "1.5Gi", "0.125Gi", "64Ki", "2Ti", "500M", "2G", "1.25G", "1k", "0.001Ki",
		"268435456", "0268435456", 268435456, float64(1 << 30)}
	for _, ch := range Charts() {
		qs := quantities
		if ch != Injector {
			qs = qs[:3] // the same generated template: a few are enough
		}
		for _, q := range qs {
			t.Run(fmt.Sprintf("%s/%v", ch, q), func(t *testing.T) {
				got, set, err := goMemLimitOf(ch, q)
				if err != nil {
					t.Fatal(err)
				}
				s, ok := q.(string)
				if !ok {
					s = fmt.Sprintf("%.0f", toFloat(q))
				}
				qty := resource.MustParse(s)
				want := qty.Value() * GoMemLimitPercent / 100
				if !set || got != fmt.Sprint(want) {
					t.Errorf("GOMEMLIMIT %q (set %v), want %d", got, set, want)
				}
			})
		}
		t.Run(string(ch)+"/no limit", func(t *testing.T) {
			if got, set, err := goMemLimitOf(ch, nil); err != nil || set {
				t.Errorf("without a memory limit: GOMEMLIMIT %q, %v", got, err)
			}
		})
	}
}

func toFloat(q any) float64 {
	switch v := q.(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

// TestGoMemLimitRefuses: a memory limit the template cannot read fails the render, naming it.
func TestGoMemLimitRefuses(t *testing.T) {
	for _, q := range []string{"1e9", "256mi", "1.2345Gi", "Gi", "-1Gi", "1Ei", "256 Mi", "1.Gi"} {
		t.Run(q, func(t *testing.T) {
			_, _, err := goMemLimitOf(Injector, q)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("resources.limits.memory %q", q)) {
				t.Errorf("rendered with memory %q: %v", q, err)
			}
		})
	}
}
