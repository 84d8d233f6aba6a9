package inject

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/manifest"
	"sigs.k8s.io/yaml"
)

// decode reads a YAML or JSON object as kubectl-sidesync does: numbers kept exactly.
func decode(t *testing.T, y string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("YAMLToJSON: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return obj
}

// toYAML writes obj as kubectl-sidesync does.
func toYAML(t *testing.T, obj any) string {
	t.Helper()
	j, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatalf("JSONToYAML: %v", err)
	}
	return string(y)
}

// roundTrip is obj written and read again, as a second `kubectl sidesync inject` reads it.
func roundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	return decode(t, toYAML(t, obj))
}

// apply is Apply that must succeed.
func apply(t *testing.T, obj map[string]any, o Options, eps Entrypoints) (map[string]any, Report) {
	t.Helper()
	out, r, err := Apply(obj, manifest.TypeMeta{}, o, eps)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return out, r
}

// opts are the options most tests use.
func opts() Options {
	return Options{Version: "v1.2.3", Image: "ghcr.io/sidesync/sidesync:v1.2.3"}
}

// at walks obj by keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %q of a %T", path, k, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: [%d] of a %T", path, k, v)
			}
			v = l[k]
		}
	}
	return v
}
