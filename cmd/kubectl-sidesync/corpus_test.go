package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/buildinfo"
	"github.com/sidesync/sidesync/internal/catalog"
	"github.com/sidesync/sidesync/internal/contract"
	"github.com/sidesync/sidesync/internal/corpus"
	"github.com/sidesync/sidesync/internal/lint"
	"github.com/sidesync/sidesync/internal/manifest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the corpus's golden outputs (internal/corpus/golden)")

// corpusBuild is the build the corpus is injected as: the first release, so that the goldens
// do not change with every commit.
var corpusBuild = buildinfo.Info{Version: exampleVersion, Commit: "unknown"}

// ran is what a command wrote and its exit code.
type ran struct {
	code           int
	stdout, stderr string
}

func (r ran) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// runAs runs kubectl-sidesync with args on stdin.
func runAs(args []string, stdin []byte) ran {
	var out, errOut bytes.Buffer
	code := run(args, corpusBuild, bytes.NewReader(stdin), &out, &errOut)
	return ran{code, out.String(), errOut.String()}
}

// TestCorpus runs inject and lint on every manifest of the corpus, real public manifests used
// verbatim (internal/corpus): their output must be the reviewed golden one
// (internal/corpus/golden; -update-corpus rewrites it: read the diff), and each result keeps
// the properties a user relies on: see checkCorpusInject.
func TestCorpus(t *testing.T) {
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Run(m.Name, func(t *testing.T) {
			injected := runAs([]string{"inject", "-f", "-"}, m.Data)
			linted := runAs([]string{"lint", "-f", "-"}, m.Data)
			var after ran
			if injected.code == 0 {
				after = runAs([]string{"lint", "-f", "-"}, []byte(injected.stdout))
			}
			golden(t, m.Name+".inject.txt", injected.String())
			golden(t, m.Name+".lint.txt", linted.String()+"--- lint of the injected output\n"+after.String())
			if (injected.code == 2) != (linted.code == 2) {
				t.Fatalf("inject and lint disagree on whether the input can be read: inject %s\nlint %s", injected, linted)
			}
			if injected.code != 0 {
				return
			}
			checkCorpusInject(t, m.Data, injected, after)
		})
	}
}

// golden compares got with the golden file name, or writes it with -update-corpus.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(corpus.Dir(), "..", "golden", name)
	if *updateCorpus {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/kubectl-sidesync -run TestCorpus -update-corpus writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-golden +got):\n%s", name, diff)
	}
}

// checkCorpusInject checks what inject made of a manifest: every object as it was but for what
// inject owns (no field lost, no sidecar or orchestrator's container wrapped, every wrapped
// container running its own command and args after "--"); injecting again changes nothing; and
// lint agrees: what inject wrapped, lint finds told to quit.
func checkCorpusInject(t *testing.T, in []byte, injected, after ran) {
	t.Helper()
	before, out := corpusObjects(t, in), corpusObjects(t, []byte(injected.stdout))
	if len(before) != len(out) {
		t.Fatalf("%d objects in, %d out", len(before), len(out))
	}
	for i := range before {
		checkObject(t, before[i], out[i])
	}
	again := runAs([]string{"inject", "-f", "-"}, []byte(injected.stdout))
	if again.code != 0 || again.stdout != injected.stdout {
		t.Errorf("injecting the output again changes it: %s", again)
	}
	asJSON := runAs([]string{"lint", "-o", "json", "-f", "-"}, []byte(injected.stdout))
	var report struct{ Findings []lint.Finding }
	if err := json.Unmarshal([]byte(asJSON.stdout), &report); err != nil {
		t.Fatalf("lint -o json: %v\n%s", err, asJSON)
	}
	for _, f := range report.Findings {
		switch {
		case f.Severity != lint.Error:
		case f.Rule == lint.RulePartlyWrapped, f.Rule == lint.RuleWrapperConfig,
			f.Rule == lint.RuleNeverQuits && strings.Contains(f.Fix, "kubectl sidesync inject"):
			t.Errorf("lint of what inject wrote: %s", f)
		}
	}
}

// checkObject checks one object inject wrote against the one it read.
func checkObject(t *testing.T, in, out map[string]any) {
	t.Helper()
	w, err := manifest.Locate(in, manifest.TypeMeta{})
	if err != nil || w == nil {
		if !cmp.Equal(in, out) {
			t.Errorf("%s: inject changed an object it does not inject", manifest.Name(in, manifest.TypeMeta{}))
		}
		return
	}
	wOut, err := manifest.Locate(out, manifest.TypeMeta{})
	if err != nil {
		t.Fatal(err)
	}
	podIn, errIn := manifest.ReadWorkload(w)
	podOut, errOut := manifest.ReadWorkload(wOut)
	if errIn != nil || errOut != nil {
		t.Fatalf("%s: %v, %v", w.Name, errIn, errOut)
	}
	sorted := catalog.Sort(podIn, catalog.Options{Requests: true})
	for i, c := range podOut.Containers {
		orig := podIn.Containers[i]
		if !slices.Equal(c.Command, []string{contract.Binary}) || slices.Equal(orig.Command, []string{contract.Binary}) {
			continue
		}
		if !slices.Contains(sorted.Apps, orig) {
			t.Errorf("%s: container %s is wrapped, but it is no app", w.Name, c.Name)
		}
		dash := slices.Index(c.Args, "--")
		if dash < 0 || !slices.Equal(c.Args[dash+1:], orig.Argv()) {
			t.Errorf("%s: container %s runs %q after --, want %q", w.Name, c.Name, c.Args, orig.Argv())
		}
	}
	if diff := cmp.Diff(unowned(in), unowned(out)); diff != "" {
		t.Errorf("%s: inject changed what it does not own (-in +out):\n%s", w.Name, diff)
	}
}

// unowned is obj without what inject owns: its annotations, volumes, init container, and in a
// wrapped container the command, args, its variables and mounts.
func unowned(obj map[string]any) map[string]any {
	obj = copyJSON(obj)
	w, err := manifest.Locate(obj, manifest.TypeMeta{})
	if err != nil || w == nil {
		return obj
	}
	meta, _ := w.Template["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	for _, k := range []string{contract.InjectedAnnotation, contract.WrappedAnnotation, contract.FoundAnnotation} {
		delete(ann, k)
	}
	if len(ann) == 0 && meta != nil {
		delete(meta, "annotations")
	}
	if meta != nil && len(meta) == 0 {
		delete(w.Template, "metadata")
	}
	spec, _ := w.Template["spec"].(map[string]any)
	spec["volumes"] = dropNamed(spec["volumes"], contract.BinVolume, contract.PodInfoVolume, contract.StateVolume)
	spec["initContainers"] = dropNamed(spec["initContainers"], contract.InitContainer)
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		cm, _ := c.(map[string]any)
		if !slices.Equal(toStrings(cm["command"]), []string{contract.Binary}) {
			continue
		}
		delete(cm, "command")
		delete(cm, "args")
		cm["env"] = dropNamed(cm["env"], contract.Env(contract.FlagRestartPolicy), contract.Env(contract.FlagRestartRules), contract.Env(contract.FlagPlatformCommands))
		cm["volumeMounts"] = dropNamed(cm["volumeMounts"], contract.BinVolume, contract.PodInfoVolume, contract.StateVolume)
	}
	for _, k := range []string{"volumes", "initContainers"} {
		if spec[k] == nil {
			delete(spec, k)
		}
	}
	for _, c := range cs {
		cm, _ := c.(map[string]any)
		for _, k := range []string{"env", "volumeMounts"} {
			if cm[k] == nil {
				delete(cm, k)
			}
		}
	}
	return obj
}

// dropNamed is a list without its objects of the given names; nil when nothing is left.
func dropNamed(v any, names ...string) any {
	l, _ := v.([]any)
	var out []any
	for _, e := range l {
		m, _ := e.(map[string]any)
		if !slices.Contains(names, manifest.Str(m, "name")) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// copyJSON is a deep copy of a decoded JSON object.
func copyJSON(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// corpusObjects reads a manifest's objects, a List's items one by one.
func corpusObjects(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return manifestObjects(t, path)
}
