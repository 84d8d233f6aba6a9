//go:build linux

package nodejobs

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/cluster/image"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The node all tests of the package share, started by TestMain; or why there is none.
var (
	node    *kubetest.Node
	noNode  string // the machine cannot run a node: skip (fail with SIDESYNC_NODE_REQUIRED)
	nodeErr error  // it could, and failed: every test fails with it
	bins    string // the static binaries (buildImages), in the node's directory
)

// exampleVersion is the release the examples in deploy/examples name (their image's tag).
const exampleVersion = "v0.1.0"

// sidesyncImage is the image the examples name: the real release image, built by internal/cluster/image
// from this checkout's sidesync.
var sidesyncImage = buildinfo.ImageRepository + ":" + exampleVersion

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// parallel is how many tests run at once unless -test.parallel says otherwise. The tests wait on
// the node far more than they compute (a sidecar's readiness, the kubelet's relists, the Job
// controller, a CronJob's minute, a hang watched for 10 s): go test's default, GOMAXPROCS (2 in
// CI), would run them almost one after the other. Not many more, though: the run is bound by
// the node's 2 cores, and crowding them only stretches each test. At 64 at once Jobs were still
// starting after 4 minutes; at 16, sidesync's own bounds tripped in pods under load (its API
// detection's request, a Tekton step's quit racing the other's).
const parallel = 8

func runMain(m *testing.M) int {
	if noNode = kubetest.NodeUnavailable(); noNode != "" {
		return m.Run()
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(parallel))
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	var images []kubetest.Image
	n, err := kubetest.StartNodeWith(kubetest.NodeOptions{Logf: logf, Prepare: func(ctx context.Context, dir string) error {
		bins = dir
		var err error
		images, err = buildImages(ctx, dir)
		return err
	}})
	if err != nil {
		nodeErr = err
		return m.Run()
	}
	node = n
	// t.TempDir and every temporary file of the tests and their commands go with the node, also
	// when go test kills this process.
	tmp := filepath.Join(n.Dir(), "prepared", "tmp")
	if err = os.Mkdir(tmp, 0o755); err == nil {
		err = os.Setenv("TMPDIR", tmp)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		policy := make(chan error, 1)
		go func() { policy <- installPolicy(ctx, n) }()
		err = n.ImportImages(ctx, images...)
		policyErr = <-policy
		cancel()
	}
	if err != nil {
		nodeErr = err
	}
	code := m.Run()
	if err := n.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "nodejobs: the node left something behind: %v\n", err)
		return 1
	}
	return code
}

// buildImages builds the binaries into dir, while the node starts, and returns the images every
// test uses: sidesync's release image as the examples name it, the sidecars' images, the
// examples' apps, and the images of the tests' own (Tekton's nop, sidesync baked in, the
// injector's and the rescuer's, for their charts).
func buildImages(ctx context.Context, dir string) ([]kubetest.Image, error) {
	if err := kubetest.BuildStatic(ctx, dir, "github.com/sidesync/sidesync/cmd/sidesync"); err != nil {
		return nil, err
	}
	// The release image (gzip under -race: seconds) while the rest builds.
	release := make(chan error, 1)
	var releaseImage v1.Image
	go func() {
		bin, err := os.ReadFile(filepath.Join(dir, "sidesync"))
		if err == nil {
			releaseImage, err = image.NewImage(bin, v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, nil)
		}
		release <- err
	}()
	err := kubetest.BuildStatic(ctx, dir,
		"github.com/sidesync/sidesync/cmd/sidesync-emulator",
		"github.com/sidesync/sidesync/cmd/kubectl-sidesync",
		"github.com/sidesync/sidesync/cmd/sidesync-injector",
		"github.com/sidesync/sidesync/cmd/sidesync-rescuer",
		"github.com/sidesync/sidesync/internal/testing/nodejobs/app")
	if rerr := <-release; err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	images := []kubetest.Image{{Ref: sidesyncImage, Raw: releaseImage}}
	images = append(images, sidecarImages(dir)...)
	images = append(images, appImages(dir)...)
	return append(images, nopImage(dir), bakedImageOf(dir), injectorImageOf(dir), rescuerImageOf(dir)), nil
}

// testNode returns the shared node, or skips or fails the test or benchmark.
func testNode(t testing.TB) *kubetest.Node {
	t.Helper()
	switch {
	case noNode != "" && kubetest.NodeRequired():
		t.Fatalf("nodejobs: %s; %s is set, so this is a failure", noNode, kubetest.EnvNodeRequired)
	case noNode != "":
		t.Skip("nodejobs: " + noNode)
	case nodeErr != nil:
		t.Fatalf("nodejobs: %v", nodeErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:%s", node.LogTails())
		}
	})
	return node
}

// importOnce is one image's import into the node: done once per process.
type importOnce struct {
	sync.Once
	err error
}

// imports are the images importImage was asked for, by reference.
var imports sync.Map // string → *importOnce

// importImage imports an image into the node, once per process whichever test or benchmark asks
// first.
func importImage(t testing.TB, n *kubetest.Node, img kubetest.Image) {
	t.Helper()
	v, _ := imports.LoadOrStore(img.Ref, new(importOnce))
	once := v.(*importOnce)
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		once.err = n.ImportImages(ctx, img)
	})
	if once.err != nil {
		t.Fatalf("importing %s: %v", img.Ref, once.err)
	}
}

// --- the API ----------------------------------------------------------------------------------

// namespaces numbers the namespaces of the process, so that each is new: a test run again
// (-count=N) does not meet its previous run's namespace while that is being deleted.
var namespaces atomic.Int64

// namespace creates a namespace of the test's own, named after base, that enforces Pod Security
// "restricted", as users run it, and whose pods the mesh stand-in injects, and returns its name.
// It is deleted when the test ends.
func namespace(t testing.TB, n *kubetest.Node, base string) string {
	t.Helper()
	return newNamespace(t, n, base, true)
}

// namespaceWithoutMesh is namespace without the mesh stand-in: nothing is added to its pods.
func namespaceWithoutMesh(t testing.TB, n *kubetest.Node, base string) string {
	t.Helper()
	return newNamespace(t, n, base, false)
}

// newNamespace creates the namespace base-N (N numbered in the process, base shortened to keep
// the name a DNS label), with the mesh stand-in if mesh, and deletes it when the test ends.
func newNamespace(t testing.TB, n *kubetest.Node, base string, mesh bool) string {
	t.Helper()
	suffix := "-" + strconv.FormatInt(namespaces.Add(1), 10)
	name := strings.TrimRight(base[:min(len(base), 63-len(suffix))], "-") + suffix
	labels := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if mesh {
		labels[injectorLabel] = "on"
	}
	n.CreateNamespaceLabelled(t, name, labels)
	t.Cleanup(func() { deleteNamespace(t, n, name) })
	return name
}

// deleteNamespace deletes a namespace, without waiting for it to go.
func deleteNamespace(t testing.TB, n *kubetest.Node, name string) {
	t.Helper()
	n.Send(t, http.MethodDelete, "/api/v1/namespaces/"+name, nil)
}

// pod is what the tests read of a Pod.
type pod struct {
	Metadata struct {
		Name, UID         string
		ResourceVersion   string
		DeletionTimestamp string
		Annotations       map[string]string
		Finalizers        []string
	}
	Spec struct {
		InitContainers      []struct{ Name string }
		Containers          []struct{ Name string }
		EphemeralContainers []struct {
			Name, Image, TargetContainerName string
			Command                          []string
		}
	}
	Status struct {
		Phase                      string
		Conditions                 []struct{ Type, Status, Reason string }
		ContainerStatuses          []containerStatus
		InitContainerStatuses      []containerStatus
		EphemeralContainerStatuses []containerStatus
	}
}

type containerStatus struct {
	Name         string
	ContainerID  string
	RestartCount int
	State        containerState
	LastState    containerState
}

type containerState struct {
	Running    *struct{ StartedAt string }
	Terminated *struct {
		ExitCode   int
		Reason     string
		Signal     int
		Message    string // the termination message: sidesync's summary
		StartedAt  string
		FinishedAt string
	}
}

// status returns the named container's status, from the regular, init or ephemeral containers.
func (p *pod) status(name string) *containerStatus {
	for _, list := range [][]containerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// jobState is what the tests read of a Job.
type jobState struct {
	Metadata struct{ Name, CreationTimestamp string }
	Status   struct {
		Active, Failed, Succeeded int
		CompletionTime            string
		Conditions                []struct{ Type, Status, Reason, Message, LastTransitionTime string }
	}
}

// getJob returns a Job.
func getJob(t testing.TB, n *kubetest.Node, ns, name string) jobState {
	t.Helper()
	var j jobState
	if code := n.Do(t, http.MethodGet, "/apis/batch/v1/namespaces/"+ns+"/jobs/"+name, nil, &j); code != http.StatusOK {
		t.Fatalf("GET job %s/%s: %d", ns, name, code)
	}
	return j
}

// createOne creates the one Job or Pod (kind) of a YAML stream in ns, with the ServiceAccounts
// its pods name, and returns its name.
func createOne(t testing.TB, n *kubetest.Node, ns, kind string, stream []byte) string {
	t.Helper()
	serviceAccounts(t, n, ns, stream)
	created := createYAML(t, n, ns, stream)
	if len(created) != 1 || created[0][0] != kind {
		t.Fatalf("want one %s in the stream, created %v", kind, created)
	}
	return created[0][1]
}

// waitJob waits for the Job's final condition, created at begin, and fails the test with every
// pod's state and logs unless it is want; it returns the Job's one pod (the tests' Jobs run one:
// restarts are in place, failures final).
func waitJob(t testing.TB, n *kubetest.Node, ns, name, want string, begin time.Time) pod {
	t.Helper()
	cond := n.WaitJob(t, ns, name, jobTimeout)
	pods := jobPods(t, n, ns, name)
	if cond != want {
		logPods(t, n, ns, pods)
		t.Fatalf("Job %s: %q after %s, want %s", name, cond, time.Since(begin).Round(time.Second), want)
	}
	t.Logf("Job %s %s %s after its creation", name, cond, time.Since(begin).Round(100*time.Millisecond))
	if len(pods) != 1 {
		t.Fatalf("Job %s: %d pods, want 1", name, len(pods))
	}
	return pods[0]
}

// jobPods returns the Job's pods.
func jobPods(t testing.TB, n *kubetest.Node, ns, job string) []pod {
	t.Helper()
	var list struct{ Items []pod }
	n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods?"+jobPodsQuery(job).Encode(), nil, &list)
	return list.Items
}

// jobPodsQuery selects a Job's pods.
func jobPodsQuery(job string) url.Values {
	return url.Values{"labelSelector": {"batch.kubernetes.io/job-name=" + job}}
}

// waitJobPod returns the name of the Job's pod once it has one.
func waitJobPod(t testing.TB, n *kubetest.Node, ns, job string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	var name string
	err := n.WaitList(ctx, "/api/v1/namespaces/"+ns+"/pods", jobPodsQuery(job), func(items []json.RawMessage) bool {
		var p pod
		if len(items) > 0 && json.Unmarshal(items[0], &p) == nil {
			name = p.Metadata.Name
		}
		return name != ""
	})
	if err != nil {
		t.Fatalf("no pod for Job %s after %s: %v", job, jobTimeout, err)
	}
	return name
}

// getPod returns a Pod.
func getPod(t testing.TB, n *kubetest.Node, ns, name string) pod {
	t.Helper()
	var p pod
	if code := n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, nil, &p); code != http.StatusOK {
		t.Fatalf("GET pod %s/%s: %d", ns, name, code)
	}
	return p
}

// pollPod waits on the API server's events until cond holds for the Pod (true) or timeout has
// passed (false, with the last state seen).
func pollPod(t testing.TB, n *kubetest.Node, ns, name string, timeout time.Duration, cond func(pod) bool) (pod, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last pod
	err := n.WaitList(ctx, "/api/v1/namespaces/"+ns+"/pods", kubetest.NameIs(name), func(items []json.RawMessage) bool {
		var p pod
		if len(items) != 1 || json.Unmarshal(items[0], &p) != nil {
			return false
		}
		last = p
		return cond(p)
	})
	return last, err == nil
}

// waitPod waits until cond holds for the Pod, or fails the test after timeout.
func waitPod(t testing.TB, n *kubetest.Node, ns, name string, timeout time.Duration, what string, cond func(pod) bool) pod {
	t.Helper()
	p, ok := pollPod(t, n, ns, name, timeout, cond)
	if !ok {
		t.Fatalf("pod %s/%s: not %s after %s: %s", ns, name, what, timeout, describe(p))
	}
	return p
}

// describe is a pod's phase and container states, for a failure message.
func describe(p pod) string {
	b, _ := json.Marshal(p.Status)
	return string(b)
}

// logPods logs the pods' states and their containers' logs (init containers first), for a
// failure.
func logPods(t testing.TB, n *kubetest.Node, ns string, pods []pod) {
	t.Helper()
	for _, p := range pods {
		t.Logf("pod %s: %s", p.Metadata.Name, describe(p))
		for _, c := range append(append([]struct{ Name string }{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			t.Logf("log of %s:\n%s", c.Name, containerLog(t, n, ns, p.Metadata.Name, c.Name))
		}
	}
}

// checkExit checks that the container has terminated with code.
func checkExit(t testing.TB, p pod, container string, code int) {
	t.Helper()
	st := p.status(container)
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("pod %s: container %s has not terminated: %s", p.Metadata.Name, container, describe(p))
	}
	if got := st.State.Terminated; got.ExitCode != code {
		t.Errorf("pod %s: container %s exited %d (%s, signal %d), want %d", p.Metadata.Name, container,
			got.ExitCode, got.Reason, got.Signal, code)
	}
}

// terminated checks that the container ended with code and returns its log (the runs the
// kubelet keeps: see kubetest.Node.PodLogs).
func terminated(t testing.TB, n *kubetest.Node, ns string, p pod, container string, code int) string {
	t.Helper()
	checkExit(t, p, container, code)
	return containerLog(t, n, ns, p.Metadata.Name, container)
}

// containerLog returns a container's log, from the kubelet's files (the runs it keeps).
func containerLog(t testing.TB, n *kubetest.Node, ns, pod, container string) string {
	t.Helper()
	logs, err := n.PodLogs(ns, pod, container)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(logs, "")
}

// mustContain checks that a log has a line that matches re.
func mustContain(t testing.TB, what, log, re string) {
	t.Helper()
	if !regexp.MustCompile(re).MatchString(log) {
		t.Errorf("%s: no line matches %s in:\n%s", what, re, log)
	}
}

// quitDone matches the line of a sidesync quit that got through to the sidecar named profile
// (any, when empty): answered, or the sidecar exited before its answer was written, as the real
// Cloud SQL Auth Proxy and Istio's real agent sometimes do under load (the emulators answer
// first). Both are the quit done (cmd/sidesync/quit.go).
func quitDone(profile string) string {
	return `INFO sidecar quit(: it closed the connection after the request)? sidecar=` + profile
}

// countLines counts a log's lines that match re.
func countLines(log, re string) int {
	return len(regexp.MustCompile(`(?m)`+re).FindAllStringIndex(log, -1))
}

// parseTime reads an API timestamp (RFC 3339, whole seconds).
func parseTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return tm
}

// createYAML creates the Jobs and Pods of a YAML stream in ns (CronJobs are skipped: they would
// only run at their schedule), and returns the kinds and names created.
func createYAML(t testing.TB, n *kubetest.Node, ns string, stream []byte) [][2]string {
	t.Helper()
	var created [][2]string
	for _, doc := range splitYAML(stream) {
		obj := yamlToMap(t, doc)
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		name, _ := obj["metadata"].(map[string]any)["name"].(string)
		switch kind {
		case "Job":
			n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", obj)
		case "Pod":
			n.Create(t, "/api/v1/namespaces/"+ns+"/pods", obj)
		default:
			continue
		}
		created = append(created, [2]string{kind, name})
	}
	return created
}

// serviceAccounts creates the ServiceAccounts the stream's pods name.
func serviceAccounts(t testing.TB, n *kubetest.Node, ns string, stream []byte) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?m)serviceAccountName: *([a-z0-9-]+)`).FindAllSubmatch(stream, -1) {
		if name := string(m[1]); name != "default" && n.Send(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+name, nil).Code == http.StatusNotFound {
			n.CreateServiceAccount(t, ns, name)
		}
	}
}

// contains reports whether list has s.
func contains(list []string, s string) bool { return slices.Contains(list, s) }
