package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/cluster/stream"
)

var updateExamples = flag.Bool("update", false, "rewrite deploy/examples from deploy/examples/plain")

// The examples are injected as the first release would inject them, so that they show what a
// user gets and do not change with every commit.
const (
	examplesDir     = "../../deploy/examples"
	exampleVersion  = "v0.1.0"
	exampleImage    = "ghcr.io/sidesync/sidesync:" + exampleVersion
	exampleGenerate = "go test ./cmd/kubectl-sidesync -run TestExamples -update"
)

// plainExamples returns the plain manifests, deploy/examples/plain/*.yaml.
func plainExamples(t *testing.T) []string {
	t.Helper()
	plain, err := filepath.Glob(filepath.Join(examplesDir, "plain", "*.yaml"))
	if err != nil || len(plain) == 0 {
		t.Fatalf("no plain examples in %s/plain (%v)", examplesDir, err)
	}
	return plain
}

// injectExample runs `kubectl sidesync inject -f plain ARGS...` as the release exampleVersion
// and returns what it writes to stdout.
func injectExample(t *testing.T, plain string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"inject", "-f", plain}, args...), buildinfo.Info{Version: exampleVersion, Commit: "unknown"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("kubectl sidesync inject -f %s: exit %d\n%s", plain, code, errOut.String())
	}
	if strings.Contains(errOut.String(), "warning") {
		t.Errorf("kubectl sidesync inject -f %s warns:\n%s", plain, errOut.String())
	}
	return out.String()
}

// exampleFile is what deploy/examples/NAME.yaml holds: a header that says where it comes
// from, then inject's output, which keeps the plain manifest's comments.
func exampleFile(t *testing.T, plain string) string {
	t.Helper()
	name := filepath.Base(plain)
	return "# Generated from plain/" + name + " by `kubectl sidesync inject -f plain/" + name +
		"` (sidesync " + exampleVersion + "); do not edit.\n# Edit plain/" + name + ", then run: " + exampleGenerate + "\n#\n" +
		injectExample(t, plain)
}

// TestExamples fails when an example in deploy/examples is not what kubectl sidesync inject
// makes of the plain manifest beside it (-update rewrites them), and when an example no
// longer has its plain stream.
func TestExamples(t *testing.T) {
	want := map[string]bool{"rbac.yaml": true} // written by hand: nothing to inject
	for _, plain := range plainExamples(t) {
		name := filepath.Base(plain)
		want[name] = true
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			got := exampleFile(t, plain)
			path := filepath.Join(examplesDir, name)
			if *updateExamples {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			have, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run %s)", err, exampleGenerate)
			}
			if diff := cmp.Diff(string(have), got); diff != "" {
				t.Errorf("%s drifted from plain/%s (run %s) (-file +inject):\n%s", path, name, exampleGenerate, diff)
			}
			// The example is inject's fixed point: injecting it again changes nothing, to the byte.
			if diff := cmp.Diff(got, injectExample(t, path)); diff != "" {
				t.Errorf("injecting %s again changes it (-once +twice):\n%s", path, diff)
			}
		})
	}
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s has no plain manifest in %s/plain", f, examplesDir)
		}
	}
}

// manifestObjects reads a manifest file's objects.
func manifestObjects(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, _, err := stream.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var objs []map[string]any
	for _, d := range docs {
		if d.Object != nil {
			objs = append(objs, d.Object)
		}
	}
	return objs
}

// TestExamplesWrapEveryApp checks what the examples promise: in each pod, every app container
// is wrapped (the catalog says which are apps, as inject and lint read them), every sidecar,
// orchestrator's container and init container is left alone, and the sidecars the pod holds
// are recorded for the wrapper; or, where every sidecar is native with a startup probe,
// nothing is touched at all.
func TestExamplesWrapEveryApp(t *testing.T) {
	for _, plain := range plainExamples(t) {
		name := filepath.Base(plain)
		before, after := manifestObjects(t, plain), manifestObjects(t, filepath.Join(examplesDir, name))
		for i, obj := range after {
			w, err := manifest.Locate(before[i], manifest.TypeMeta{})
			if err != nil || w == nil {
				continue
			}
			in, err := manifest.ReadWorkload(w)
			if err != nil {
				t.Fatal(err)
			}
			sorted := catalog.Sort(in, catalog.Options{Requests: true})
			spec, ann := podTemplate(t, obj)
			var wrapped, apps []string
			for _, c := range podContainers(spec) {
				if argvOf(c)[0] == contract.Binary {
					wrapped = append(wrapped, str(c, "name"))
				}
			}
			for _, c := range sorted.Apps {
				apps = append(apps, c.Name)
			}
			nativeOnly := len(sorted.Sidecars) > 0 && !slices.ContainsFunc(sorted.Sidecars, func(s *catalog.Sidecar) bool { return !s.Native || !s.StartupProbe })
			switch {
			case nativeOnly && len(wrapped) > 0:
				t.Errorf("%s: %s wraps %q, but its sidecars are all native with startup probes", name, objName(obj), wrapped)
			case !nativeOnly && !slices.Equal(wrapped, apps):
				t.Errorf("%s: %s wraps %q, want its apps %q", name, objName(obj), wrapped, apps)
			}
			held := slices.ContainsFunc(sorted.Sidecars, func(s *catalog.Sidecar) bool { return s.Container != nil && s.Entry != nil })
			if !nativeOnly && held && ann[contract.FoundAnnotation] == "" {
				t.Errorf("%s: %s does not record the sidecars it holds in %s", name, objName(obj), contract.FoundAnnotation)
			}
		}
	}
}

// podTemplate returns the pod spec and the pod annotations of a Pod, Job, CronJob or
// Deployment, and nil for other kinds.
func podTemplate(t *testing.T, obj map[string]any) (spec map[string]any, annotations map[string]string) {
	t.Helper()
	var meta map[string]any
	switch str(obj, "kind") {
	case "Pod":
		meta, spec = mapAt(obj, "metadata"), mapAt(obj, "spec")
	case "Job", "Deployment":
		tmpl := mapAt(mapAt(obj, "spec"), "template")
		meta, spec = mapAt(tmpl, "metadata"), mapAt(tmpl, "spec")
	case "CronJob":
		tmpl := mapAt(mapAt(mapAt(mapAt(obj, "spec"), "jobTemplate"), "spec"), "template")
		meta, spec = mapAt(tmpl, "metadata"), mapAt(tmpl, "spec")
	default:
		return nil, nil
	}
	annotations = map[string]string{}
	for k, v := range mapAt(meta, "annotations") {
		annotations[k], _ = v.(string)
	}
	return spec, annotations
}

// podContainers returns a pod spec's init containers and containers.
func podContainers(spec map[string]any) []map[string]any {
	var cs []map[string]any
	for _, field := range []string{"initContainers", "containers"} {
		list, _ := spec[field].([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				cs = append(cs, m)
			}
		}
	}
	return cs
}

// argvOf returns a container's command and args, one list; [""] when it has neither.
func argvOf(c map[string]any) []string {
	var argv []string
	for _, field := range []string{"command", "args"} {
		list, _ := c[field].([]any)
		for _, a := range list {
			s, _ := a.(string)
			argv = append(argv, s)
		}
	}
	if len(argv) == 0 {
		return []string{""}
	}
	return argv
}

func mapAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// objName names an object as inject's reports do: Kind/name.
func objName(obj map[string]any) string {
	return str(obj, "kind") + "/" + str(mapAt(obj, "metadata"), "name")
}
