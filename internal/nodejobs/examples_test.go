//go:build linux

package nodejobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/catalog"
	"github.com/sidesync/sidesync/internal/contract"
	"github.com/sidesync/sidesync/internal/kubetest"
)

// jobTimeout bounds a Job's run from creation to its final condition; on an idle node one takes
// about 10 s, and CI runs them under load, many at once.
const jobTimeout = 4 * time.Minute

// jobExamples are the examples that are Jobs with a classic sidecar.
var jobExamples = []string{"osm", "istio", "linkerd", "dapr", "cloudsql"}

// TestExamples runs every Job example as written in deploy/examples (init-copy) and as inject
// writes it for an image volume: each completes, its app ran once the sidecar was ready, and
// the sidecar ended by its quit protocol with exit code 0. The plain manifest, without sidesync,
// stays Running after its app ended.
func TestExamples(t *testing.T) {
	n := testNode(t)
	injector(t, n)
	for _, ex := range jobExamples {
		for _, delivery := range []string{"init-copy", "image-volume"} {
			t.Run(ex+"/"+delivery, func(t *testing.T) {
				t.Parallel()
				stream := exampleStream(t, ex, delivery)
				runExample(t, n, ex, strings.ReplaceAll(ex+"-"+delivery, "_", "-"), stream)
			})
		}
		t.Run(ex+"/without-sidesync", func(t *testing.T) {
			t.Parallel()
			runPlain(t, n, ex)
		})
	}
}

// exampleStream is the example's manifest: the file in deploy/examples for init-copy, or what
// kubectl sidesync inject writes for delivery from the plain one.
func exampleStream(t *testing.T, ex, delivery string) []byte {
	t.Helper()
	if delivery == "init-copy" {
		data, err := os.ReadFile(filepath.Join(examplesDir, ex+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cmd := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "inject", "-f", filepath.Join(examplesDir, "plain", ex+".yaml"),
		"--delivery", delivery, "--image", sidesyncImage)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl sidesync inject --delivery %s: %v", delivery, err)
	}
	return out
}

// sidecarContainer is the name of the example's sidecar container in its pod.
func sidecarContainer(ex string) string {
	if exampleSidecar[ex] == "cloudsql" {
		return "cloud-sql-proxy"
	}
	e, _ := catalog.Lookup(exampleSidecar[ex])
	return e.Container
}

// runExample creates the example's Job in namespace ns and checks its whole run.
func runExample(t *testing.T, n *kubetest.Node, ex, ns string, stream []byte) {
	namespace(t, n, ns)
	serviceAccounts(t, n, ns, stream)
	created := createYAML(t, n, ns, stream)
	if len(created) == 0 || created[0][0] != "Job" {
		t.Fatalf("no Job in the example: %v", created)
	}
	job := created[0][1]
	begin := time.Now()
	cond := n.WaitJob(t, ns, job, jobTimeout)
	pods := jobPods(t, n, ns, job)
	if cond != "Complete" {
		for _, p := range pods {
			t.Logf("pod %s: %s", p.Metadata.Name, describe(p))
			for _, c := range p.Spec.Containers {
				t.Logf("log of %s:\n%s", c.Name, containerLog(t, n, ns, p.Metadata.Name, c.Name))
			}
		}
		t.Fatalf("Job %s: %q after %s, want Complete", job, cond, time.Since(begin).Round(time.Second))
	}
	t.Logf("Job %s Complete %s after its creation", job, time.Since(begin).Round(100*time.Millisecond))
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1 (the first run completes)", len(pods))
	}
	checkRun(t, n, ns, pods[0], ex)
}

// checkRun checks a completed example pod: the wrapped app exited 0 after finding the sidecar
// ready, sidesync detected the sidecar through the downward API and told it to quit, and the
// sidecar exited 0 by its quit protocol.
func checkRun(t *testing.T, n *kubetest.Node, ns string, p pod, ex string) {
	t.Helper()
	apps := strings.Split(p.Metadata.Annotations[contract.WrappedAnnotation], ",")
	if len(apps) == 0 || apps[0] == "" {
		t.Fatalf("pod %s has no %s annotation", p.Metadata.Name, contract.WrappedAnnotation)
	}
	profile := exampleSidecar[ex]
	for _, app := range apps {
		log := terminated(t, n, ns, p, app, 0)
		if u := readyURL(profile); u != "" {
			mustContain(t, app, log, `app: check `+regexp.QuoteMeta(u)+` 2\d\d`)
		}
		mustContain(t, app, log, `INFO detected sidecar sidecar=`+profile+` from="pod annotations in `)
	}
	log := strings.Join(func() []string {
		var all []string
		for _, app := range apps {
			all = append(all, containerLog(t, n, ns, p.Metadata.Name, app))
		}
		return all
	}(), "")
	mustContain(t, "the wrappers", log, `INFO sidecar quit sidecar=`)
	sc := sidecarContainer(ex)
	scLog := terminated(t, n, ns, p, sc, 0)
	if profile != "cloudsql" { // the emulator says so; the real proxy's exit 0 with sidesync's "sidecar quit" does
		mustContain(t, sc, scLog, `(?m) (stdout|stderr) F quit t=`)
	}
}

// runPlain creates the example's plain Job, without sidesync, and checks that it does not
// complete: its app ends, its sidecar runs on, the Job stays active. It watches for a bounded
// while after the app ended (a hang cannot be proved otherwise), then deletes the namespace.
func runPlain(t *testing.T, n *kubetest.Node, ex string) {
	ns := ex + "-plain"
	namespace(t, n, ns)
	data, err := os.ReadFile(filepath.Join(examplesDir, "plain", ex+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	serviceAccounts(t, n, ns, data)
	created := createYAML(t, n, ns, data)
	job := created[0][1]
	var app string
	for _, d := range splitYAML(data) {
		if obj := yamlToMap(t, d); obj != nil && obj["kind"] == "Job" {
			for _, c := range containersOf(obj) {
				if name, _ := c["name"].(string); name != sidecarContainer(ex) && app == "" {
					app = name
				}
			}
		}
	}
	var podName string
	deadline := time.Now().Add(jobTimeout)
	for podName == "" {
		if pods := jobPods(t, n, ns, job); len(pods) > 0 {
			podName = pods[0].Metadata.Name
		} else if time.Now().After(deadline) {
			t.Fatalf("no pod for Job %s", job)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitPod(t, n, ns, podName, jobTimeout, "with "+app+" terminated", func(p pod) bool {
		st := p.status(app)
		return st != nil && st.State.Terminated != nil
	})
	const watch = 10 * time.Second
	if cond := n.WaitJob(t, ns, job, watch); cond != "" {
		t.Fatalf("Job %s without sidesync: %s, want it to hang", job, cond)
	}
	p := getPod(t, n, ns, podName)
	if st := p.status(sidecarContainer(ex)); st == nil || st.State.Running == nil {
		t.Fatalf("Job %s without sidesync: the sidecar is not running %s after the app ended: %s", job, watch, describe(p))
	}
	t.Logf("Job %s without sidesync: the app ended, the sidecar still runs and the Job is active %s later", job, watch)
}
