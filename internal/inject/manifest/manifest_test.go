package manifest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadWriteYAML(t *testing.T) {
	in := `# leading comment
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
`
	docs, f, err := Read(strings.NewReader(in))
	if err != nil || f != YAML {
		t.Fatalf("Read: %v, format %v", err, f)
	}
	var ns []int
	for _, d := range docs {
		if d.Object != nil {
			ns = append(ns, d.N)
		}
	}
	if !cmp.Equal(ns, []int{1, 3}) || len(docs) != 3 {
		t.Errorf("documents with objects %v of %d, want [1 3] of 3 (comments alone are no document, null is)", ns, len(docs))
	}
	if n := docs[0].Object["data"].(map[string]any)["num"]; n != json.Number("12345678901234567890") {
		t.Errorf("big number read as %#v", n)
	}
	var out bytes.Buffer
	if err := Write(&out, docs, YAML); err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\ndata:\n  big: \"1\"\n  num: 12345678901234567890\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("Write (-want +got):\n%s", diff)
	}
}

func TestReadWriteJSON(t *testing.T) {
	in := ` {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "x": 1.50}
{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "v": "<&>"}]}`
	docs, f, err := Read(strings.NewReader(in))
	if err != nil || f != JSON || len(docs) != 2 {
		t.Fatalf("Read: %d documents, %v, format %v", len(docs), err, f)
	}
	var out bytes.Buffer
	if err := Write(&out, docs, JSON); err != nil {
		t.Fatal(err)
	}
	written := out.String()
	again, _, err := Read(&out)
	if err != nil {
		t.Fatalf("reading what Write wrote: %v\n%s", err, written)
	}
	if diff := cmp.Diff(docs, again); diff != "" {
		t.Errorf("JSON round trip (-read +again):\n%s", diff)
	}
	if !strings.Contains(written, `"x": 1.50`) || !strings.Contains(written, `"<&>"`) {
		t.Errorf("JSON written:\n%s\nwant 1.50 kept and no HTML escaping", written)
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
		{"a bad separator", "kind: A\n--- x\nkind: B\n", "document 1: "},
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
	docs, _, err := Read(strings.NewReader(`kind: Pod
---
kind: List
items: [{kind: Job}, {kind: CronJob}]
---
kind: PodList
items: [{kind: Pod}]
---
kind: ListView
items: [{kind: Pod}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = Each(docs, func(obj map[string]any, where string) (map[string]any, error) {
		seen = append(seen, where+" "+obj["kind"].(string))
		return map[string]any{"kind": "Seen" + obj["kind"].(string)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"document 1 Pod", "document 2, items[0] Job", "document 2, items[1] CronJob", "document 3, items[0] Pod", "document 4 ListView"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("visited (-want +got):\n%s", diff)
	}
	if got := docs[1].Object["items"].([]any)[1].(map[string]any)["kind"]; got != "SeenCronJob" {
		t.Errorf("item not replaced: %v", got)
	}
	if err := Each([]Document{{N: 1, Object: map[string]any{"kind": "List", "items": []any{"x"}}}}, nil); err == nil ||
		err.Error() != "document 1, items[0]: not an object" {
		t.Errorf("Each over a bad item: %v", err)
	}
}
