package celeval

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Pod is a pod of the project's real-world and example manifests, read both ways: as sidesync's
// Go reads it, and as the API server hands it to CEL.
type Pod struct {
	// Name says where it is: "internal/testing/corpus/testdata/06-istio-job-injected.yaml#document 1".
	Name string
	View *manifest.PodView
	// Object is the pod as CEL sees it (Object): metadata and spec.
	Object map[string]any
}

// Sources are the directories whose manifests Pods reads, relative to the repository: the public
// corpus, the examples, and inject's testdata.
var Sources = []string{"internal/testing/corpus/testdata", "deploy/examples", "deploy/examples/plain", "internal/cluster/inject/testdata"}

// Pods reads every pod of every object in Sources the way kubectl-sidesync reads them
// (internal/cluster/stream, then manifest.Locate): a Pod's, a Job's or a batch/v1 CronJob's, and
// the pod template of a workload sidesync leaves alone (a Deployment's).
// A file that is no manifest, or a pod that sidesync cannot read or the API server would refuse
// (two containers of one name), is left out: neither side ever sees it.
func Pods() ([]Pod, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	var out []Pod
	for _, dir := range Sources {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			pods, err := podsOf(f)
			if err != nil {
				return nil, err
			}
			for _, p := range pods {
				p.Name = dir + "/" + filepath.Base(f) + "#" + p.Name
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// podsOf reads the pods of the objects in one file, each named by where it is in the file.
func podsOf(file string) ([]Pod, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	docs, _, err := stream.Read(f)
	if err != nil {
		return nil, nil // no manifest sidesync reads
	}
	var out []Pod
	err = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		if p, ok := podOf(obj, tm); ok {
			p.Name = where
			out = append(out, p)
		}
		return obj, nil
	})
	return out, err
}

// podOf reads the pod of one object.
func podOf(obj map[string]any, tm manifest.TypeMeta) (Pod, bool) {
	w, err := manifest.Locate(obj, tm)
	switch {
	case err != nil:
		return Pod{}, false // not served, or no pod: the API server never makes its pods
	case w == nil:
		// A kind sidesync leaves alone (a Deployment, a StatefulSet): its pods are still created,
		// and the policies still see them.
		spec, _ := manifest.MapAt(obj, "spec", "")
		t, _ := manifest.MapAt(spec, "template", "spec")
		if t == nil {
			return Pod{}, false
		}
		w = &manifest.Workload{Template: t, TemplatePath: "spec.template"}
	}
	v, err := manifest.ReadPod(w.Template, w.TemplatePath)
	if err != nil || !distinctNames(v) {
		return Pod{}, false
	}
	object, _ := Object(map[string]any{"metadata": w.Template["metadata"], "spec": w.Template["spec"]}).(map[string]any)
	if object["metadata"] == nil {
		object["metadata"] = map[string]any{}
	}
	return Pod{View: v, Object: object}, true
}

// distinctNames reports whether the pod's containers have distinct names, as the API server
// requires.
func distinctNames(v *manifest.PodView) bool {
	seen := map[string]bool{}
	for _, c := range v.All() {
		if seen[c.Name] {
			return false
		}
		seen[c.Name] = true
	}
	return true
}

// WithSynthetic returns the pods of Pods, then the pods written in YAML in synthetic ("synthetic
// pod N"; a pod's metadata and spec, no kind needed), each read by manifest.ReadPod: the test's
// own cases, which reach the branches the real manifests do not. It fails t on an error, on fewer
// than 40 pods from Sources (a path gone wrong), and on a synthetic pod that neither side could
// see (unreadable, or two containers of one name).
func WithSynthetic(t testing.TB, synthetic []string) []Pod {
	t.Helper()
	pods, err := Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) < 40 {
		t.Fatalf("only %d pods in %v", len(pods), Sources)
	}
	for i, y := range synthetic {
		name := fmt.Sprintf("synthetic pod %d", i)
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		obj, err := manifest.DecodeJSONObject(j)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := manifest.ReadPod(obj, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !distinctNames(v) {
			t.Fatalf("%s: two containers of one name", name)
		}
		object, _ := Object(obj).(map[string]any)
		if object["metadata"] == nil {
			object["metadata"] = map[string]any{}
		}
		pods = append(pods, Pod{Name: name, View: v, Object: object})
	}
	return pods
}

// Vars are the admission policies' variables ann and lbl of the pod: its annotations and its
// labels, or {}.
func (p Pod) Vars() map[string]any {
	meta, _ := p.Object["metadata"].(map[string]any)
	return map[string]any{"ann": mapOrEmpty(meta["annotations"]), "lbl": mapOrEmpty(meta["labels"])}
}

func mapOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// Container is the CEL object of the pod's i'th container, as manifest.PodView.All lists them:
// its init containers, then its others.
func (p Pod) Container(i int) map[string]any {
	spec, _ := p.Object["spec"].(map[string]any)
	var all []any
	for _, key := range []string{"initContainers", "containers"} {
		l, _ := spec[key].([]any)
		all = append(all, l...)
	}
	m, _ := all[i].(map[string]any)
	return m
}
