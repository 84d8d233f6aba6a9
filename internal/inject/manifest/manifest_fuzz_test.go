package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzRead reads arbitrary YAML and JSON streams. Read must not panic; a stream it reads is
// written in its own format and in the other one, and each written stream reads back as the
// same objects (numbers compared by value: YAML writes 1.50 as 1.5), empty documents left out.
// Each is what `kubectl sidesync inject` relies on to change nothing but what it injects.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {big: \"1\", num: 12345678901234567890}\n---\n# only a comment\n---\nnull\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n",
		` {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "x": 1.50}
{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "v": "<&>"}]}`,
		"kind: A\n---\nkind: [B\n", "kind: A\n---\nkind: B\nkind: C\n", "kind: A\n---\njust text\n", "- a\n- b\n",
		`{"kind": "A"} {"kind": `, `[{"kind": "A"}]`, "kind: A\n--- x\nkind: B\n",
		"kind: Pod\nv: [yes, no, on, off, ~, 0x1F, 0o17, 1e3, .inf, -.Inf, .nan, 2024-01-01, '012', \"1.0\"]\n",
		"a: &x {b: 1}\nc: *x\nd: !!str 5\ne: |\n  multi\n  line\nf: >-\n  folded\n", "{}\n", "{}\n---\n{}\n",
		"kind: Pod\n\"\\u00e9\": \"\\x93\\t\"\nk: \"\\U0001F600\"\n", "? [a]\n: b\n", "kind: Pod\n1: a\ntrue: b\n",
	} {
		f.Add([]byte(s))
	}
	if files, _ := filepath.Glob("../testdata/*.yaml"); len(files) > 0 {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, format, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		want := fuzzObjects(docs)
		for _, out := range []Format{format, 1 - format} {
			var b bytes.Buffer
			if err := Write(&b, docs, out); err != nil {
				t.Fatalf("Write in format %d of what Read read from %q: %v", out, data, err)
			}
			again, _, err := Read(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatalf("%q, written in format %d as %q, does not read back: %v", data, out, b.Bytes(), err)
			}
			if got := fuzzObjects(again); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q, written in format %d as %q, reads back as\n%#v\nwant\n%#v", data, out, b.Bytes(), got, want)
			}
		}
	})
}

// fuzzObjects are the documents' objects, empty documents left out, numbers written as exact
// fractions so that 1.50 and 1.5 compare equal.
func fuzzObjects(docs []Document) []any {
	var out []any
	for _, d := range docs {
		if d.Object != nil {
			out = append(out, normal(d.Object))
		}
	}
	return out
}

func normal(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normal(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = normal(x)
		}
		return l
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(v)); ok {
			return "number " + r.RatString()
		}
		return fmt.Sprint("number? ", v)
	}
	return v
}
