package stream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	yaml3 "go.yaml.in/yaml/v3"
)

// read is Read that must succeed.
func read(t *testing.T, in string) ([]Document, Format) {
	t.Helper()
	docs, f, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Read(%q): %v", in, err)
	}
	return docs, f
}

// objects is the documents' objects.
func objects(docs []Document) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		out = append(out, d.Object)
	}
	return out
}

func TestReadYAML(t *testing.T) {
	docs, f := read(t, `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data: {big: "1", num: 12345678901234567890}
---
# only a comment
---
null
---
apiVersion: v1
kind: Pod
metadata: {name: b}
`)
	if f != YAML {
		t.Errorf("format %v, want YAML", f)
	}
	var ns []int
	for _, d := range docs {
		ns = append(ns, d.N)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, ns); diff != "" {
		t.Errorf("document numbers (-want +got) (comments alone are no document, null is):\n%s", diff)
	}
	if docs[1].Object != nil {
		t.Errorf("null read as %v", docs[1].Object)
	}
	if got := docs[0].Object["data"].(map[string]any)["num"]; got != json.Number("12345678901234567890") {
		t.Errorf("big number read as %#v", got)
	}
}

// TestReadExactNumbers: a plain scalar written as a JSON number is read as that number's text,
// which kubectl's reader rounds to a float64 or, out of float64's range, takes for a string.
// Everything else is read as kubectl reads it.
func TestReadExactNumbers(t *testing.T) {
	tests := []struct {
		name, v string // the YAML of v in "kind: A\nv: ..."
		want    any
	}{
		{"beyond uint64", "123456789012345678901234567890", json.Number("123456789012345678901234567890")},
		{"a trailing zero", "1.50", json.Number("1.50")},
		{"beyond float64", "1e400", json.Number("1e400")},
		{"below float64", "1e-400", json.Number("1e-400")},
		{"negative zero", "-0", json.Number("-0")},
		{"an exponent", "1E+2", json.Number("1E+2")},
		{"an integer", "12345678901234567890", json.Number("12345678901234567890")},
		{"an integer beyond uint64 below 1e21", "100000000000000000100", json.Number("100000000000000000100")},
		{"quoted", `"1e400"`, "1e400"},
		{"tagged", "!!float 1.50", json.Number("1.5")},
		{"YAML 1.1 hexadecimal, as kubectl reads it", "0x1F", json.Number("31")},
		{"YAML 1.1 boolean, as kubectl reads it", "yes", true},
		{"in a flow list", "[1.50, 2.0]", []any{json.Number("1.50"), json.Number("2.0")}},
		{"under a key kubectl renames", "{yes: 1.50}", map[string]any{"true": json.Number("1.50")}},
		{"through an alias", "[&x 1.50, *x]", []any{json.Number("1.50"), json.Number("1.50")}},
		{"under a merge key, as kubectl reads it", "{<<: {a: 1.50}}", map[string]any{"a": json.Number("1.5")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, _ := read(t, "kind: A\nv: "+tt.v+"\n")
			if diff := cmp.Diff(tt.want, docs[0].Object["v"]); diff != "" {
				t.Errorf("v: %s read as (-want +got):\n%s", tt.v, diff)
			}
		})
	}
}

func TestReadJSON(t *testing.T) {
	docs, f := read(t, ` {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "x": 1.50}
{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "v": "<&>"}]} null`)
	want := []map[string]any{
		{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a"}, "x": json.Number("1.50")},
		{"apiVersion": "v1", "kind": "List", "items": []any{map[string]any{"kind": "Pod", "v": "<&>"}}},
		nil,
	}
	if diff := cmp.Diff(want, objects(docs)); diff != "" || f != JSON {
		t.Errorf("Read, format %v (-want +got):\n%s", f, diff)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bad YAML in the second document", "kind: A\n---\nkind: [B\n", "document 2: "},
		{"a key twice", "kind: A\n---\nkind: B\nkind: C\n", "document 2: "},
		{"a scalar document", "kind: A\n---\njust text\n", "document 2: not an object"},
		{"a list document", "- a\n- b\n", "document 1: not an object"},
		{"bad JSON in the second object", `{"kind": "A"} {"kind": `, "document 2: "},
		{"a JSON array", `[{"kind": "A"}]`, "document 1: not an object"},
		{"a bad separator", "kind: A\n--- x\nkind: B\n", "document 1: invalid Yaml document separator: x"},
		{"a bad separator after a comment chunk", "# c\n---\nkind: A\n---\nkind: B\n---x\n", "document 2: invalid Yaml document separator: x"},
		{"two keys that are one JSON key", "kind: A\n1: a\n\"1\": b\n", `document 1: key "1" twice in one mapping, as 1 and 1`},
		{"two keys that are one JSON key, one of them merged", "kind: A\n---\n0: &b {0.}\n<<: *b\n", `document 2: key "0" twice in one mapping, as 0 and 0.`},
		{"too deep", "a: " + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "document 1: nested deeper than 512 levels"},
		{"a key twice in a JSON object", `{"kind": "A"} {"kind": "B", "v": {"a": 1, "a": 1}}`, `document 2: key "a" twice in one object`},
		{"JSON too deep", `{"kind": "A"}` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "document 2: nested deeper than 512 levels"},
		{"JSON that ends early", `{"kind": "A"}{"kind"`, "document 2: unexpected end of JSON input"},
		{"too large", strings.Repeat("#", MaxInput+1), "input larger than 16 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Read(strings.NewReader(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Read error %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

// TestEach visits plain objects and a List's items, and puts back what it is given.
func TestEach(t *testing.T) {
	docs, _ := read(t, `kind: Pod
---
kind: List
items: [{kind: Job}, {kind: CronJob}]
---
kind: PodList
items: [{kind: Pod}]
---
kind: ListView
items: [{kind: Pod}]
`)
	var seen []string
	err := Each(docs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		seen = append(seen, where+" "+obj["kind"].(string)+" "+tm.Kind)
		return map[string]any{"kind": "Seen" + obj["kind"].(string)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"document 1 Pod ", "document 2, items[0] Job ", "document 2, items[1] CronJob ", "document 3, items[0] Pod Pod", "document 4 ListView "}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("visited (-want +got):\n%s", diff)
	}
	if got := docs[1].Object["items"].([]any)[1].(map[string]any)["kind"]; got != "SeenCronJob" {
		t.Errorf("item not replaced: %v", got)
	}
	if err := Each([]Document{{N: 1, Object: map[string]any{"kind": "List", "items": []any{"x"}}}}, nil); err == nil ||
		err.Error() != "document 1: items[0]: not an object" {
		t.Errorf("Each over a bad item: %v", err)
	}
}

// TestJSONKey: mapping keys are named as sigs.k8s.io/yaml names them.
func TestJSONKey(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"kind", "kind"}, {"app.kubernetes.io/name", "app.kubernetes.io/name"}, {`"1.50"`, "1.50"}, {"'yes'", "yes"},
		{"8080", "8080"}, {"-1", "-1"}, {"007", "7"}, {"1.50", "1.5"}, {"0x1F", "31"}, {"+1", "1"}, {"yes", "true"}, {"Off", "false"},
		{"!!str 5", "5"}, {"with space", "with space"}, {"é", "é"},
		{"? 0" + strings.Repeat("e", 1100) + "\n", "0" + strings.Repeat("e", 1100)},
	}
	for _, tt := range tests {
		text := tt.yaml + ": v\n" // an explicit key ("? k\n") takes its value on the next line
		docs, _ := read(t, text)
		var got []string
		for k := range docs[0].Object {
			got = append(got, k)
		}
		if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
			t.Errorf("%s: read as (-want +got):\n%s", tt.yaml, diff)
		}
		var n yaml3.Node
		if err := yaml3.Unmarshal([]byte(text), &n); err != nil {
			t.Fatal(err)
		}
		if k, ok := jsonKey(n.Content[0].Content[0]); k != tt.want || !ok {
			t.Errorf("jsonKey(%s) = %q, %v; want %q as sigs.k8s.io/yaml reads it", tt.yaml, k, ok, tt.want)
		}
	}
}
