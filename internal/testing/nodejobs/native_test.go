//go:build linux

package nodejobs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// Native conversion on the node (`kubectl sidesync inject --native`, the webhook's --native):
// a classic sidecar the manifest holds becomes an init container with restartPolicy Always and
// the catalog's startup probe, and no wrapper is added when none is left with anything to do;
// a mesh the pod asks for gets its own annotation for a native sidecar.

// nativeExample is what `inject --native always` does with an example's Job, as its report
// says: converted, the sidecar made native (no wrapper); else the reason it stays classic,
// which inject.Conversions gives and the test checks.
type nativeExample struct {
	converted bool
	why       string // a part of the reason it stays classic
}

// nativeExamples are jobExamples under --native always.
var nativeExamples = map[string]nativeExample{
	"osm":      {why: "injector has no annotation that asks for a native sidecar"},
	"istio":    {why: "the pod asks Istio's injector for a classic sidecar"},
	"linkerd":  {why: "the pod asks Linkerd's injector for a classic sidecar"},
	"dapr":     {why: "not asked with "},
	"cloudsql": {why: "kept classic by the annotation " + contract.ClassicAnnotation},
}

// injectNative runs `kubectl sidesync inject --native mode` on the example's plain manifest and
// returns what it writes and its report (stderr).
func injectNative(t testing.TB, file, mode string, extra ...string) (out []byte, report string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bins, "kubectl-sidesync"), append([]string{"inject", "-f", file,
		"--image", sidesyncImage, "--native", mode}, extra...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl sidesync inject --native %s -f %s: %v: %s", mode, file, err, stderr.String())
	}
	return stdout.Bytes(), stderr.String()
}

// reportOf is the report's line of an object ("Job/db-migrate").
func reportOf(t testing.TB, report, object string) string {
	t.Helper()
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, object+": ") {
			return l
		}
	}
	t.Fatalf("the report says nothing of %s:\n%s", object, report)
	return ""
}

// TestExamplesNative runs every Job example of TestExamples converted, as `kubectl sidesync
// inject --native always` writes it from deploy/examples/plain, beside TestExamples' wrapped
// runs of the same Job (deploy/examples, --native never): where the report says a sidecar was
// made native, the Job completes with no wrapper, the kubelet having started the app once the
// startup probe passed and stopped the sidecar after it; where nothing can be converted, the
// output is the wrapped form's, byte for byte, for the reason inject.Conversions gives, and no
// Job runs twice. None of the examples is converted as written (the meshes' are asked for
// classic sidecars or cannot be asked; the Cloud SQL example keeps its proxy classic with
// contract.ClassicAnnotation to show the wrapper): the Cloud SQL example without that
// annotation is, the real proxy made native.
func TestExamplesNative(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	for _, ex := range jobExamples {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			want, ok := nativeExamples[ex]
			if !ok {
				t.Fatalf("no expectation for the example %s under --native always", ex)
			}
			plain := filepath.Join(examplesDir, "plain", ex+".yaml")
			job := streamObject(t, exampleStream(t, ex, "plain"), "Job")
			runNativeExample(t, n, ex, want, plain, job)
		})
	}
	// The Cloud SQL example keeps its proxy classic, to show the wrapper; without that, the
	// real proxy is made native.
	t.Run("cloudsql/unkept", func(t *testing.T) {
		t.Parallel()
		job := convertibleCloudSQL(t, "db-migrate")
		runNativeExample(t, n, "cloudsql", nativeExample{converted: true}, writeJob(t, job), job)
	})
}

// runNativeExample injects the example's Job job (from the file plain) with --native always and
// checks the outcome want.
func runNativeExample(t *testing.T, n *kubetest.Node, ex string, want nativeExample, plain string, job map[string]any) {
	object := "Job/" + job["metadata"].(map[string]any)["name"].(string)
	stream, report := injectNative(t, plain, "always")
	line := reportOf(t, report, object)
	t.Logf("report: %s", line)
	switch {
	case want.converted:
		if !strings.Contains(line, "made native "+sidecarContainer(ex)+" (startup probe ") || !strings.Contains(line, "apps not wrapped") {
			t.Fatalf("want %s made native and no app wrapped: %s", sidecarContainer(ex), line)
		}
		ns := namespace(t, n, ex+"-native")
		name := createOne(t, n, ns, "Job", stream)
		p := waitJob(t, n, ns, name, "Complete", time.Now())
		checkNativeRun(t, n, ns, p, appOf(t, job), sidecarContainer(ex), readyURL(exampleSidecar[ex]))
	default:
		wrapped, _ := injectNative(t, plain, "never")
		if !bytes.Equal(stream, wrapped) {
			t.Errorf("--native always changed what --native never writes, want it unchanged")
		}
		checkClassicWhy(t, job, want.why)
	}
}

// convertibleCloudSQL is the Cloud SQL example's Job called name, without the annotation that
// keeps its proxy classic.
func convertibleCloudSQL(t testing.TB, name string) map[string]any {
	t.Helper()
	job := streamObject(t, exampleStream(t, "cloudsql", "plain"), "Job")
	job["metadata"].(map[string]any)["name"] = name
	tmpl, _ := podTemplate(job)
	meta, _ := tmpl["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if _, ok := ann[contract.ClassicAnnotation]; !ok {
		t.Fatalf("the Cloud SQL example no longer keeps its proxy classic with %s: %v", contract.ClassicAnnotation, meta)
	}
	delete(ann, contract.ClassicAnnotation)
	if len(ann) == 0 {
		delete(meta, "annotations")
	}
	if len(meta) == 0 {
		delete(tmpl, "metadata")
	}
	return job
}

// writeJob writes the Job as YAML into a file of the test's own and returns its path.
func writeJob(t testing.TB, job map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// appOf is the name of a Job's first container: the examples' app.
func appOf(t testing.TB, job map[string]any) string {
	t.Helper()
	_, spec := podTemplate(job)
	return spec["containers"].([]any)[0].(map[string]any)["name"].(string)
}

// checkClassicWhy checks that inject.Conversions leaves the Job's one sidecar classic, for a
// reason that contains why.
func checkClassicWhy(t *testing.T, job map[string]any, why string) {
	t.Helper()
	tmpl, _ := podTemplate(job)
	pod, err := manifest.ReadPod(tmpl, "spec.template")
	if err != nil {
		t.Fatal(err)
	}
	convs := inject.Conversions(pod)
	if len(convs) != 1 {
		t.Fatalf("inject.Conversions: %d sidecars, want 1: %+v", len(convs), convs)
	}
	c := convs[0]
	if c.Native || c.Ask != nil || !strings.Contains(c.Why, why) {
		t.Errorf("sidecar %s: native %v, asked %v, why %q; want it classic because %s", c.Container, c.Native, c.Ask, c.Why, why)
	}
}

// checkNativeRun checks a completed pod whose sidecar sc is native and whose app is not
// wrapped: the app found the sidecar ready (its image GETs checkURL at start: the kubelet
// started it after the startup probe passed), it exited 0, and the kubelet stopped the sidecar
// (SIGTERM, which --exit-zero-on-sigterm answers with 0) after the app had ended, once, with no
// restart.
func checkNativeRun(t *testing.T, n *kubetest.Node, ns string, p pod, app, sc, checkURL string) {
	t.Helper()
	if w := p.Metadata.Annotations[contract.WrappedAnnotation]; w != "" {
		t.Errorf("pod %s: %s %q, want no wrapper", p.Metadata.Name, contract.WrappedAnnotation, w)
	}
	native := false
	for _, c := range p.Spec.InitContainers {
		native = native || c.Name == sc
	}
	if !native {
		t.Errorf("pod %s: %s is not an init container: %+v", p.Metadata.Name, sc, p.Spec.InitContainers)
	}
	log := terminated(t, n, ns, p, app, 0)
	mustContain(t, app, log, `app: check `+regexp.QuoteMeta(checkURL)+` 2\d\d`)
	if strings.Contains(log, "sidesync") {
		t.Errorf("%s: sidesync ran in the app's container:\n%s", app, log)
	}
	st := p.status(sc)
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("%s has not terminated: %s", sc, describe(p))
	}
	if st.RestartCount != 0 {
		t.Errorf("%s restarted %d times, want 0", sc, st.RestartCount)
	}
	if sf, af := finishedAt(t, p, sc), finishedAt(t, p, app); sf.Before(af) {
		t.Errorf("%s finished at %s, before %s at %s", sc, sf, app, af)
	}
	scLog := containerLog(t, n, ns, p.Metadata.Name, sc)
	if st.State.Terminated.ExitCode != 0 {
		t.Errorf("%s exited %d (%s) when the kubelet stopped it, want 0 (--exit-zero-on-sigterm):\n%s",
			sc, st.State.Terminated.ExitCode, st.State.Terminated.Reason, scLog)
	}
	mustContain(t, sc, scLog, `(?i)SIGTERM`)
}
