package catalog

import (
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Expectation is a sidecar that a pod expects without asking for it: an annotation that only its
// injector reads (Entry.Expects).
type Expectation struct {
	Entry *Entry // its row, shared: read only
	Key   string // the annotation: "proxy.istio.io/config"
}

// Expected lists the sidecars that pod v expects from its namespace, in the catalog's order: the
// rows with an annotation in Expects on the pod, and neither a mark nor a request (Sort announces
// those) nor one of Unless (the pod opts out). A Helm chart's Job that configures Istio's proxy
// (proxy.istio.io/config) is written for a namespace that asks for Istio.
func Expected(v *manifest.PodView) []Expectation {
	keys := make([]string, 0, len(v.Annotations))
	for k := range v.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Expectation
	for i := range table {
		e := &table[i]
		if len(e.Expects) == 0 || anyOn(e.Unless, v) || anyOn(e.Marks, v) || anyOn(e.Requests, v) {
			continue
		}
		if k, ok := e.expects(keys); ok {
			out = append(out, Expectation{Entry: e, Key: k})
		}
	}
	return out
}

// expects returns the first of keys that only e's injector reads.
func (e *Entry) expects(keys []string) (string, bool) {
	own := func(k string) bool {
		return slices.ContainsFunc(append(slices.Clone(e.Requests), e.Unless...), func(m Mark) bool { return !m.Label && m.Key == k })
	}
	for _, k := range keys {
		if own(k) {
			continue
		}
		for _, x := range e.Expects {
			if k == x || strings.HasSuffix(x, "/") && strings.HasPrefix(k, x) {
				return k, true
			}
		}
	}
	return "", false
}
