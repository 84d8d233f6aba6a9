package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sidesync/sidesync/internal/cluster/lint"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/corpus"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the corpus's golden outputs (internal/testing/corpus/golden)")

// corpusBuild is the build the corpus is injected as: the first release, so that the goldens
// do not change with every commit.
var corpusBuild = buildinfo.Info{Version: exampleVersion, Commit: "unknown"}

// ran is what a command wrote and its exit code.
type ran struct {
	code           int
	stdout, stderr string
}

func (r ran) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, endLine(r.stdout), endLine(r.stderr))
}

// endLine ends text with a line break, saying so when it had none, as diff does.
func endLine(text string) string {
	if text == "" || strings.HasSuffix(text, "\n") {
		return text
	}
	return text + "\n\\ no newline at the end\n"
}

// runAs runs kubectl-sidesync with args on stdin.
func runAs(args []string, stdin []byte) ran {
	var out, errOut bytes.Buffer
	code := run(args, corpusBuild, bytes.NewReader(stdin), &out, &errOut)
	return ran{code, out.String(), errOut.String()}
}

// TestCorpus runs inject and lint on every manifest of the corpus, real public manifests used
// verbatim (internal/testing/corpus): their output must be the reviewed golden one
// (internal/testing/corpus/golden; -update-corpus rewrites it: read the diff), and each result keeps
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
	same := true
	for i := range before {
		checkObject(t, before[i], out[i])
		same = same && cmp.Equal(before[i], out[i])
	}
	if same && injected.stdout != string(in) {
		t.Errorf("inject changed no object, but did not write the input back byte for byte")
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
	// inject passes an object of an API version no longer served through unchanged; lint reads
	// its pod all the same, whose findings then stay.
	passed := map[string]bool{}
	for _, f := range report.Findings {
		passed[f.Object] = passed[f.Object] || f.Rule == lint.RuleAPIVersion
	}
	for _, f := range report.Findings {
		switch {
		case f.Severity != lint.Error, passed[f.Object]:
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
	out = unconvert(w, out)
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
	var wrappedNames []string
	for _, c := range podOut.Containers {
		if slices.Equal(c.Command, []string{contract.Binary}) {
			wrappedNames = append(wrappedNames, c.Name)
		}
	}
	if diff := cmp.Diff(unowned(in, wrappedNames), unowned(out, wrappedNames), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: inject changed what it does not own (-in +out):\n%s", w.Name, diff)
	}
}

// unconvert undoes on a copy of out what --native did to the pod of w: each native sidecar
// that was a regular container of w goes back to its place, without the restartPolicy, the
// startup probe and the variables conversion adds (those w had stay), and the annotations that
// ask a mesh for native sidecars are dropped where w had none. What is left must be what w was.
func unconvert(w *manifest.Workload, out map[string]any) map[string]any {
	out = copyJSON(out)
	wOut, err := manifest.Locate(out, manifest.TypeMeta{})
	if err != nil || wOut == nil {
		return out
	}
	specIn, _ := w.Template["spec"].(map[string]any)
	spec, _ := wOut.Template["spec"].(map[string]any)
	regular := map[string]map[string]any{}
	for _, c := range asList(specIn["containers"]) {
		m, _ := c.(map[string]any)
		regular[manifest.Str(m, "name")] = m
	}
	moved := map[string]map[string]any{}
	var inits []any
	for _, c := range asList(spec["initContainers"]) {
		m, _ := c.(map[string]any)
		orig, was := regular[manifest.Str(m, "name")]
		if !was || manifest.Str(m, "restartPolicy") != "Always" {
			inits = append(inits, c)
			continue
		}
		for _, k := range []string{"restartPolicy", "startupProbe"} {
			if _, had := orig[k]; !had {
				delete(m, k)
			}
		}
		var env []any
		for _, e := range asList(m["env"]) {
			n := manifest.Str(e.(map[string]any), "name")
			if !strings.HasPrefix(n, "CSQL_PROXY_") || slices.ContainsFunc(asList(orig["env"]), func(o any) bool { return manifest.Str(o.(map[string]any), "name") == n }) {
				env = append(env, e)
			}
		}
		m["env"] = env
		if env == nil {
			delete(m, "env")
		}
		moved[manifest.Str(m, "name")] = m
	}
	if len(moved) > 0 {
		spec["initContainers"] = inits
		if inits == nil {
			delete(spec, "initContainers")
		}
		var cs []any
		left := asList(spec["containers"])
		for _, c := range asList(specIn["containers"]) {
			if m, ok := moved[manifest.Str(c.(map[string]any), "name")]; ok {
				cs = append(cs, m)
			} else if len(left) > 0 {
				cs, left = append(cs, left[0]), left[1:]
			}
		}
		spec["containers"] = cs
	}
	metaIn, _ := w.Template["metadata"].(map[string]any)
	annIn, _ := metaIn["annotations"].(map[string]any)
	if meta, ok := wOut.Template["metadata"].(map[string]any); ok {
		ann, _ := meta["annotations"].(map[string]any)
		for _, e := range catalog.Entries() {
			for _, m := range e.Native.Marks {
				if _, had := annIn[m.Key]; !had {
					delete(ann, m.Key)
				}
			}
		}
		if ann != nil && len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
	return out
}

// asList is v as a list, nil when it is none.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// unowned is obj without what inject owns: its annotations, volumes, init container, and in the
// wrapped containers (named) the command, args, its variables and mounts.
func unowned(obj map[string]any, wrapped []string) map[string]any {
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
		if !slices.Contains(wrapped, manifest.Str(cm, "name")) {
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

// compare checks that an object inject wrote is admitted exactly when the object it read is,
// with no warning more.
func compare(t *testing.T, what string, was, now kubetest.Response) {
	t.Helper()
	t.Logf("%s: %d, %d warnings; injected: %d, %d warnings", what, was.Code, len(was.Warnings), now.Code, len(now.Warnings))
	if (was.Code == http.StatusCreated) != (now.Code == http.StatusCreated) {
		t.Errorf("%s: %d %.300s\ninjected: %d %.300s", what, was.Code, was.Body, now.Code, now.Body)
	}
	var wasNorm []string
	for _, w := range was.Warnings {
		wasNorm = append(wasNorm, containerLists(w))
	}
	for _, w := range now.Warnings {
		if !slices.Contains(wasNorm, containerLists(w)) {
			t.Errorf("%s: inject adds the warning %q", what, w)
		}
	}
}

// quotedNames is a list of container names in a Pod Security warning: "a", "b".
var quotedNames = regexp.MustCompile(`"[^"]+"(?:, "[^"]+")+`)

// containerLists sorts the lists of container names in a warning: Pod Security names init
// containers before regular ones, and a sidecar inject made native is an init container now.
func containerLists(w string) string {
	return quotedNames.ReplaceAllStringFunc(w, func(l string) string {
		names := strings.Split(l, ", ")
		slices.Sort(names)
		return strings.Join(names, ", ")
	})
}

// injectOne is what inject makes of one object.
func injectOne(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	r := runAs([]string{"inject", "-f", "-"}, b)
	if r.code != 0 {
		t.Fatalf("inject: %s", r)
	}
	return corpusObjects(t, []byte(r.stdout))[0]
}

// restrict makes a published object's pod meet Pod Security "restricted" as far as its
// security settings go: non-root, no privilege escalation, no capabilities, the runtime's
// seccomp profile.
func restrict(obj map[string]any) map[string]any {
	spec, _ := podTemplateOf(obj)
	if spec == nil {
		return obj
	}
	spec["securityContext"] = map[string]any{"runAsNonRoot": true, "runAsUser": json.Number("1000"), "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	for _, key := range []string{"containers", "initContainers"} {
		cs, _ := spec[key].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			cm["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}
		}
	}
	return obj
}

// podTemplateOf is the pod spec of a Pod, Job or CronJob.
func podTemplateOf(obj map[string]any) (map[string]any, error) {
	w, err := manifest.Locate(obj, manifest.TypeMeta{})
	if err != nil || w == nil {
		return nil, err
	}
	spec, _ := w.Template["spec"].(map[string]any)
	return spec, nil
}

// dnsName is a name a ServiceAccount may have (some published manifests hold ${PLACEHOLDERS}).
var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// TestCorpusAdmitted creates, with server-side dry run on a real kube-apiserver, every Pod, Job
// and CronJob of the corpus as inject wrote it, next to the same object as published, in a
// namespace that enforces Pod Security "restricted" (and warns of it, as it does for a Job's
// template). inject must not make an object fail that passed, nor add a warning: the wrapper,
// its volumes and its init container pass "restricted" themselves.
func TestCorpusAdmitted(t *testing.T) {
	t.Parallel() // a cluster of its own
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := kubetest.Start(t)
	c.CreateNamespaceLabelled(t, admitNamespace, restricted)
	accounts := map[string]bool{}
	for _, m := range ms {
		injected := runAs([]string{"inject", "-f", "-"}, m.Data)
		if injected.code != 0 {
			continue // inject and lint refuse it, as the API server would (TestCorpus)
		}
		before, after := corpusObjects(t, m.Data), corpusObjects(t, []byte(injected.stdout))
		for i, obj := range after {
			if w, err := manifest.Locate(obj, manifest.TypeMeta{}); err != nil || w == nil {
				continue // not a Pod, Job or CronJob sidesync reads
			}
			path := collection(t, obj)
			spec, _ := podTemplate(t, obj)
			if sa := str(spec, "serviceAccountName"); dnsName.MatchString(sa) && sa != "default" && !accounts[sa] {
				accounts[sa] = true
				c.CreateServiceAccount(t, admitNamespace, sa)
			}
			t.Run(m.Name+"/"+objName(obj), func(t *testing.T) {
				send := func(o map[string]any) kubetest.Response {
					return c.Send(t, http.MethodPost, path+"?dryRun=All", inNamespace(o))
				}
				compare(t, "as published", send(before[i]), send(obj))
				// The same object made to pass "restricted" (as a team that enforces it writes
				// it), then injected: what inject adds passes too.
				r := restrict(copyJSON(before[i]))
				compare(t, "restricted", send(r), send(injectOne(t, r)))
			})
		}
	}
}
