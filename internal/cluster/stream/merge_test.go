package stream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// at is the value at the path of keys and indexes in obj.
func at(obj any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			obj = obj.(map[string]any)[p]
		case int:
			obj = obj.([]any)[p]
		}
	}
	return obj
}

// TestWriteMerge: the rules by which a changed document is merged into the YAML it was read
// from, one by one.
func TestWriteMerge(t *testing.T) {
	tests := []struct {
		name, in string
		change   func(obj map[string]any)
		want     string
	}{{
		name:   "a changed scalar keeps its comments",
		in:     "# head\nimage: app:1 # pinned\nkind: Pod\n",
		change: func(o map[string]any) { o["image"] = "app:2" },
		want:   "# head\nimage: app:2 # pinned\nkind: Pod\n",
	}, {
		name:   "unchanged scalars keep their style",
		in:     "a: 'single'\nb: \"double\"\nc: 0x1F\nd: yes\ne: !!str 5\nf: |\n  block\ng: 1.50\nh: 123456789012345678901234567890\nchange: 1\n",
		change: func(o map[string]any) { o["change"] = json.Number("2") },
		want:   "a: 'single'\nb: \"double\"\nc: 0x1F\nd: yes\ne: !!str 5\nf: |\n  block\ng: 1.50\nh: 123456789012345678901234567890\nchange: 2\n",
	}, {
		name:   "a removed key goes with its comments",
		in:     "kind: Pod\n# about a\na: 1 # one\nb: 2\n",
		change: func(o map[string]any) { delete(o, "a") },
		want:   "kind: Pod\nb: 2\n",
	}, {
		name:   "new keys come after the old ones, sorted",
		in:     "kind: Pod\nb: 1\na: 2\n",
		change: func(o map[string]any) { o["z"], o["c"] = "z", "c" },
		want:   "kind: Pod\nb: 1\na: 2\nc: c\nz: z\n",
	}, {
		name: "named lists are matched by name",
		in: `containers:
# the app
- name: app
  env:
  - name: A # a
    value: a
# the proxy
- name: proxy
`,
		change: func(o map[string]any) {
			app := at(o, "containers", 0).(map[string]any)
			app["env"] = append(app["env"].([]any), map[string]any{"name": "B", "value": "b"})
			o["containers"] = append([]any{map[string]any{"name": "init"}}, o["containers"].([]any)...)
		},
		want: `containers:
- name: init
# the app
- name: app
  env:
  - name: A # a
    value: a
  - name: B
    value: b
# the proxy
- name: proxy
`,
	}, {
		name: "lists of scalars keep their common ends",
		in:   "args: [\"--date=$(D)\", 'x'] # args\ncommand:\n- python # the interpreter\n- app.py\n",
		change: func(o map[string]any) {
			o["args"] = append([]any{"--", "python", "app.py"}, o["args"].([]any)...)
			o["command"] = append([]any{"/sidesync"}, o["command"].([]any)...)
		},
		want: "args: [--, python, app.py, \"--date=$(D)\", 'x'] # args\ncommand:\n- /sidesync\n- python # the interpreter\n- app.py\n",
	}, {
		name:   "other lists are matched by index",
		in:     "ports:\n- port: 80 # web\n- port: 443 # tls\n",
		change: func(o map[string]any) { at(o, "ports", 1).(map[string]any)["port"] = json.Number("8443") },
		want:   "ports:\n- port: 80 # web\n- port: 8443 # tls\n",
	}, {
		name:   "an empty flow collection that gets content becomes a block",
		in:     "metadata:\n  annotations: {} # none yet\n  labels: {app: a}\n",
		change: func(o map[string]any) { at(o, "metadata").(map[string]any)["annotations"] = map[string]any{"x": "1"} },
		want:   "metadata:\n  annotations: # none yet\n    x: \"1\"\n  labels: {app: a}\n",
	}, {
		name:   "a flow collection with content stays flow",
		in:     "metadata: {name: a, labels: {app: a}}\n",
		change: func(o map[string]any) { at(o, "metadata", "labels").(map[string]any)["b"] = "yes" },
		want:   "metadata: {name: a, labels: {app: a, b: \"yes\"}}\n",
	}, {
		name: "a flow collection that gets an object or a list becomes a block; its values stay flow",
		in:   "containers:\n- {name: app, args: [a]} # app\n",
		change: func(o map[string]any) {
			at(o, "containers", 0).(map[string]any)["env"] = []any{map[string]any{"name": "A", "value": "1"}}
		},
		want: "containers:\n# app\n- name: app\n  args: [a]\n  env:\n  - name: A\n    value: \"1\"\n",
	}, {
		name: "up through the flow collections around it",
		in:   "items:\n- {kind: Pod, spec: {containers: [{name: a, args: [x]}]}, metadata: {name: p}} # pod\n",
		change: func(o map[string]any) {
			at(o, "items", 0, "spec", "containers", 0).(map[string]any)["env"] = []any{map[string]any{"name": "A"}}
		},
		want: "items:\n# pod\n- kind: Pod\n  spec:\n    containers:\n    - name: a\n      args: [x]\n      env:\n      - name: A\n  metadata: {name: p}\n",
	}, {
		name:   "the document's indentation",
		in:     "spec:\n    template:\n        a: 1\n    list:\n        - x\n",
		change: func(o map[string]any) { at(o, "spec", "template").(map[string]any)["b"] = []any{"z"} },
		want:   "spec:\n    template:\n        a: 1\n        b:\n            - z\n    list:\n        - x\n",
	}, {
		name:   "a scalar that becomes a block keeps its comment on the key",
		in:     "command: x # one word\n",
		change: func(o map[string]any) { o["command"] = []any{"a", "b"} },
		want:   "command: # one word\n- a\n- b\n",
	}, {
		name:   "blank lines and spacing are kept",
		in:     "kind: Pod\n\n# spec\nspec:\n  a:    1   # one\n  l: [x,  y]\n\n\n  b: 2 # two\n",
		change: func(o map[string]any) { at(o, "spec").(map[string]any)["b"] = json.Number("3") },
		want:   "kind: Pod\n\n# spec\nspec:\n  a:    1   # one\n  l: [x,  y]\n\n\n  b: 3 # two\n",
	}, {
		name:   "spacing is kept on the lines that did not change, not on the one that did",
		in:     "kind:  Pod\nv: a  b\n",
		change: func(o map[string]any) { o["v"] = "a b" },
		want:   "kind:  Pod\nv: a b\n",
	}, {
		name:   "CRLF",
		in:     "kind: Pod # p\r\nv: 1\r\n",
		change: func(o map[string]any) { o["v"] = json.Number("2") },
		want:   "kind: Pod # p\r\nv: 2\r\n",
	}, {
		name: "a list in a list: what goes before its first element rewrites the outer element",
		in:   "kind: A\nm:\n- - a # x\n  - b\n- - c\n",
		change: func(o map[string]any) {
			l := o["m"].([]any)
			l[0], l[1] = append([]any{"new"}, l[0].([]any)...), append(l[1].([]any), "d")
		},
		want: "kind: A\nm:\n- - new\n  - a # x\n  - b\n- - c\n  - d\n",
	}, {
		name:   "a document written as flow is merged as a whole",
		in:     "# head\n{kind: Pod, metadata: {name: a}}\n",
		change: func(o map[string]any) { at(o, "metadata").(map[string]any)["labels"] = map[string]any{"a": "b"} },
		want:   "# head\nkind: Pod\nmetadata:\n  name: a\n  labels:\n    a: b\n",
	}, {
		name:   "anchors: written afresh after the leading comments",
		in:     "# head\n\n# more\nkind: Pod # p\nb: &b {x: 1}\nc: *b\n",
		change: func(o map[string]any) { o["d"] = "new" },
		want:   "# head\n\n# more\nb:\n  x: 1\nc:\n  x: 1\nd: new\nkind: Pod\n",
	}, {
		name:   "a null document that gets an object",
		in:     "# head\nnull\n",
		change: func(o map[string]any) {},
		want:   "# head\nkind: A\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, _ := read(t, tt.in)
			v := map[string]any{"kind": "A"}
			if docs[0].Object != nil {
				v = clone(docs[0].Object).(map[string]any)
			}
			tt.change(v)
			docs[0].Object = v
			got := write(t, docs, YAML)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
			again, _ := read(t, got)
			if diff := cmp.Diff(objects(docs), objects(again)); diff != "" {
				t.Errorf("reads back as (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteLongLines: no line is folded, however long: sidecar arguments and JSON in
// environment variables stay on their line, in a merged document and in a new one.
func TestWriteLongLines(t *testing.T) {
	long := strings.Repeat("word ", 60) + `{"json": "in an env value", "n": 1}`
	docs, _ := read(t, "kind: Pod\nenv: []\n")
	docs[0].Object = map[string]any{"kind": "Pod", "env": []any{map[string]any{"name": "J", "value": long}}}
	for _, d := range []Document{docs[0], {N: 2, Object: docs[0].Object}} {
		got := write(t, []Document{d}, YAML)
		if !strings.Contains(got, "value: '"+long+"'\n") {
			t.Errorf("written as\n%s\nwant the value on one line", got)
		}
	}
}
