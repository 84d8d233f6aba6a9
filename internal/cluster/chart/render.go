// Package chart is the Go side of the Helm charts under deploy/chart: sidesync-injector, whose
// templates that internal/cluster/admission owns (the webhook configurations, the names the other
// templates use) it generates, and sidesync-rescuer, whose ValidatingAdmissionPolicy and names
// it generates from internal/cluster/rescue. It renders either chart as `helm template` does, with
// Helm's own library, for the tests here and for the programs'.
//
// Run `go generate ./internal/cluster/chart` after changing internal/cluster/admission or internal/cluster/rescue;
// TestGeneratedUpToDate fails until the committed templates are what the generator writes.
package chart

//go:generate go run ./gen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// A Chart is one of the module's Helm charts: its directory under deploy/chart, its name, and
// the name of the release Render renders, the one the install guide uses, so that the objects'
// names are those of a real install (a chart's fullname is the release name when it contains
// the chart's name).
type Chart string

// The charts.
const (
	Injector Chart = "sidesync-injector"
	Rescuer  Chart = "sidesync-rescuer"
)

// Charts are the module's charts.
func Charts() []Chart { return []Chart{Injector, Rescuer} }

const (
	// ReleaseName is the injector's release, which Render renders.
	ReleaseName = string(Injector)
	// KubeVersion is the Kubernetes version Render tells the chart it runs on (its
	// .Capabilities.KubeVersion); the chart's kubeVersion constraint is checked against it, as
	// `helm template` does.
	KubeVersion = "v1.35.0"
)

// Dir is the injector chart's directory in this checkout.
func Dir() (string, error) { return Injector.Dir() }

// Render is Injector.Render.
func Render(values map[string]any, namespace string) ([]map[string]any, error) {
	return Injector.Render(values, namespace)
}

// RenderFiles is Injector.RenderFiles.
func RenderFiles(values map[string]any, namespace string) (map[string]string, error) {
	return Injector.RenderFiles(values, namespace)
}

// Dir is the chart's directory in this checkout: found from this source file's place, else by
// walking up from the working directory to the module's go.mod.
func (ch Chart) Dir() (string, error) {
	chartRel := filepath.Join("deploy", "chart", string(ch))
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "..", "..", chartRel)
		if fi, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil && !fi.IsDir() {
			return filepath.Clean(dir), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, chartRel)
			if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
				return "", fmt.Errorf("the chart is not in the module at %s: %w", d, err)
			}
			return dir, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("the chart's directory was not found: no go.mod above " + wd)
		}
	}
}

// Render renders the chart as `helm template NAME deploy/chart/NAME -n namespace` (NAME the
// chart's) with values (merged over the chart's values.yaml and checked against its
// values.schema.json) and returns every object it makes, decoded, in a stable order (by
// template file, then by place in the file). Empty documents are dropped. NOTES.txt is not an
// object and is not returned.
func (ch Chart) Render(values map[string]any, namespace string) ([]map[string]any, error) {
	files, err := ch.RenderFiles(values, namespace)
	if err != nil {
		return nil, err
	}
	return decodeFiles(files)
}

// decodeFiles decodes rendered templates, by template file, then by place in the file.
func decodeFiles(files map[string]string) ([]map[string]any, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []map[string]any
	for _, name := range names {
		docs, err := decodeDocuments(files[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// RenderOn is Render for a cluster of kubeVersion ("v1.33.13", its .Capabilities.KubeVersion),
// as `helm template --kube-version` renders: the chart's kubeVersion and the choices that need a
// newer Kubernetes than kubeVersion are refused.
func (ch Chart) RenderOn(kubeVersion string, values map[string]any, namespace string) ([]map[string]any, error) {
	dir, err := ch.Dir()
	if err != nil {
		return nil, err
	}
	files, err := renderDir(dir, string(ch), values, namespace, kubeVersion)
	if err != nil {
		return nil, err
	}
	return decodeFiles(files)
}

// RenderFiles renders the chart as Render does and returns each manifest template's output by
// its file name (sidesync-injector/templates/deployment.yaml), without NOTES.txt, partials or
// files that render to nothing.
func (ch Chart) RenderFiles(values map[string]any, namespace string) (map[string]string, error) {
	dir, err := ch.Dir()
	if err != nil {
		return nil, err
	}
	return renderDir(dir, string(ch), values, namespace, KubeVersion)
}

func renderDir(dir, release string, values map[string]any, namespace, kubeVersion string) (map[string]string, error) {
	if namespace == "" {
		return nil, errors.New("the release needs a namespace")
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c, caps.KubeVersion.Version)
	}
	if values == nil {
		values = map[string]any{}
	}
	// Helm's coalescing writes into the maps it is given: render a copy.
	vals, err := deepCopy(values)
	if err != nil {
		return nil, err
	}
	top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	files := make(map[string]string, len(out))
	for name, content := range out {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		files[name] = content
	}
	return files, nil
}

// deepCopy copies values through JSON's data model (maps, slices, strings, numbers, bools).
func deepCopy(values map[string]any) (map[string]any, error) {
	b, err := yaml.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// decodeDocuments splits a rendered template into its YAML documents and decodes each into
// JSON's data model; a document that is empty or only comments is dropped, and one that is not a
// mapping with apiVersion and kind is an error.
func decodeDocuments(s string) ([]map[string]any, error) {
	dec := yamlv3.NewDecoder(strings.NewReader(s))
	var objs []map[string]any
	for i := 0; ; i++ {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var buf bytes.Buffer
		enc := yamlv3.NewEncoder(&buf)
		if err := enc.Encode(&node); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var obj map[string]any
		// sigs.k8s.io/yaml decodes as the API machinery does: through JSON, so numbers and
		// keys are what a client sends.
		if err := yaml.UnmarshalStrict(buf.Bytes(), &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj == nil {
			continue
		}
		if obj["apiVersion"] == nil || obj["kind"] == nil {
			return nil, fmt.Errorf("document %d has no apiVersion or kind", i)
		}
		objs = append(objs, obj)
	}
}
