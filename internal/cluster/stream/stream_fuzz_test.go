package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// readSeeds are streams FuzzRead and FuzzWriteChanged start from: kubectl's kinds of input,
// comments everywhere, anchors, numbers kubectl's reader rounds, CRLF, strings YAML readers
// take for something else.
var readSeeds = []string{
	"# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {big: \"1\", num: 12345678901234567890}\n---\n# only a comment\n---\nnull\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n",
	` {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "x": 1.50}
{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "v": "<&>"}]}`,
	"kind: A\n---\nkind: [B\n", "kind: A\n---\nkind: B\nkind: C\n", "kind: A\n---\njust text\n", "- a\n- b\n",
	`{"kind": "A"} {"kind": `, `[{"kind": "A"}]`, "kind: A\n--- x\nkind: B\n",
	"kind: Pod\nv: [yes, no, on, off, ~, 0x1F, 0o17, 1e3, .inf, -.Inf, .nan, 2024-01-01, '012', \"1.0\"]\n",
	"a: &x {b: 1}\nc: *x\nd: !!str 5\ne: |\n  multi\n  line\nf: >-\n  folded\n", "{}\n", "{}\n---\n{}\n",
	"kind: Pod\n\"\\u00e9\": \"\\x93\\t\"\nk: \"\\U0001F600\"\n", "? [a]\n: b\n", "kind: Pod\n1: a\ntrue: b\n",
	"# head\n--- # the pod\napiVersion: v1 # v1\nkind: Pod\n\n# spec\nspec:\n  containers:\n  # app\n  - name: app  # the app\n    args: ['a', \"b\", c]\n# foot\n---\n# tail\n",
	"kind: A\r\nmetadata:\r\n  name: a # crlf\r\nn: 123456789012345678901234567890\r\n---\r\nkind: B\r\n",
	"kind: A\nbig: 123456789012345678901234567890\nx: 1.50\ny: 1e400\nz: -0\nw: [1e-400, 1E+2]\n",
	"kind: A\nbase: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",
	"kind: A\nv: last without a newline",
	"{\"kind\": \"A\", \"n\": 123456789012345678901234567890, \"f\": 1.50, \"e\": 1e400}\n{\"kind\": \"B\"}\n",
}

// FuzzRead reads arbitrary YAML and JSON streams. Read must not panic; a stream it reads and
// Write writes unchanged in its own format is the input itself; written in the other format
// it reads back as exactly the same objects (numbers by their text), empty documents left out.
// It is what `kubectl sidesync inject` relies on to change nothing but what it injects.
func FuzzRead(f *testing.F) {
	for _, s := range readSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../inject/testdata/*.yaml")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, format, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, docs, format); err != nil {
			t.Fatalf("Write of what Read read from %q: %v", data, err)
		}
		if len(docs) > 0 && !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("%q, unchanged, written as %q", data, b.Bytes())
		}
		other := 1 - format
		b.Reset()
		if err := Write(&b, docs, other); err != nil {
			t.Fatalf("Write in format %d of what Read read from %q: %v", other, data, err)
		}
		again, _, err := Read(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("%q, written in format %d as %q, does not read back: %v", data, other, b.Bytes(), err)
		}
		if got, want := nonEmpty(again), nonEmpty(docs); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q, written in format %d as %q, reads back as\n%#v\nwant\n%#v", data, other, b.Bytes(), got, want)
		}
	})
}

// nonEmpty is the documents' objects, empty documents left out.
func nonEmpty(docs []Document) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if d.Object != nil {
			out = append(out, d.Object)
		}
	}
	return out
}

// FuzzWriteChanged changes the objects of arbitrary streams (mutate: values replaced, keys
// deleted and added, elements put before and after lists) and writes them: the stream must
// read back as exactly the changed objects, the documents left alone must be written as they
// were read, byte for byte, and so must the lines of a changed document outside the node that
// changed (checkUntouched, when it was changed once).
func FuzzWriteChanged(f *testing.F) {
	for i, s := range readSeeds {
		f.Add([]byte(s), []byte{byte(i), 1, byte(3 * i), 2, 0, 5, byte(7 * i), 1})
	}
	f.Fuzz(func(t *testing.T, data, ops []byte) {
		docs, format, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		checkChanged(t, docs, format, &byteChoices{b: ops})
	})
}

// checkChanged changes some of the documents as c chooses, writes them, and checks what was
// written: it reads back as the changed objects; the other documents are as they were read;
// in a YAML document changed once, so are the lines outside the node changed.
func checkChanged(t *testing.T, docs []Document, format Format, c choices) []bool {
	t.Helper()
	changed := make([]bool, len(docs))
	where := make([][]mutation, len(docs))
	for i := range docs {
		if docs[i].Object != nil && c.next(2) == 1 {
			docs[i].Object, where[i] = mutate(docs[i].Object, c)
			changed[i] = true
		}
	}
	var b bytes.Buffer
	if err := Write(&b, docs, format); err != nil {
		t.Fatalf("Write: %v", err)
	}
	again, _, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("written as %q, does not read back: %v", b.Bytes(), err)
	}
	if got, want := nonEmpty(again), nonEmpty(docs); !reflect.DeepEqual(got, want) {
		t.Fatalf("written as %q, reads back as\n%#v\nwant\n%#v", b.Bytes(), got, want)
	}
	for i, d := range docs {
		if changed[i] {
			if format == YAML && d.src != nil && d.src.format == YAML && len(where[i]) == 1 {
				checkUntouched(t, d, where[i][0])
			}
			continue
		}
		var one bytes.Buffer
		if err := Write(&one, docs[i:i+1], format); err != nil {
			t.Fatalf("Write of document %d alone: %v", d.N, err)
		}
		if want := concat(d.src.pre, d.src.body, d.src.post); !bytes.Equal(one.Bytes(), want) {
			t.Fatalf("document %d, unchanged, written as %q, want %q", d.N, one.Bytes(), want)
		}
	}
	return changed
}

// concat is the byte slices one after another.
func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}
