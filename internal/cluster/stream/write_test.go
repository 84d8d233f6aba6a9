package stream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// write is Write that must succeed.
func write(t *testing.T, docs []Document, f Format) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, docs, f); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

// TestWriteUnchanged: documents whose objects did not change are written back as they were
// read, byte for byte, with the comments, separators and white space around them.
func TestWriteUnchanged(t *testing.T) {
	tests := []struct{ name, in string }{
		{"the first document without a separator", "apiVersion: v1\nkind: Pod\n---\nkind: B\n"},
		{"leading comments alone", "# Copyright\n# Licence\n---\nkind: A\n"},
		{"separators with comments", "--- # first\nkind: A\n---   # second\nkind: B\n--- #\n"},
		{"documents that are only comments", "kind: A\n---\n# nothing here\n---\n\n---\nkind: B\n---\n# the end\n"},
		{"null documents", "null\n---\nkind: A\n---\n~\n---\n"},
		{"no final newline", "kind: A\n---\nkind: B\nv: 1"},
		{"CRLF", "# c\r\n---\r\nkind: A\r\nmetadata:\r\n  name: a # n\r\n---\r\nkind: B\r\n"},
		{"styles YAML readers would change", "kind: A\nz: 'single'\ny: \"double\"\nx: 0x1F\nw: yes\nv: !!str 5\nu: |\n  block\nt: {a: 1,   b: [1,2]}\ns:     1.50\n\n\n# end\n"},
		{"odd indentation and key order", "kind:   A\nspec:\n    z: 1\n    a:\n        - x\n        -   y\n"},
		{"anchors", "kind: A\nbase: &b {x: 1}\nuse:\n  <<: *b\n  y: *b\n"},
		{"a List", "kind: List\nitems:\n- kind: Pod # one\n- kind: Job # two\n"},
		{"JSON", "  {\"kind\": \"A\",\n \"n\": 1.50}\n\n{\"kind\":\"B\"}{\"kind\": \"C\", \"big\": 123456789012345678901234567890}\n"},
		{"JSON with null", "{\"kind\": \"A\"} null\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, f := read(t, tt.in)
			if diff := cmp.Diff(tt.in, write(t, docs, f)); diff != "" {
				t.Errorf("written (-read +written):\n%s", diff)
			}
		})
	}
}

// TestWriteOneChanged: when one document changes, the others are written as they were read,
// and the changed one keeps its comments and key order.
func TestWriteOneChanged(t *testing.T) {
	in := `# Team manifests
---
# The app
apiVersion: v1
kind: Pod
metadata:
  name: app   # the name
spec:
  containers:
  - name: app # main
    image: "app:1"
---
# Left alone: {a: 1} stays flow, 'x' stays quoted.
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: 'x', n: "1"}
---
kind: List
items:
- kind: Pod # first
  metadata: {name: p}
- kind: Secret # second
`
	docs, _ := read(t, in)
	err := Each(docs, func(obj map[string]any, _ manifest.TypeMeta, _ string) (map[string]any, error) {
		if obj["kind"] != "Pod" {
			return obj, nil
		}
		out := clone(obj).(map[string]any)
		out["metadata"].(map[string]any)["labels"] = map[string]any{"injected": "true"}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# Team manifests
---
# The app
apiVersion: v1
kind: Pod
metadata:
  name: app   # the name
  labels:
    injected: "true"
spec:
  containers:
  - name: app # main
    image: "app:1"
---
# Left alone: {a: 1} stays flow, 'x' stays quoted.
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: 'x', n: "1"}
---
kind: List
items:
- kind: Pod # first
  metadata:
    name: p
    labels:
      injected: "true"
- kind: Secret # second
`
	if diff := cmp.Diff(want, write(t, docs, YAML)); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

// TestWriteRemoved: a document whose Object was set to nil is left out, with what came before
// it; a document read as null is kept.
func TestWriteRemoved(t *testing.T) {
	docs, _ := read(t, "kind: A\n---\n# about B\n---\nkind: B\n---\nnull\n---\nkind: C\n")
	docs[0].Object, docs[1].Object = nil, nil
	want := "---\nnull\n---\nkind: C\n"
	if diff := cmp.Diff(want, write(t, docs, YAML)); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

// TestWriteNew: documents made by the caller, and read documents written in the other format,
// are written afresh, keys sorted, numbers exact; a document read without a separator gets one
// when something comes before it.
func TestWriteNew(t *testing.T) {
	read1, _ := read(t, "# one\nkind: A\n")
	docs := []Document{
		{N: 1, Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"big": "1", "num": json.Number("123456789012345678901234567890")}, "apiVersion": "v1"}},
		read1[0],
		{N: 3, Object: map[string]any{}},
		{N: 4, Object: nil},
	}
	want := "apiVersion: v1\ndata:\n  big: \"1\"\n  num: 123456789012345678901234567890\nkind: ConfigMap\n---\n# one\nkind: A\n---\n{}\n"
	if diff := cmp.Diff(want, write(t, docs, YAML)); diff != "" {
		t.Errorf("YAML (-want +got):\n%s", diff)
	}
	wantJSON := "{\n  \"apiVersion\": \"v1\",\n  \"data\": {\n    \"big\": \"1\",\n    \"num\": 123456789012345678901234567890\n  },\n  \"kind\": \"ConfigMap\"\n}\n{\n  \"kind\": \"A\"\n}\n{}\n"
	if diff := cmp.Diff(wantJSON, write(t, docs, JSON)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	if got := write(t, docs[2:3], YAML); got != "---\n{}\n" {
		t.Errorf("an empty object alone written as %q, want it marked as YAML by a separator", got)
	}
}

// TestWriteNumbersExact: numbers that kubectl's YAML reader would round, or take for strings,
// are written as their text, and read back as it, in both formats.
func TestWriteNumbersExact(t *testing.T) {
	numbers := []string{"123456789012345678901234567890", "1.50", "1e400", "1e-400", "-0", "1E+2", "0.1e-5", "-12.0", "9007199254740993"}
	for _, n := range numbers {
		for _, f := range []Format{YAML, JSON} {
			obj := map[string]any{"kind": "A", "n": json.Number(n), "l": []any{json.Number(n)}, "m": map[string]any{n: json.Number(n)}}
			out := write(t, []Document{{N: 1, Object: obj}}, f)
			if !strings.Contains(out, n) {
				t.Errorf("%s written in format %d as %q, without its text", n, f, out)
			}
			docs, _ := read(t, out)
			if diff := cmp.Diff([]map[string]any{obj}, objects(docs)); diff != "" {
				t.Errorf("%s written in format %d as %q reads back as (-want +got):\n%s", n, f, out, diff)
			}
		}
	}
}

// clone is a deep copy of a decoded JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = clone(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = clone(x)
		}
		return l
	}
	return v
}

// TestWriteJSONChanged: in a JSON stream, the objects that did not change are written as they
// were read, with the white space between them; a changed one is written afresh, indented,
// numbers exact and HTML left alone, in its place.
func TestWriteJSONChanged(t *testing.T) {
	in := "{\"kind\":\"A\",\"x\":1.50}\n\n  {\"kind\": \"B\", \"v\": \"<&>\"}\n{\"kind\":\"C\"}"
	docs, f := read(t, in)
	docs[1].Object = map[string]any{"kind": "B", "v": "<&>", "n": json.Number("123456789012345678901234567890")}
	want := "{\"kind\":\"A\",\"x\":1.50}\n\n  {\n  \"kind\": \"B\",\n  \"n\": 123456789012345678901234567890,\n  \"v\": \"<&>\"\n}\n{\"kind\":\"C\"}"
	if diff := cmp.Diff(want, write(t, docs, f)); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

// TestWriteMoved: a container that a change moves from containers to initContainers (inject
// --native) is written as it was, its comment, keys in their order and quoting kept, with only
// what the change added; a name moved in one pod of a List and added in another is not taken
// for a move.
func TestWriteMoved(t *testing.T) {
	in := `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: ghcr.io/acme/migrate:1.2
        args: ["up"]
      # The proxy, by hand.
      - name: cloud-sql-proxy
        image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1
        args:
        - "--private-ip"
        - '--port=5432'
        securityContext: {runAsNonRoot: true}
`
	docs, _ := read(t, in)
	err := Each(docs, func(obj map[string]any, _ manifest.TypeMeta, _ string) (map[string]any, error) {
		out := clone(obj).(map[string]any)
		spec := out["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		cs := spec["containers"].([]any)
		proxy := cs[1].(map[string]any)
		proxy["restartPolicy"] = "Always"
		spec["containers"] = cs[:1]
		spec["initContainers"] = []any{proxy}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: ghcr.io/acme/migrate:1.2
        args: ["up"]
      initContainers:
      # The proxy, by hand.
      - name: cloud-sql-proxy
        image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1
        args:
        - "--private-ip"
        - '--port=5432'
        securityContext: {runAsNonRoot: true}
        restartPolicy: Always
`
	if diff := cmp.Diff(want, write(t, docs, YAML)); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}
