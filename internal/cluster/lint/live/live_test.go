//go:build linux

package live

import (
	"bytes"
	stdcmp "cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sidesync/sidesync/internal/cluster/lint"
	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/corpus"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// source is a file of manifests: one of the corpus or of deploy/examples.
type source struct {
	name string
	data []byte
}

// sources are the corpus's files and the examples', plain ones included.
func sources(t *testing.T) []source {
	t.Helper()
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for _, m := range ms {
		out = append(out, source{m.Name, m.Data})
	}
	for _, glob := range []string{"*.yaml", "plain/*.yaml"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "deploy", "examples", glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, source{filepath.ToSlash(f[len("../../../../"):]), data})
		}
	}
	return out
}

// batchObject is a Job or CronJob of a source, with what offline lint makes of it.
type batchObject struct {
	source string
	obj    map[string]any
	tm     manifest.TypeMeta
	o      lint.Object
}

// batchObjects are the batch/v1 Jobs and CronJobs of s, each with its offline Object; offline
// lint reads the file with lint.Decode, and its objects are the same ones in the same order.
func batchObjects(t *testing.T, s source) []batchObject {
	t.Helper()
	decoded, err := lint.Decode(s.data)
	if err != nil {
		return nil // lint refuses it, as the API server would
	}
	docs, _, err := stream.Read(bytes.NewReader(s.data))
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	var out []batchObject
	i := 0
	err = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, _ string) (map[string]any, error) {
		w, err := manifest.Locate(obj, tm)
		if w == nil && err == nil {
			return obj, nil
		}
		o := decoded[i]
		i++
		if err == nil && w.Kind != manifest.Pod {
			out = append(out, batchObject{s.name, obj, manifest.TypeMeta{APIVersion: w.APIVersion, Kind: string(w.Kind)}, o})
		}
		return obj, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return out
}

// mesh is what a namespace asks for in the test: nothing, or a mesh by its catalog marks.
type mesh struct {
	name  string         // "" for a namespace that asks for nothing
	entry *catalog.Entry // nil then
}

func meshes(t *testing.T) []mesh {
	out := []mesh{{}}
	for _, name := range []string{"istio", "linkerd"} {
		e, ok := catalog.Lookup(name)
		if !ok || len(e.NamespaceRequests) == 0 {
			t.Fatalf("catalog: no namespace request of %s", name)
		}
		out = append(out, mesh{name, e})
	}
	return out
}

// namespace is a namespace that asks for m, as its injector's users mark it (the catalog's first
// namespace request).
func (m mesh) namespace(name string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if m.entry == nil {
		return ns
	}
	r := m.entry.NamespaceRequests[0]
	value := r.Value
	if value == "" {
		value = "default" // any value asks (a revision)
	}
	if r.Label {
		ns.Labels = map[string]string{r.Key: value}
	} else {
		ns.Annotations = map[string]string{r.Key: value}
	}
	return ns
}

// adminClient is a client of c as its administrator.
func adminClient(t *testing.T, c *kubetest.Cluster) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg := &rest.Config{Host: c.URL, BearerToken: c.AdminToken, TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile},
		QPS: -1} // no client-side rate limit: the test reads a hundred namespaces one by one
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, client
}

// stored is one object as the API server stored it, and the file's object it came from.
type stored struct {
	namespace string
	mesh      mesh
	from      batchObject
	name      string // "Job/report", as the API server named it
}

// TestLive reads a real API server: one, for the three tests, since each start costs seconds.
func TestLive(t *testing.T) {
	c := kubetest.Start(t)
	cfg, client := adminClient(t, c)
	t.Run("same as offline", func(t *testing.T) { testSameAsOffline(t, c, client) })
	t.Run("a CronJob's Jobs", func(t *testing.T) { testCronJobsJobs(t, client) })
	t.Run("role", func(t *testing.T) { testRole(t, cfg, client) })
}

// testSameAsOffline creates every Job and CronJob of the corpus and the examples that the API
// server accepts, in a namespace that asks for nothing and in one that asks for each of Istio
// and Linkerd, and lints what Read reads back. With nothing asked, the findings are offline
// lint's of the file, exactly: the API server's defaults change nothing. With a mesh asked, they
// are offline lint's of the file in that namespace (lint.InNamespace), and every finding that
// the namespace adds is about the mesh's sidecar.
func testSameAsOffline(t *testing.T, c *kubetest.Cluster, client kubernetes.Interface) {
	ctx := t.Context()
	var all []stored
	for i, s := range sources(t) {
		objs := batchObjects(t, s)
		if len(objs) == 0 {
			continue
		}
		for _, m := range meshes(t) {
			ns := fmt.Sprintf("s%02d-%s", i, stdcmp.Or(m.name, "plain"))
			if _, err := client.CoreV1().Namespaces().Create(ctx, m.namespace(ns), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, b := range objs {
				obj := copyObject(t, b.obj)
				meta, _ := obj["metadata"].(map[string]any)
				delete(meta, "namespace")
				path := fmt.Sprintf("/apis/batch/v1/namespaces/%s/%ss", ns, lower(b.tm.Kind))
				r := c.Send(t, http.MethodPost, path, obj)
				if r.Code/100 != 2 {
					t.Logf("%s: %s: the API server refuses it: %d %.200s", s.name, b.o.Name, r.Code, r.Body)
					continue
				}
				created, err := manifest.DecodeJSONObject(r.Body)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, stored{ns, m, b, manifest.Name(created, b.tm)})
			}
		}
	}
	if len(all) == 0 {
		t.Fatal("no Job or CronJob created")
	}
	t.Logf("%d Jobs and CronJobs created", len(all))

	byNamespace := map[string][]stored{}
	for _, s := range all {
		byNamespace[s.namespace] = append(byNamespace[s.namespace], s)
	}
	meshFindings := 0
	var each []lint.Object // what Read reads namespace by namespace, in the order of all
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.namespace] {
			continue
		}
		seen[s.namespace] = true
		objs, err := Read(ctx, client, s.namespace)
		if err != nil {
			t.Fatalf("Read %s: %v", s.namespace, err)
		}
		each = append(each, objs...)
		checkNamespace(t, s.namespace, byNamespace[s.namespace], objs, &meshFindings)
	}
	if meshFindings == 0 {
		t.Error("no namespace that asks for a mesh added a finding")
	}

	// -A, in pages of 7: the same objects as namespace by namespace.
	everything, err := read(ctx, client, "", 7)
	if err != nil {
		t.Fatal(err)
	}
	everything = slices.DeleteFunc(everything, func(o lint.Object) bool { return !seen[o.Namespace] }) // other tests'
	slices.SortFunc(each, func(a, b lint.Object) int {
		return stdcmp.Or(stdcmp.Compare(a.Namespace, b.Namespace), stdcmp.Compare(a.Name, b.Name))
	})
	if diff := cmp.Diff(names(each), names(everything)); diff != "" {
		t.Errorf("Read of all namespaces differs from Read of each (-each +all):\n%s", diff)
	}
}

// checkNamespace compares what Read read in one namespace with offline lint of the files.
// meshFindings counts the findings that the namespaces asking for a mesh add.
func checkNamespace(t *testing.T, ns string, want []stored, got []lint.Object, meshFindings *int) {
	t.Helper()
	read := map[string]lint.Object{}
	for _, o := range got {
		if o.Namespace != ns {
			t.Errorf("%s: Namespace %q, want %q", o.Name, o.Namespace, ns)
		}
		read[o.Name] = o
	}
	if len(read) != len(want) {
		t.Errorf("%s: Read %d objects, created %d", ns, len(read), len(want))
	}
	for _, s := range want {
		o, ok := read[s.name]
		if !ok {
			t.Errorf("%s: %s not read", ns, s.name)
			continue
		}
		live := offlineNames(lint.Lint(o), ns, s.from.o.Name, t)
		plain := lint.Lint(s.from.o)
		offline := plain
		if s.mesh.entry != nil {
			nsObj := s.mesh.namespace(ns)
			obj, from := lint.InNamespace(s.from.obj, s.from.tm, nsObj.Annotations, nsObj.Labels)
			o := objectOfMap(t, obj, s.from.tm)
			o.FromNamespace = from
			offline = lint.Lint(o)
			adds := added(plain, live)
			*meshFindings += len(adds)
			for _, f := range adds {
				if f.Container != s.mesh.entry.Container {
					t.Errorf("%s: %s in %s: the namespace adds a finding not about %s: %s", s.from.source, s.from.o.Name, ns, s.mesh.entry.Container, f)
				}
			}
		}
		if diff := cmp.Diff(offline, live); diff != "" {
			t.Errorf("%s: %s in %s: live findings differ from offline (-offline +live):\n%s", s.from.source, s.from.o.Name, ns, diff)
		}
	}
}

// offlineNames are live findings named as offline lint names them: the file's name of the
// object, no namespace (checked to be ns).
func offlineNames(fs []lint.Finding, ns, name string, t *testing.T) []lint.Finding {
	t.Helper()
	for i := range fs {
		if fs[i].Namespace != ns {
			t.Errorf("%s: finding's namespace %q, want %q", fs[i].Object, fs[i].Namespace, ns)
		}
		fs[i].Namespace, fs[i].Object = "", name
	}
	return fs
}

// added are the findings of b that a has not.
func added(a, b []lint.Finding) []lint.Finding {
	in := map[lint.Finding]bool{}
	for _, f := range a {
		in[f] = true
	}
	var out []lint.Finding
	for _, f := range b {
		if !in[f] {
			out = append(out, f)
		}
	}
	return out
}

func objectOfMap(t *testing.T, obj map[string]any, tm manifest.TypeMeta) lint.Object {
	t.Helper()
	w, err := manifest.Locate(obj, tm)
	if err != nil || w == nil {
		t.Fatalf("%v", err)
	}
	o, err := lint.FromWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func copyObject(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	out, err := manifest.ObjectOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(objs []lint.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

func lower(kind string) string { return string(bytes.ToLower([]byte(kind))) }
