//go:build linux

package nodejobs

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
// says: converted, the sidecar made native (no wrapper); asked, the mesh asked for a native
// sidecar (the wrapper stays, for a mesh that does not honour it); neither, the reason it
// stays classic, which inject.Conversions gives and the test checks.
type nativeExample struct {
	converted bool
	asked     string // the annotation asked for
	why       string // a part of the reason it stays classic
}

// nativeExamples are jobExamples under --native always.
var nativeExamples = map[string]nativeExample{
	"osm":      {why: "injector has no annotation that asks for a native sidecar"},
	"istio":    {why: "the pod asks Istio's injector for a classic sidecar"},
	"linkerd":  {why: "the pod asks Linkerd's injector for a classic sidecar"},
	"dapr":     {asked: `dapr.io/enable-native-sidecar: "true"`},
	"cloudsql": {converted: true},
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
// startup probe passed and stopped the sidecar after it; where the mesh was asked for a native
// sidecar (the mesh stand-in makes one, as the mesh's releases that honour the annotation do),
// the wrapper stays, waits for the sidecar and leaves its stop to the kubelet; where nothing
// can be converted, the output is the wrapped form's, byte for byte, for the reason
// inject.Conversions gives, and no Job runs twice.
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
			case want.asked != "":
				if !strings.Contains(line, "asked for native sidecars with "+want.asked) || !strings.Contains(line, "wrapped ") {
					t.Fatalf("want the mesh asked with %s and the app wrapped: %s", want.asked, line)
				}
				ns := namespace(t, n, ex+"-native")
				name := createOne(t, n, ns, "Job", stream)
				p := waitJob(t, n, ns, name, "Complete", time.Now())
				checkAskedRun(t, n, ns, p, appOf(t, job), ex)
			default:
				wrapped, _ := injectNative(t, plain, "never")
				if !bytes.Equal(stream, wrapped) {
					t.Errorf("--native always changed what --native never writes, want it unchanged")
				}
				checkClassicWhy(t, job, want.why)
			}
		})
	}
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

// checkAskedRun checks a completed pod whose mesh made the example's sidecar native when asked:
// the wrapped app found it ready and exited 0, the wrapper told it nothing (the kubelet stops a
// native sidecar), and the kubelet stopped it after the app had ended, with no restart.
func checkAskedRun(t *testing.T, n *kubetest.Node, ns string, p pod, app, ex string) {
	t.Helper()
	profile, sc := exampleSidecar[ex], sidecarContainer(ex)
	if w := p.Metadata.Annotations[contract.WrappedAnnotation]; w != app {
		t.Errorf("pod %s: %s %q, want %s", p.Metadata.Name, contract.WrappedAnnotation, w, app)
	}
	native := false
	for _, c := range p.Spec.InitContainers {
		native = native || c.Name == sc
	}
	if !native {
		t.Fatalf("pod %s: the mesh stand-in did not make %s native: %+v", p.Metadata.Name, sc, p.Spec.InitContainers)
	}
	log := terminated(t, n, ns, p, app, 0)
	mustContain(t, app, log, `INFO detected sidecar sidecar=`+profile+` from="pod annotations in `)
	mustContain(t, app, log, `app: check `+regexp.QuoteMeta(readyURL(profile))+` 2\d\d`)
	if strings.Contains(log, "INFO sidecar quit") {
		t.Errorf("%s: the wrapper told the native %s to quit:\n%s", app, sc, log)
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
}
