//go:build linux

package nodejobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// rescueRole is the Role that `kubectl sidesync rescue` needs, as the docs give it.
const rescueRole = "../../../deploy/rescue/role.yaml"

// rescueTimeout bounds a rescue's wait for its pods, under load.
const rescueTimeout = 4 * time.Minute

// rescueCase is a Job stuck on a sidecar: its manifest, without sidesync, and the sidecar's
// container and profile.
type rescueCase struct {
	name, profile, sidecar string
	manifest               func(t *testing.T) []byte
}

// rescueCases are a stuck Job for every sidecar of the catalog that a pod shows and that has a
// quit endpoint: the examples' plain manifests (the real Cloud SQL Auth Proxy among them), the
// OSM example asking the other meshes for their sidecar (the stand-in of their injectors adds
// it, with their marks), and App Mesh's Envoy written into the manifest as its controller adds it.
func rescueCases() []rescueCase {
	var cases []rescueCase
	for _, ex := range jobExamples {
		cases = append(cases, rescueCase{ex, exampleSidecar[ex], sidecarContainer(ex),
			func(t *testing.T) []byte { return exampleStream(t, ex, "plain") }})
	}
	asked := map[string]string{
		"consul": meshAnnotations["consul"], "vault": meshAnnotations["vault"],
		"kuma": `kuma.io/sidecar-injection: enabled`,
	}
	for _, mesh := range sortedKeys(asked) {
		e, _ := catalog.Lookup(mesh)
		cases = append(cases, rescueCase{mesh, mesh, e.Container, func(t *testing.T) []byte {
			return osmAsking(t, asked[mesh])
		}})
	}
	cases = append(cases, rescueCase{"appmesh", "appmesh", "envoy", func(t *testing.T) []byte {
		job := streamObject(t, osmAsking(t, ""), "Job")
		_, spec := podTemplate(job)
		spec["containers"] = append(spec["containers"].([]any), map[string]any{
			"name": "envoy", "image": sidecarImage("appmesh"), "imagePullPolicy": "Never",
			"securityContext": sidecarSecurityContext(),
		})
		out, err := yaml.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}})
	return cases
}

// osmAsking is the OSM example's plain Job with its request for OSM's sidecar replaced by ann.
func osmAsking(t *testing.T, ann string) []byte {
	plain := exampleStream(t, "osm", "plain")
	out := bytes.Replace(plain, []byte("openservicemesh.io/sidecar-injection: enabled"), []byte(ann), 1)
	if bytes.Equal(out, plain) {
		t.Fatal("the OSM example has no openservicemesh.io/sidecar-injection annotation to replace")
	}
	if ann == "" { // no annotation left: keep the map valid YAML
		out = bytes.Replace(out, []byte("annotations:\n"), []byte("annotations: {}\n"), 1)
	}
	return out
}

// TestRescue frees, with `kubectl sidesync rescue`, a Job stuck for real on each sidecar of the
// catalog that has a quit endpoint: its app has ended, its sidecar runs on, the Job is active,
// and still is 10 s later (hangs: for the examples' plain manifests, the hang that sidesync is
// for).
// rescue --dry-run=client lists the pod as stuck and changes nothing; rescue adds the ephemeral
// container that runs `sidesync quit`, the sidecar exits 0 by its own quit protocol, and the
// Job completes. The command runs with exactly the Role of deploy/rescue/role.yaml.
func TestRescue(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	for _, c := range rescueCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, n, "rescue-"+c.name)
			job := createOne(t, n, ns, "Job", c.manifest(t))
			podName := waitStuck(t, n, ns, job, c.sidecar)
			jobHangs(t, n, ns, job, podName, c.sidecar)
			rescueOne(t, n, ns, job, podName, c.sidecar)
			p := getPod(t, n, ns, podName)
			if c.profile != "cloudsql" { // the emulator logs the quit; the real proxy's exit 0 after sidesync's "sidecar quit" does
				mustContain(t, c.sidecar, containerLog(t, n, ns, podName, c.sidecar), logEnvoyQuit)
			}
			rescuer := terminated(t, n, ns, p, rescue.ContainerPrefix+"1", 0)
			mustContain(t, "the rescue container", rescuer, quitDone(c.profile)+` `)
		})
	}
	t.Run("real-istio", func(t *testing.T) {
		t.Parallel()
		istioDir := realIstioAgent(t)
		importRealIstio(t, n, istioDir)
		ns := namespaceWithoutMesh(t, n, "rescue-real-istio")
		job := streamObject(t, exampleStream(t, "istio", "plain"), "Job")
		injectRealIstio(t, job)
		name := job["metadata"].(map[string]any)["name"].(string)
		n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
		podName := waitStuck(t, n, ns, name, "istio-proxy")
		rescueOne(t, n, ns, name, podName, "istio-proxy")
		proxy := containerLog(t, n, ns, podName, "istio-proxy")
		mustContain(t, "istio-proxy", proxy, `handling /quitquitquit, notifying pilot-agent to exit`)
		mustContain(t, "istio-proxy", proxy, `Agent already drained, exiting immediately`)
	})
}

// jobHangs checks that the Job, whose pod is stuck on sidecar, does not complete: it watches for a
// bounded while (a hang cannot be proved otherwise), then checks that the sidecar still runs.
func jobHangs(t *testing.T, n *kubetest.Node, ns, job, podName, sidecar string) {
	t.Helper()
	if cond := n.WaitJob(t, ns, job, plainWatch); cond != "" {
		t.Fatalf("Job %s without sidesync: %s, want it to hang", job, cond)
	}
	p := getPod(t, n, ns, podName)
	if st := p.status(sidecar); st == nil || st.State.Running == nil {
		t.Fatalf("Job %s without sidesync: the sidecar is not running %s after the app ended: %s", job, plainWatch, describe(p))
	}
	t.Logf("Job %s without sidesync: the app ended, the sidecar still runs and the Job is active %s later", job, plainWatch)
}

// rescueOne lists the stuck pod with rescue --dry-run=client, which sends nothing, then rescues it and
// checks that the Job completes with the sidecar's exit code 0.
func rescueOne(t *testing.T, n *kubetest.Node, ns, job, podName, sidecar string) {
	t.Helper()
	kc := rescueKubeconfig(t, n, ns)
	out, errOut, code := kubectlSidesync(t, kc, "rescue", "-n", ns, "--dry-run=client")
	if code != 0 || !regexp.MustCompile(`(?m)^`+ns+`\s+`+podName+`\s+stuck\s.*quit `+sidecar+` `).MatchString(out) {
		t.Fatalf("rescue --dry-run=client: exit %d, want 0 and %s stuck with a plan that quits %s; stdout:\n%s\nstderr:\n%s", code, podName, sidecar, out, errOut)
	}
	if p := getPod(t, n, ns, podName); len(p.Spec.EphemeralContainers) != 0 {
		t.Fatalf("rescue --dry-run=client added %d ephemeral containers", len(p.Spec.EphemeralContainers))
	}
	begin := time.Now()
	out, errOut, code = kubectlSidesync(t, kc, "rescue", "-n", ns, "--wait", rescueTimeout.String())
	t.Logf("rescue took %s; stdout:\n%s", time.Since(begin).Round(10*time.Millisecond), out)
	if code != 0 || !regexp.MustCompile(`(?m)^`+ns+`\s+`+podName+`\s+Succeeded\s.*`+sidecar+` exited 0`).MatchString(out) {
		logPods(t, n, ns, jobPods(t, n, ns, job))
		t.Fatalf("rescue: exit %d, want 0 and %s Succeeded with %s exited 0; stdout:\n%s\nstderr:\n%s", code, podName, sidecar, out, errOut)
	}
	p := waitJob(t, n, ns, job, "Complete", begin)
	checkExit(t, p, sidecar, 0)
	if len(p.Spec.EphemeralContainers) != 1 {
		t.Errorf("pod %s has %d ephemeral containers, want 1", podName, len(p.Spec.EphemeralContainers))
	}
}

// waitStuck waits until the Job's pod is stuck on its sidecar: every other regular container has
// ended, the sidecar runs; it returns the pod's name.
func waitStuck(t testing.TB, n *kubetest.Node, ns, job string, sidecars ...string) string {
	t.Helper()
	podName := waitJobPod(t, n, ns, job)
	waitPod(t, n, ns, podName, jobTimeout, "stuck on "+strings.Join(sidecars, ", "), func(p pod) bool { return stuckOn(p, sidecars...) })
	return podName
}

// stuckOn reports whether every regular container of p but the sidecars has ended and the
// sidecars run.
func stuckOn(p pod, sidecars ...string) bool {
	for _, c := range p.Spec.Containers {
		st := p.status(c.Name)
		switch {
		case st == nil:
			return false
		case contains(sidecars, c.Name) && st.State.Running == nil:
			return false
		case !contains(sidecars, c.Name) && st.State.Terminated == nil:
			return false
		}
	}
	return p.Status.Phase == "Running"
}

// rescueKubeconfig is a kubeconfig for a ServiceAccount of ns bound to the Role of
// deploy/rescue/role.yaml, and nothing else: what rescue must work with.
func rescueKubeconfig(t testing.TB, n *kubetest.Node, ns string) string {
	t.Helper()
	data, err := os.ReadFile(rescueRole)
	if err != nil {
		t.Fatal(err)
	}
	var role string
	for _, doc := range splitYAML(data) {
		obj := yamlToMap(t, doc)
		if obj == nil || obj["kind"] != "Role" {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		meta["namespace"] = ns
		role = meta["name"].(string)
		n.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", obj)
	}
	if role == "" {
		t.Fatalf("%s has no Role", rescueRole)
	}
	n.CreateServiceAccount(t, ns, "rescuer")
	n.CreateRoleBinding(t, ns, "rescuer", role, kubetest.Subject{Kind: "ServiceAccount", Name: "rescuer", Namespace: ns})
	return n.Kubeconfig(t, n.ServiceAccountToken(t, ns, "rescuer"))
}

// kubectlSidesync runs the plugin's binary with a kubeconfig and the examples' sidesync image,
// and returns its stdout, stderr and exit code.
func kubectlSidesync(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rescueTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "kubectl-sidesync"),
		append(args, "--kubeconfig", kubeconfig, "--image", sidesyncImage)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl sidesync %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// leftAloneJob is the Istio example without sidesync, its app changed by edit.
func leftAloneJob(t *testing.T, name string, edit func(tmpl, spec, app map[string]any)) map[string]any {
	job := streamObject(t, exampleStream(t, "istio", "plain"), "Job")
	job["metadata"].(map[string]any)["name"] = name
	tmpl, spec := podTemplate(job)
	edit(tmpl, spec, spec["containers"].([]any)[0].(map[string]any))
	return job
}

// shipper is a log shipper's container: a sidecar the catalog does not know, with no quit
// endpoint, that ends cleanly on SIGTERM, and runs as its own user.
func shipper(image, command string) map[string]any {
	sc := sidecarSecurityContext()
	sc["runAsUser"] = 2000
	return map[string]any{"name": "shipper", "image": image, "imagePullPolicy": "Never", "command": []any{command},
		"env":             []any{map[string]any{"name": "APP_SLEEP", "value": "24h"}, map[string]any{"name": "APP_TERM_EXIT", "value": "0"}},
		"securityContext": sc}
}

// TestRescueLeftAlone: rescue touches no pod that is not stuck, and says why: an app that still
// runs, an app that the kubelet restarts (OnFailure), a container it does not know (a log
// shipper) that still runs, a stuck pod that no Job owns. Then, as each is meant to be freed:
// the log shipper with --signal (SIGTERM through an ephemeral container in its PID namespace,
// as its own user), the pod no Job owns by its name. Two rescues of one pod at once add one
// container.
func TestRescueLeftAlone(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	ns := namespace(t, n, "rescue-left")
	kc := rescueKubeconfig(t, n, ns)
	var appImage, appCommand string
	runningJob := leftAloneJob(t, "running", func(_, _, app map[string]any) {
		addEnv(app, "APP_SLEEP", "24h")
		appImage, appCommand = app["image"].(string), app["command"].([]any)[0].(string)
	})
	restarts := leftAloneJob(t, "restarts", func(_, spec, app map[string]any) {
		spec["restartPolicy"] = "OnFailure"
		addEnv(app, "APP_EXIT", "1")
		// Each run lasts a while: the node restarts a container 1 s after it ended, and a
		// run that ended at once would be restarted every second for the whole test.
		addEnv(app, "APP_SLEEP", "10s")
	})
	// A podFailurePolicy needs restartPolicy Never; restarts in place count against the
	// backoffLimit, which must outlast the test.
	delete(restarts["spec"].(map[string]any), "podFailurePolicy")
	restarts["spec"].(map[string]any)["backoffLimit"] = 1000
	shipped := leftAloneJob(t, "shipped", func(_, spec, _ map[string]any) {
		spec["containers"] = append(spec["containers"].([]any), shipper(appImage, appCommand))
	})
	for _, job := range []map[string]any{runningJob, restarts, shipped} {
		n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
	}
	bare := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bare"}}
	tmpl, _ := podTemplate(leftAloneJob(t, "bare", func(map[string]any, map[string]any, map[string]any) {}))
	bare["metadata"].(map[string]any)["annotations"] = tmpl["metadata"].(map[string]any)["annotations"]
	bare["metadata"].(map[string]any)["labels"] = tmpl["metadata"].(map[string]any)["labels"]
	bare["spec"] = tmpl["spec"]
	n.Create(t, "/api/v1/namespaces/"+ns+"/pods", bare)

	runningPod := waitJobPod(t, n, ns, "running")
	waitPod(t, n, ns, runningPod, jobTimeout, "with both containers running", func(p pod) bool {
		return running(p, "istio-proxy") && p.status(p.Spec.Containers[0].Name).State.Running != nil
	})
	restartsPod := waitJobPod(t, n, ns, "restarts")
	waitPod(t, n, ns, restartsPod, jobTimeout, "with its app restarted", func(p pod) bool {
		st := p.status(p.Spec.Containers[0].Name)
		return st != nil && st.RestartCount > 0
	})
	shippedPod := waitStuck(t, n, ns, "shipped", "istio-proxy", "shipper")
	waitPod(t, n, ns, "bare", jobTimeout, "stuck on istio-proxy", func(p pod) bool { return stuckOn(p, "istio-proxy") })

	out, errOut, code := kubectlSidesync(t, kc, "rescue", "-n", ns, "--wait", rescueTimeout.String())
	t.Logf("rescue: exit %d; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	if code != 0 {
		t.Errorf("rescue of a namespace with nothing to rescue: exit %d, want 0", code)
	}
	if !regexp.MustCompile(`(?m)^` + ns + `\s+` + shippedPod + `\s+left: unknown-running\s.*shipper`).MatchString(out) {
		t.Errorf("rescue: no row for %s left as unknown-running", shippedPod)
	}
	// The restarting app is running again (app-running, counted on stderr) or waiting to
	// (restart-pending, a row), as the moment has it; never stuck.
	if m := regexp.MustCompile(`(?m)^` + ns + `\s+` + restartsPod + `\s+(left: \S+|\S+)`).FindStringSubmatch(out); m != nil && m[1] != "left: restart-pending" {
		t.Errorf("rescue: %s is %q, want left: restart-pending or not listed", restartsPod, m[1])
	}
	for _, name := range []string{runningPod, restartsPod, shippedPod, "bare"} {
		if p := getPod(t, n, ns, name); len(p.Spec.EphemeralContainers) != 0 {
			t.Errorf("pod %s: rescue added %v, want nothing", name, p.Spec.EphemeralContainers)
		}
	}

	// The log shipper, named for a signal; two rescues at once.
	begin := time.Now()
	results := make(chan string, 2)
	for range 2 {
		go func() {
			out, errOut, code := kubectlSidesync(t, kc, "rescue", "-n", ns, "--signal", "shipper", "--wait", rescueTimeout.String())
			results <- fmt.Sprintf("exit %d; stdout:\n%s\nstderr:\n%s", code, out, errOut)
		}()
	}
	for range 2 {
		t.Logf("rescue --signal shipper: %s", <-results)
	}
	p := waitJob(t, n, ns, "shipped", "Complete", begin)
	if len(p.Spec.EphemeralContainers) != 2 {
		t.Errorf("pod %s: ephemeral containers %+v, want two (quit, signal) from the two rescues at once", shippedPod, p.Spec.EphemeralContainers)
	}
	checkExit(t, p, "istio-proxy", 0)
	shipperLog := terminated(t, n, ns, p, "shipper", 0)
	mustContain(t, "shipper", shipperLog, `app: SIGTERM`)

	// The pod no Job owns, by its name.
	out, errOut, code = kubectlSidesync(t, kc, "rescue", "-n", ns, "bare", "--wait", rescueTimeout.String())
	if code != 0 || !regexp.MustCompile(`(?m)^`+ns+`\s+bare\s+Succeeded\s`).MatchString(out) {
		t.Errorf("rescue bare: exit %d, want 0 and bare Succeeded; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, name := range []string{runningPod, restartsPod} {
		if p := getPod(t, n, ns, name); len(p.Spec.EphemeralContainers) != 0 {
			t.Errorf("pod %s: rescue added %v, want nothing", name, p.Spec.EphemeralContainers)
		}
	}
}

// rescueMany creates a Job of count pods at once, each stuck on its (emulated) Istio sidecar,
// and rescues them all with one command; it returns how long the command took, from its start
// to every pod's completion.
func rescueMany(tb testing.TB, n *kubetest.Node, count int) time.Duration {
	tb.Helper()
	ns := namespace(tb, n, "rescue-many")
	kc := rescueKubeconfig(tb, n, ns)
	job := streamObject(tb, exampleStream(tb, "istio", "plain"), "Job")
	name := job["metadata"].(map[string]any)["name"].(string)
	spec := job["spec"].(map[string]any)
	spec["parallelism"], spec["completions"] = count, count
	n.Create(tb, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
	ctx, cancel := context.WithTimeout(context.Background(), 2*jobTimeout)
	defer cancel()
	stuck := 0
	err := n.WaitList(ctx, "/api/v1/namespaces/"+ns+"/pods", jobPodsQuery(name), func(items []json.RawMessage) bool {
		stuck = 0
		for _, item := range items {
			var p pod
			if json.Unmarshal(item, &p) == nil && stuckOn(p, "istio-proxy") {
				stuck++
			}
		}
		return stuck == count
	})
	if err != nil {
		tb.Fatalf("%d of %d pods stuck after %s: %v", stuck, count, 2*jobTimeout, err)
	}
	begin := time.Now()
	out, errOut, code := kubectlSidesync(tb, kc, "rescue", "-n", ns, "--wait", rescueTimeout.String())
	took := time.Since(begin)
	if code != 0 || strings.Count(out, " Succeeded ") != count {
		tb.Fatalf("rescue of %d pods: exit %d, want 0 and %d Succeeded; stdout:\n%s\nstderr:\n%s", count, code, count, out, errOut)
	}
	if cond := n.WaitJob(tb, ns, name, jobTimeout); cond != "Complete" {
		tb.Fatalf("Job %s: %q, want Complete", name, cond)
	}
	var j jobState
	n.Do(tb, http.MethodGet, "/apis/batch/v1/namespaces/"+ns+"/jobs/"+name, nil, &j)
	if j.Status.Succeeded != count {
		tb.Fatalf("Job %s: %d succeeded, want %d", name, j.Status.Succeeded, count)
	}
	return took
}

// BenchmarkRescue measures one rescue of 50 stuck pods: from the command's start to every pod
// completed (BENCHMARKS.md).
func BenchmarkRescue(b *testing.B) {
	n := testNode(b)
	injector(b, n)
	var total time.Duration
	for b.Loop() {
		total += rescueMany(b, n, 50)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/50pods")
}

// rescuerNamespace is the rescuer chart's release namespace.
const rescuerNamespace = "sidesync-rescuer"

// rescuerImage is the rescuer's image as its chart names it by default (its appVersion).
var rescuerImage = "ghcr.io/sidesync/sidesync-rescuer:" + exampleVersion

var rescuerOnce struct {
	sync.Once
	err error
}

// rescuerImageOf is the rescuer's image, of the binary in dir.
func rescuerImageOf(dir string) kubetest.Image {
	return kubetest.Image{Ref: rescuerImage, Files: map[string]string{"/sidesync-rescuer": filepath.Join(dir, "sidesync-rescuer")},
		Entrypoint: []string{"/sidesync-rescuer"}, User: "65532"}
}

// rescuerChart installs the sidesync-rescuer chart, once per process, as a user would: the
// controller's image built from this checkout (by TestMain), the chart rendered with Helm v4's engine
// (internal/cluster/chart), every object (its RBAC and its ValidatingAdmissionPolicy among them)
// created through the API. Only the grace is shortened, to 2 s.
func rescuerChart(t testing.TB, n *kubetest.Node) {
	t.Helper()
	rescuerOnce.Do(func() { rescuerOnce.err = installRescuer(t, n) })
	if rescuerOnce.err != nil {
		t.Fatalf("the rescuer's chart: %v", rescuerOnce.err)
	}
}

func installRescuer(t testing.TB, n *kubetest.Node) error {
	begin := time.Now()
	n.CreateNamespaceLabelled(t, rescuerNamespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	objs, err := chart.Rescuer.Render(map[string]any{"grace": "2s", "sidesyncImage": map[string]any{"tag": exampleVersion}}, rescuerNamespace)
	if err != nil {
		return err
	}
	for _, o := range objs {
		n.Create(t, collectionPath(t, o, rescuerNamespace), o)
	}
	if err := deploymentReady(t, n, rescuerNamespace, "sidesync-rescuer", 1); err != nil {
		return err
	}
	t.Logf("the rescuer's chart installed, its pod ready, %s after the first object was created", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// TestRescuer: with the sidesync-rescuer chart installed and a namespace labelled
// sidesync.io/rescue=enabled, a Job stuck on its sidecar completes with nobody doing anything:
// the controller adds the quit container after the grace, the sidecar exits 0, and Events on
// the pod and the Job say what was done. A pod whose app still runs in the same namespace is
// left alone.
func TestRescuer(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	rescuerChart(t, n)
	ns := namespace(t, n, "rescuer")
	n.Send(t, http.MethodPatch, "/api/v1/namespaces/"+ns, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{rescue.NamespaceLabel: rescue.Enabled}}})
	busy := leftAloneJob(t, "busy", func(_, _, app map[string]any) { addEnv(app, "APP_SLEEP", "24h") })
	n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", busy)
	busyPod := waitJobPod(t, n, ns, "busy")

	begin := time.Now()
	job := createOne(t, n, ns, "Job", exampleStream(t, "istio", "plain"))
	p := waitJob(t, n, ns, job, "Complete", begin)
	checkExit(t, p, "istio-proxy", 0)
	rescuer := terminated(t, n, ns, p, rescue.ContainerPrefix+"1", 0)
	mustContain(t, "the rescue container", rescuer, `INFO sidecar quit sidecar=istio `)
	for _, about := range []string{p.Metadata.Name, job} {
		var events struct {
			Items []struct{ Reason, Message, Note string }
		}
		n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/events?fieldSelector="+url.QueryEscape("involvedObject.name="+about), nil, &events)
		found := false
		for _, e := range events.Items {
			found = found || e.Reason == "SidecarsRescued"
		}
		if !found {
			t.Errorf("no SidecarsRescued Event about %s: %+v", about, events.Items)
		}
	}
	if bp := getPod(t, n, ns, busyPod); len(bp.Spec.EphemeralContainers) != 0 || bp.Status.Phase != "Running" {
		t.Errorf("pod %s, whose app still runs: %s, ephemeral containers %+v; want Running and none", busyPod, bp.Status.Phase, bp.Spec.EphemeralContainers)
	}
}
