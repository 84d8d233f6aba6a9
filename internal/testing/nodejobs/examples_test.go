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

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// jobTimeout bounds a Job's run from creation to its final condition; on an idle node one takes
// about 10 s, and CI runs them under load, many at once.
const jobTimeout = 4 * time.Minute

// jobExamples are the examples that are Jobs with a classic sidecar.
var jobExamples = []string{"osm", "istio", "linkerd", "dapr", "cloudsql"}

// TestExamples runs every Job example as written in deploy/examples (init-copy) and as inject
// writes it for an image volume: each completes, its app ran once the sidecar was ready, and
// the sidecar ended by its quit protocol with exit code 0. That the plain manifest, without
// sidesync, stays Running after its app ended is TestRescue's first check of the same Job,
// before it frees it.
func TestExamples(t *testing.T) {
	t.Parallel()
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
	}
}

// exampleStream is the example's manifest for delivery: the file in deploy/examples for
// init-copy, the plain one, without sidesync, for "plain", or what kubectl sidesync inject writes
// from the plain one for another delivery.
func exampleStream(t testing.TB, ex, delivery string) []byte {
	t.Helper()
	var file string
	switch delivery {
	case "init-copy":
		file = filepath.Join(examplesDir, ex+".yaml")
	case "plain":
		file = filepath.Join(examplesDir, "plain", ex+".yaml")
	default:
		out, err := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "inject", "-f", filepath.Join(examplesDir, "plain", ex+".yaml"),
			"--delivery", delivery, "--image", sidesyncImage).Output()
		if err != nil {
			t.Fatalf("kubectl sidesync inject --delivery %s: %v", delivery, err)
		}
		return out
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// sidecarContainer is the name of the example's sidecar container in its pod.
func sidecarContainer(ex string) string {
	if exampleSidecar[ex] == "cloudsql" {
		return "cloud-sql-proxy"
	}
	e, _ := catalog.Lookup(exampleSidecar[ex])
	return e.Container
}

// runExample creates the example's Job in a namespace named after base and checks its whole run.
func runExample(t *testing.T, n *kubetest.Node, ex, base string, stream []byte) {
	ns := namespace(t, n, base)
	job := createOne(t, n, ns, "Job", stream)
	p := waitJob(t, n, ns, job, "Complete", time.Now())
	checkRun(t, n, ns, p, ex)
}

// checkRun checks a completed example pod: the wrapped app exited 0 after finding the sidecar
// ready, sidesync detected the sidecar through the downward API and told it to quit, and the
// sidecar exited 0 by its quit protocol.
func checkRun(t *testing.T, n *kubetest.Node, ns string, p pod, ex string) {
	t.Helper()
	checkRunOf(t, n, ns, p, exampleSidecar[ex], sidecarContainer(ex), true)
}

// checkRunOf is checkRun for the sidecar profile in container sc; appCheck says whether the
// app's image checks that profile's readiness (the examples' images check their own sidecar's).
func checkRunOf(t *testing.T, n *kubetest.Node, ns string, p pod, profile, sc string, appCheck bool) {
	t.Helper()
	apps := strings.Split(p.Metadata.Annotations[contract.WrappedAnnotation], ",")
	if len(apps) == 0 || apps[0] == "" {
		t.Fatalf("pod %s has no %s annotation", p.Metadata.Name, contract.WrappedAnnotation)
	}
	for _, app := range apps {
		log := terminated(t, n, ns, p, app, 0)
		if u := readyURL(profile); u != "" && appCheck {
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
	mustContain(t, "the wrappers", log, quitDone(""))
	scLog := terminated(t, n, ns, p, sc, 0)
	if profile != "cloudsql" { // the emulator says so; the real proxy's exit 0 with sidesync's "sidecar quit" does
		mustContain(t, sc, scLog, logEnvoyQuit)
	}
}
