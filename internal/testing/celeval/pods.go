package celeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Pod is a pod of the project's real-world and example manifests, read both ways: as sidesync's
// Go reads it, and as the API server hands it to CEL.
type Pod struct {
	// Name says where it is: "internal/testing/corpus/testdata/06-istio-job-injected.yaml#0".
	Name string
	View *manifest.PodView
	// Object is the pod as CEL sees it (Object): metadata and spec.
	Object map[string]any
}

// Sources are the directories whose manifests Pods reads, relative to the repository: the public
// corpus, the examples, and inject's testdata.
var Sources = []string{"internal/testing/corpus/testdata", "deploy/examples", "deploy/examples/plain", "internal/cluster/inject/testdata"}

// Pods reads every pod template of every YAML document in Sources: a Pod's, or the template of a
// workload (a Job, a CronJob of any version, a Deployment). A document that is no valid YAML,
// or a pod that sidesync cannot read or the API server would refuse (two containers of one
// name), is left out: neither side ever sees it.
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
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for i, doc := range documents(data) {
				if p, ok := podOf(doc); ok {
					p.Name = fmt.Sprintf("%s/%s#%d", dir, filepath.Base(f), i)
					out = append(out, p)
				}
			}
		}
	}
	return out, nil
}

// documents splits a YAML stream at its "---" lines.
func documents(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, []byte(strings.Join(cur, "\n")))
}

// podOf reads the pod of one document.
func podOf(doc []byte) (Pod, bool) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return Pod{}, false
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil || obj == nil {
		return Pod{}, false
	}
	holder := obj
	if obj["kind"] != "Pod" {
		holder = templateOf(obj)
	}
	if holder == nil {
		return Pod{}, false
	}
	v, err := manifest.ReadPod(holder, "")
	if err != nil || !distinctNames(v) {
		return Pod{}, false
	}
	object, _ := Object(map[string]any{"metadata": holder["metadata"], "spec": holder["spec"]}).(map[string]any)
	if object["metadata"] == nil {
		object["metadata"] = map[string]any{}
	}
	return Pod{View: v, Object: object}, true
}

// templateOf is a workload's pod template: spec.template, or a CronJob's
// spec.jobTemplate.spec.template.
func templateOf(obj map[string]any) map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	if jt, ok := spec["jobTemplate"].(map[string]any); ok {
		spec, _ = jt["spec"].(map[string]any)
	}
	t, _ := spec["template"].(map[string]any)
	return t
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
