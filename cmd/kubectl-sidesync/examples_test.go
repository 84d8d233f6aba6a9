package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/buildinfo"
	"github.com/sidesync/sidesync/internal/contract"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/manifest/stream"
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
// from, the plain manifest's leading comments (inject's output has none), and inject's output.
func exampleFile(t *testing.T, plain string) string {
	t.Helper()
	src, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var comments strings.Builder
	for line := range strings.Lines(string(src)) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		comments.WriteString(line)
	}
	name := filepath.Base(plain)
	return "# Generated from plain/" + name + " by `kubectl sidesync inject -f plain/" + name +
		"` (sidesync " + exampleVersion + "); do not edit.\n# Edit plain/" + name + ", then run: " + exampleGenerate + "\n#\n" +
		comments.String() + injectExample(t, plain)
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
			// The example is inject's fixed point: injecting it again changes nothing.
			if diff := cmp.Diff(got[strings.Index(got, "apiVersion:"):], injectExample(t, path)); diff != "" {
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

// TestExamplesWrapEveryApp checks what the examples promise: in each, every app container is
// wrapped, each sidecar it names is left alone, and the sidecars it shows are recorded.
func TestExamplesWrapEveryApp(t *testing.T) {
	for _, plain := range plainExamples(t) {
		name := filepath.Base(plain)
		for _, obj := range manifestObjects(t, filepath.Join(examplesDir, name)) {
			spec, ann := podTemplate(t, obj)
			var wrapped, left []string
			for _, c := range podContainers(spec) {
				if argvOf(c)[0] == contract.Binary {
					wrapped = append(wrapped, str(c, "name"))
				} else if str(c, "name") != contract.InitContainer {
					left = append(left, str(c, "name"))
				}
			}
			if len(wrapped) != 1 {
				t.Errorf("%s: %s wraps %q, want the one app container", name, objName(obj), wrapped)
			}
			for _, l := range left {
				if l != "cloud-sql-proxy" {
					t.Errorf("%s: %s leaves %s alone, which is not a sidecar", name, objName(obj), l)
				}
			}
			if strings.HasPrefix(name, "cloudsql") && ann[contract.SidecarsAnnotation] == "" {
				t.Errorf("%s: %s does not record its Cloud SQL Auth Proxy in %s", name, objName(obj), contract.SidecarsAnnotation)
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
