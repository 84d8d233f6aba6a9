package lint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecode reads YAML streams, JSON streams and Lists, and keeps only Pods, Jobs and CronJobs.
func TestDecode(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // the objects' IDs, in order
	}{
		{"one Job", job(noAnn, containers(app)), []string{"Job/report"}},
		{"several documents, other kinds skipped", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + job(noAnn, containers(app)) +
			"---\n" + podYAML(noAnn, containers(app)) + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
			[]string{"Job/report", "Pod/web"}},
		{"empty and comment-only documents", "---\n# nothing\n---\n\n---\n" + job(noAnn, containers(app)) + "---\n", []string{"Job/report"}},
		{"nothing at all", "", nil},
		{"a JSON stream", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"x","image":"y"}]}}` + "\n" +
			`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"b"},"spec":{"template":{"spec":{"containers":[]}}}}`,
			[]string{"Pod/a", "Job/b"}},
		{"a List's items", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {spec: {}}}}}}\n" +
			"- {apiVersion: v1, kind: Service, metadata: {name: s}}\n- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}\n",
			[]string{"CronJob/c", "Pod/p"}},
		{"a typed list's items without kinds", "apiVersion: batch/v1\nkind: JobList\nitems:\n- {metadata: {name: a}, spec: {template: {spec: {}}}}\n- {metadata: {name: b}, spec: {template: {spec: {}}}}\n",
			[]string{"Job/a", "Job/b"}},
		{"a CronJob of batch/v1beta1, kept to say so", "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: old}\n", []string{"CronJob/old"}},
		{"a Job of another group is not a batch Job", "apiVersion: example.com/v1\nkind: Job\nmetadata: {name: x}\n", nil},
		{"a Pod of another group is not a Pod", "apiVersion: example.com/v1\nkind: Pod\nmetadata: {name: x}\n", nil},
		{"generateName", "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: report-}\nspec: {template: {spec: {}}}\n", []string{"Job/report-*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Decode([]byte(tt.input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.ID())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeErrors: input that is not what kubectl would take is an error naming the document.
func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"not YAML", "kind: Job\n  metadata: {name: x\n", "document 1"},
		{"the second document is broken", job(noAnn, containers(app)) + "---\nkind: [\n", "document 2"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "document 1: not a Kubernetes object: it has no kind"},
		{"a scalar", "hello\n", "document 1: not an object (a mapping with apiVersion and kind)"},
		{"a list at the top", "- a\n- b\n", "document 1: not an object (a mapping with apiVersion and kind)"},
		{"a field of the wrong type", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: r}\nspec: {template: {spec: {containers: oops}}}\n",
			"document 1: Job/r: spec.template.spec.containers: not a list"},
		{"a Job without its pod", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: r}\n", "document 1: Job/r: spec: missing"},
		{"a List's broken item", "apiVersion: v1\nkind: List\nitems:\n- {metadata: {name: x}}\n", "document 1, items[0]: not a Kubernetes object: it has no kind"},
		{"a List's item that is no object", "apiVersion: v1\nkind: List\nitems:\n- 3\n", "document 1: items[0]: not an object"},
		{"a key twice (one value would be dropped)", "apiVersion: batch/v1\nkind: Job\nkind: Pod\n", "document 1"},
		{"broken JSON", `{"apiVersion": "v1", "kind": "Pod",`, "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Decode([]byte(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode = %d objects, %v; want an error containing %q", len(objs), err, tt.want)
			}
		})
	}
}
