//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// istioStatus is the annotation Istio's injector leaves on a pod it added its proxy to.
const istioStatus = `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"default"}`

// The sidecars of the tests, each with the marks its injector leaves (internal/shared/catalog/rows.go).
var (
	istioPod = stuckPod{annotations: map[string]string{"sidecar.istio.io/status": istioStatus},
		sidecar: corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.0"}}
	linkerdPod = stuckPod{annotations: map[string]string{"linkerd.io/proxy-version": "edge-25.4.1", "config.linkerd.io/proxy-admin-shutdown": "enabled"},
		sidecar: corev1.Container{Name: "linkerd-proxy", Image: "cr.l5d.io/linkerd/proxy:edge-25.4.1"}}
	vaultPod = stuckPod{annotations: map[string]string{"vault.hashicorp.com/agent-inject-status": "injected", "vault.hashicorp.com/agent-enable-quit": "true"},
		sidecar: corev1.Container{Name: "vault-agent", Image: "hashicorp/vault:1.18.0"}}
	daprToken = corev1.EnvVar{Name: "DAPR_API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "dapr-api-token"}, Key: "token"}}}
	daprPod = stuckPod{annotations: map[string]string{"dapr.io/enabled": "true"},
		sidecar: corev1.Container{Name: "daprd", Image: "daprio/daprd:1.15.0", Env: []corev1.EnvVar{daprToken}}}
)

// stuckPod is a pod as a Job's controller creates it and its kubelet reports it: by default
// the app "app" exited 0 and the sidecar runs.
type stuckPod struct {
	annotations map[string]string
	sidecar     corev1.Container
	more        []corev1.Container // after the sidecar
	restart     corev1.RestartPolicy
	// states overrides the containers' states, by name; the rest are as above.
	states map[string]corev1.ContainerState
	orphan bool // owned by no Job
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
}

func exited(code int32) corev1.ContainerState {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	now := metav1.Now()
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}}
}

// create makes the pod in ns, with its Job (a real one, whose uid the pod's owner reference
// carries), and writes its status through the status subresource as the kubelet would. The
// pod passes Pod Security "restricted", so that the rescue container is checked against it.
func (p stuckPod) create(t *testing.T, c *kubetest.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	no, yes := false, true
	secure := func(ct corev1.Container) corev1.Container {
		ct.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		return ct
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: p.annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers:      []corev1.Container{secure(corev1.Container{Name: "app", Image: "app:1"})},
		},
	}
	if p.restart != "" {
		pod.Spec.RestartPolicy = p.restart
	}
	if p.sidecar.Name != "" {
		pod.Spec.Containers = append(pod.Spec.Containers, secure(p.sidecar))
	}
	for _, ct := range p.more {
		pod.Spec.Containers = append(pod.Spec.Containers, secure(ct))
	}
	if !p.orphan {
		job := c.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", map[string]any{
			"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never", "containers": []any{map[string]any{"name": "app", "image": "app:1"}}}}}})
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name,
			UID: types.UID(str(mapAt(job, "metadata"), "uid")), Controller: &yes}}
	}
	c.CreatePod(t, ns, pod)
	status := corev1.PodStatus{Phase: corev1.PodRunning}
	for i, ct := range pod.Spec.Containers {
		state := running()
		if i == 0 {
			state = exited(0)
		}
		if s, ok := p.states[ct.Name]; ok {
			state = s
		}
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Image: ct.Image, State: state})
	}
	writeStatus(t, c, ns, name, status)
	return getPod(t, c, ns, name)
}

// podPath is the API path of a pod.
func podPath(ns, name string) string { return "/api/v1/namespaces/" + ns + "/pods/" + name }

// writeStatus writes a pod's status through its status subresource, as the kubelet does.
func writeStatus(t *testing.T, c *kubetest.Cluster, ns, name string, status corev1.PodStatus) {
	t.Helper()
	var raw []byte
	if code := c.Do(t, http.MethodPatch, podPath(ns, name)+"/status", map[string]any{"status": status}, &raw); code != http.StatusOK {
		t.Fatalf("writing the status of %s/%s: %d %s", ns, name, code, raw)
	}
}

func getPod(t *testing.T, c *kubetest.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if code := c.Do(t, http.MethodGet, podPath(ns, name), nil, &pod); code != http.StatusOK {
		t.Fatalf("GET pod %s/%s: %d", ns, name, code)
	}
	return &pod
}

// waitPod reads the pod until cond holds, and fails the test if it has not within a bound
// generous enough for a loaded machine.
func waitPod(t *testing.T, c *kubetest.Cluster, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if pod := getPod(t, c, ns, name); cond(pod) {
			return pod
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s: the condition did not hold within 2m", ns, name)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by deadline
	}
}

func hasRescue(pod *corev1.Pod) bool { return len(pod.Spec.EphemeralContainers) > 0 }

// untouched fails the test unless nothing wrote the pods since they were read.
func untouched(t *testing.T, c *kubetest.Cluster, before ...*corev1.Pod) {
	t.Helper()
	for _, b := range before {
		if now := getPod(t, c, b.Namespace, b.Name); now.ResourceVersion != b.ResourceVersion {
			t.Errorf("pod %s/%s was written (resourceVersion %s, now %s): ephemeral containers %v",
				b.Namespace, b.Name, b.ResourceVersion, now.ResourceVersion, now.Spec.EphemeralContainers)
		}
	}
}

// rescueCmd runs "kubectl sidesync rescue ARGS" with a kubeconfig, in-process, as a release
// (corpusBuild), so that the rescue containers run that release's image.
func rescueCmd(kubeconfig string, args ...string) ran {
	var out, errOut bytes.Buffer
	code := run(append([]string{"rescue", "--kubeconfig", kubeconfig}, args...), corpusBuild, nil, &out, &errOut)
	return ran{code, out.String(), errOut.String()}
}

// complete plays the kubelet once the rescue container is in the pod: the container ran and
// exited 0, and so did the sidecar it told to quit; the pod Succeeded, or Failed if its app
// had failed.
func complete(t *testing.T, c *kubetest.Cluster, ns, name string) {
	t.Helper()
	pod := waitPod(t, c, ns, name, hasRescue)
	status := pod.Status
	status.Phase = corev1.PodSucceeded
	for i := range status.ContainerStatuses {
		st := &status.ContainerStatuses[i].State
		if st.Terminated == nil {
			*st = exited(0)
		}
		if st.Terminated.ExitCode != 0 {
			status.Phase = corev1.PodFailed // restartPolicy Never: a container failed
		}
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		status.EphemeralContainerStatuses = append(status.EphemeralContainerStatuses, corev1.ContainerStatus{Name: ec.Name, Image: ec.Image, State: exited(0)})
	}
	writeStatus(t, c, ns, name, status)
}

// rescueDoc is -o json's document as a script reads it.
type rescueDoc struct {
	DryRun         bool   `json:"dryRun"`
	DryRunStrategy string `json:"dryRunStrategy"`
	Pods           []struct {
		Namespace, Name, Verdict, Refusal, Reason, Hint, Plan string
		Targets                                               []struct {
			Container, Profile, Spec string
			Signal                   bool
		}
		Add     []corev1.EphemeralContainer
		Outcome *struct {
			Outcome  string
			OK       bool
			Phase    string
			Sidecars map[string]int32
			Rescuers map[string]string
		}
	} `json:"pods"`
	Others map[string]int `json:"others"`
}

// decisions reads -o json's document, refusing fields a script would not know.
func decisions(t *testing.T, r ran) rescueDoc {
	t.Helper()
	var doc rescueDoc
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r)
	}
	return doc
}

// row is the line of a table that names pod, or "".
func row(stdout, pod string) string {
	for line := range strings.Lines(stdout) {
		if f := strings.Fields(line); len(f) > 1 && f[1] == pod {
			return line
		}
	}
	return ""
}

// outcomeRow is the line of the outcomes' table that names pod, or "".
func outcomeRow(stdout, pod string) string {
	_, outcomes, _ := strings.Cut(stdout, "OUTCOME")
	return row(outcomes, pod)
}

// TestRescue runs `kubectl sidesync rescue` against a real kube-apiserver. No kubelet runs:
// the tests create each pod with its Job and write its status as the kubelet would, and play
// the kubelet again when a rescue container appears. Each case has a namespace of its own.
func TestRescue(t *testing.T) {
	c := kubetest.Start(t)
	admin := c.Kubeconfig(t, c.AdminToken)
	t.Run("dry run", func(t *testing.T) { testRescueDryRun(t, c, admin) })
	t.Run("left alone", func(t *testing.T) { testRescueLeft(t, c, admin) })
	t.Run("rescue", func(t *testing.T) { testRescueRescues(t, c, admin) })
	t.Run("in flight", func(t *testing.T) { testRescueInFlight(t, c, admin) })
	t.Run("RBAC", func(t *testing.T) { testRescueRBAC(t, c) })
	t.Run("admission", func(t *testing.T) { testRescueAdmission(t, c, admin) })
	t.Run("json", func(t *testing.T) { testRescueJSON(t, c, admin) })
	// lint -n/-A reads the cluster too: tested here, on this API server, to spare another start.
	t.Run("lint", func(t *testing.T) { testLintCluster(t, c, admin) })
}

// testRescueDryRun: --dry-run lists the stuck pods of four sidecars with their plans, and one
// left for want of a quit endpoint with the hint, and writes nothing. The namespace comes from
// the kubeconfig's context, the kubeconfig from $KUBECONFIG, as with kubectl.
func testRescueDryRun(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "stuck"
	c.CreateNamespace(t, ns)
	noQuit := vaultPod
	noQuit.annotations = map[string]string{"vault.hashicorp.com/agent-inject-status": "injected"}
	pods := []*corev1.Pod{
		istioPod.create(t, c, ns, "istio"),
		linkerdPod.create(t, c, ns, "linkerd"),
		vaultPod.create(t, c, ns, "vault"),
		daprPod.create(t, c, ns, "dapr"),
		noQuit.create(t, c, ns, "vault-no-quit"),
	}
	r := rescueCmd(admin, "-n", ns, "--dry-run=client")
	if r.code != 0 {
		t.Fatalf("dry run: %s", r)
	}
	for pod, want := range map[string]string{
		"istio":         "stuck  app app exited 0; istio-proxy still runs  quit istio-proxy (istio) (attempt 1)",
		"linkerd":       "stuck  app app exited 0; linkerd-proxy still runs  quit linkerd-proxy (linkerd) (attempt 1)",
		"vault":         "stuck  app app exited 0; vault-agent still runs  quit vault-agent (vault) (attempt 1)",
		"dapr":          "stuck  app app exited 0; daprd still runs  quit daprd (dapr) (attempt 1)",
		"vault-no-quit": "left: no-quit-endpoint  vault-agent (Vault Agent): its quit API is off; --signal vault-agent sends it SIGTERM",
	} {
		if got := strings.Join(strings.Fields(row(r.stdout, pod)), " "); !strings.Contains(got, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the row of %s: %q, want %q in it\n%s", pod, got, want, r)
		}
	}
	if strings.Contains(r.stdout, "OUTCOME") || strings.Contains(r.stderr, "rescuing") {
		t.Errorf("a dry run rescued:\n%s", r)
	}

	doc := decisions(t, rescueCmd(admin, "-n", ns, "--dry-run=client", "-o", "json"))
	if y := rescueCmd(admin, "-n", ns, "--dry-run=client", "-o", "yaml"); y.code != 0 {
		t.Errorf("-o yaml: %s", y)
	} else if diff := cmp.Diff(doc, yamlDecisions(t, y)); diff != "" {
		t.Errorf("-o yaml and -o json differ (-json +yaml):\n%s", diff)
	}
	for _, p := range doc.Pods {
		if p.Name == "dapr" && (len(p.Add) != 1 || !cmp.Equal(p.Add[0].Env, []corev1.EnvVar{daprToken})) {
			t.Errorf("dapr: the rescue container's env does not carry DAPR_API_TOKEN from the sidecar's: %+v", p.Add)
		}
	}

	kubeconfig, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig.Contexts["batch"] = &clientcmdapi.Context{Cluster: "node", AuthInfo: "user", Namespace: ns}
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	var out, errOut bytes.Buffer
	// A bare --dry-run is client's, with kubectl's deprecation warning.
	if code := run([]string{"rescue", "--context", "batch", "--dry-run"}, corpusBuild, nil, &out, &errOut); code != 0 || out.String() != r.stdout ||
		!strings.HasPrefix(errOut.String(), "Warning: --dry-run is deprecated and can be replaced with --dry-run=client.\n") {
		t.Errorf("with $KUBECONFIG and --context: exit %d, stdout\n%s\nwant the same as with -n %s:\n%s\nstderr %s", code, out.String(), ns, r.stdout, errOut.String())
	}
	untouched(t, c, pods...)
	testRescueServerDryRun(t, c, admin, ns, pods)
}

// testRescueServerDryRun: --dry-run=server sends each stuck pod's rescue container with
// dryRun=All: the API server accepts it, and stores nothing.
func testRescueServerDryRun(t *testing.T, c *kubetest.Cluster, admin, ns string, pods []*corev1.Pod) {
	r := rescueCmd(admin, "-n", ns, "--dry-run=server")
	if r.code != 0 || !strings.Contains(r.stderr, "rescue containers accepted by the API server for 4 pods (server dry run: nothing stored)\n") {
		t.Errorf("--dry-run=server: want exit 0 and the dry run said:\n%s", r)
	}
	for _, pod := range []string{"istio", "linkerd", "vault", "dapr"} {
		if got := outcomeRow(r.stdout, pod); !strings.Contains(got, "rescue container accepted (server dry run: nothing stored)") {
			t.Errorf("the outcome of %s: %q\n%s", pod, got, r)
		}
	}
	untouched(t, c, pods...)
}

// yamlDecisions reads -o yaml's document as decisions reads -o json's.
func yamlDecisions(t *testing.T, r ran) rescueDoc {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(r.stdout))
	if err != nil {
		t.Fatalf("-o yaml: %v\n%s", err, r)
	}
	return decisions(t, ran{r.code, string(j), r.stderr})
}

// testRescueLeft: pods rescue must not touch, rescued for real: an app still running, an app
// that exited 1 and restarts (OnFailure), a container the catalog does not know still
// running, a stuck pod no Job owns. None gets a container, and each is reported as it should
// be: a row with the reason and hint when it is worth reading, a count on stderr otherwise.
// Named, any pod gets a row, and a missing one is an error.
func testRescueLeft(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "calm"
	c.CreateNamespace(t, ns)
	busy, retrying, unknown, orphan := istioPod, istioPod, stuckPod{}, istioPod
	busy.states = map[string]corev1.ContainerState{"app": running()}
	retrying.restart, retrying.states = corev1.RestartPolicyOnFailure, map[string]corev1.ContainerState{"app": exited(1)}
	unknown.more = []corev1.Container{{Name: "logger", Image: "fluent/fluent-bit:3.2"}}
	orphan.orphan = true
	pods := []*corev1.Pod{busy.create(t, c, ns, "busy"), retrying.create(t, c, ns, "retrying"),
		unknown.create(t, c, ns, "unknown"), orphan.create(t, c, ns, "orphan")}

	r := rescueCmd(admin, "-n", ns)
	for pod, want := range map[string]string{
		"busy":     "",
		"orphan":   "",
		"retrying": "left: restart-pending  app app exited 1 and the kubelet restarts it",
		"unknown":  "left: unknown-running  logger is running; it is not a sidecar sidesync knows (an app still at work, or an unknown sidecar); if it is a sidecar, --signal NAME ends it with SIGTERM",
	} {
		got := strings.Join(strings.Fields(row(r.stdout, pod)), " ")
		if want == "" && got != "" || !strings.Contains(got, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the row of %s: %q, want %q", pod, got, want)
		}
	}
	if r.code != 0 || strings.Contains(r.stdout, "OUTCOME") || !strings.Contains(r.stderr, "2 other pods: not stuck (1 app-running, 1 not-job)") {
		t.Errorf("want exit 0, no outcome, 2 pods counted:\n%s", r)
	}
	untouched(t, c, pods...)

	r = rescueCmd(admin, "-n", ns, "orphan", "busy", "--dry-run=client", "unknown", "--signal", "logger")
	for pod, want := range map[string]string{
		"orphan":  "stuck",
		"busy":    "left: app-running",
		"unknown": "SIGTERM logger (attempt 1)",
	} {
		if got := row(r.stdout, pod); !strings.Contains(got, want) {
			t.Errorf("named, the row of %s: %q, want %q in it\n%s", pod, got, want, r)
		}
	}
	r = rescueCmd(admin, "-n", ns, "ghost", "--dry-run=client")
	if r.code != 1 || !strings.Contains(row(r.stdout, "ghost"), `not found  pods "ghost" not found`) {
		t.Errorf("a missing pod: want exit 1 and a row that says not found:\n%s", r)
	}
	untouched(t, c, pods...)
}

// testRescueRescues: a real rescue of five pods (enough for one LIST a poll) in a namespace
// that enforces Pod Security "restricted". The rescue containers land as Decide made them,
// with this release's image, and the test plays the kubelet when it sees them. Every pod
// completes, one Failed by its own app's exit code, which is not the rescue's failure: exit 0.
func testRescueRescues(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "real"
	c.CreateNamespaceLabelled(t, ns, restricted)
	failing := istioPod
	failing.states = map[string]corev1.ContainerState{"app": exited(1)}
	sidecars := map[string]stuckPod{"report": istioPod, "events": daprPod, "mesh": linkerdPod, "secrets": vaultPod, "flaky": failing}
	for name, p := range sidecars {
		p.create(t, c, ns, name)
	}
	done := make(chan ran, 1)
	go func() { done <- rescueCmd(admin, "-n", ns, "--wait", "2m") }()
	for name := range sidecars {
		complete(t, c, ns, name)
	}
	var r ran
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("rescue did not return within 3m")
	}
	for pod, want := range map[string]string{
		"report":  "Succeeded istio-proxy exited 0 sidesync-rescue-1 exited 0",
		"events":  "Succeeded daprd exited 0 sidesync-rescue-1 exited 0",
		"mesh":    "Succeeded linkerd-proxy exited 0 sidesync-rescue-1 exited 0",
		"secrets": "Succeeded vault-agent exited 0 sidesync-rescue-1 exited 0",
		"flaky":   "Failed istio-proxy exited 0 sidesync-rescue-1 exited 0",
	} {
		if got := strings.Join(strings.Fields(outcomeRow(r.stdout, pod)), " "); got != ns+" "+pod+" "+want {
			t.Errorf("the outcome of %s: %q, want %q\n%s", pod, got, want, r)
		}
	}
	if r.code != 0 || !strings.Contains(r.stderr, "rescue containers added to 5 pods; waiting up to 2m0s for the outcome") {
		t.Errorf("want exit 0:\n%s", r)
	}

	image, _ := corpusBuild.Image()
	no, yes := false, true
	for name, p := range sidecars {
		profile := map[string]string{"istio-proxy": "istio", "daprd": "dapr", "linkerd-proxy": "linkerd", "vault-agent": "vault"}[p.sidecar.Name]
		want := []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "sidesync-rescue-1", Image: image, Command: []string{"/sidesync", "quit", "--sidecar", profile}, Env: p.sidecar.Env,
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			// The API server's defaults.
			ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}}}
		if diff := cmp.Diff(want, getPod(t, c, ns, name).Spec.EphemeralContainers); diff != "" {
			t.Errorf("%s: the rescue container (-want +got):\n%s", name, diff)
		}
	}
}

// testRescueInFlight: a second rescue of a pod whose rescue container has not ended adds
// nothing and says in-flight; a pod not complete within --wait, or deleted before, is exit 1.
func testRescueInFlight(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "again"
	c.CreateNamespace(t, ns)
	istioPod.create(t, c, ns, "first")
	istioPod.create(t, c, ns, "slow")
	r := rescueCmd(admin, "-n", ns, "first", "--wait", "0")
	if r.code != 0 || !strings.Contains(outcomeRow(r.stdout, "first"), "rescue container added (not waited for)") {
		t.Fatalf("the first rescue, not waited for: want exit 0\n%s", r)
	}
	first := getPod(t, c, ns, "first")
	if n := len(first.Spec.EphemeralContainers); n != 1 {
		t.Fatalf("the first rescue added %d containers, want 1", n)
	}
	r = rescueCmd(admin, "-n", ns, "--wait", "1s")
	if r.code != 1 || !strings.Contains(row(r.stdout, "first"), "in-flight  rescue container sidesync-rescue-1 has not ended yet") ||
		!strings.HasSuffix(strings.Join(strings.Fields(outcomeRow(r.stdout, "slow")), " "), "still running after 1s istio-proxy running sidesync-rescue-1 has no status yet") || outcomeRow(r.stdout, "first") != "" {
		t.Errorf("again: want first in-flight, slow rescued and still running, exit 1:\n%s", r)
	}
	untouched(t, c, first)
	if n := len(getPod(t, c, ns, "slow").Spec.EphemeralContainers); n != 1 {
		t.Errorf("slow has %d rescue containers, want 1", n)
	}

	// A pod deleted while it is waited for (its Job deleted, say) is not a rescue that worked.
	istioPod.create(t, c, ns, "doomed")
	done := make(chan ran, 1)
	go func() { done <- rescueCmd(admin, "-n", ns, "doomed", "--wait", "2m") }()
	waitPod(t, c, ns, "doomed", hasRescue)
	if code := c.Do(t, http.MethodDelete, podPath(ns, "doomed"), nil, nil); code != http.StatusOK {
		t.Fatalf("deleting the pod: %d", code)
	}
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("rescue did not return within 3m")
	}
	if r.code != 1 || !strings.Contains(outcomeRow(r.stdout, "doomed"), "deleted before it was seen complete") {
		t.Errorf("a pod deleted while waited for: want exit 1 and the outcome deleted:\n%s", r)
	}
}

// testRescueRBAC: a ServiceAccount bound to deploy/rescue/role.yaml's Role may dry-run and
// rescue; one without its patch rule, or without list, fails with a message that says what is
// missing, and writes nothing.
func testRescueRBAC(t *testing.T, c *kubetest.Cluster) {
	const ns = "rbac"
	c.CreateNamespace(t, ns)
	a, b := istioPod.create(t, c, ns, "a"), istioPod.create(t, c, ns, "b")
	roles := manifestObjects(t, "../../deploy/rescue/role.yaml")
	if len(roles) != 1 || objName(roles[0]) != "Role/sidesync-rescue" {
		t.Fatalf("deploy/rescue/role.yaml: want one Role sidesync-rescue, got %v", roles)
	}
	role := roles[0]
	// The file's Role without one of its grants, as a cluster administrator might have it.
	without := func(name string, keep func(rule map[string]any) map[string]any) map[string]any {
		out := copyJSON(role)
		out["metadata"] = map[string]any{"name": name}
		var rules []any
		for _, r := range listOf(role["rules"]) {
			if r = keep(copyJSON(r)); r != nil {
				rules = append(rules, r)
			}
		}
		if sameJSON(rules, role["rules"]) {
			t.Fatalf("%s: removes nothing from %v", name, role["rules"])
		}
		out["rules"] = rules
		return out
	}
	noPatch := without("no-patch", func(r map[string]any) map[string]any {
		if slices.Contains(strs(r["resources"]), "pods/ephemeralcontainers") {
			return nil
		}
		return r
	})
	noList := without("no-list", func(r map[string]any) map[string]any {
		r["verbs"] = slices.DeleteFunc(strs(r["verbs"]), func(v string) bool { return v == "list" })
		return r
	})
	kubeconfigs := map[string]string{}
	for _, r := range []map[string]any{role, noPatch, noList} {
		name := str(mapAt(r, "metadata"), "name")
		c.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", r)
		c.CreateServiceAccount(t, ns, name)
		c.CreateRoleBinding(t, ns, name, name, kubetest.Subject{Kind: "ServiceAccount", Name: name, Namespace: ns})
		token := c.ServiceAccountToken(t, ns, name)
		c.WaitForStatus(t, token, http.MethodGet, podPath(ns, "a"), http.StatusOK)
		kubeconfigs[name] = c.Kubeconfig(t, token)
	}

	r := rescueCmd(kubeconfigs["sidesync-rescue"], "-n", ns, "--dry-run=client")
	if r.code != 0 || !strings.Contains(row(r.stdout, "a"), "stuck") || !strings.Contains(row(r.stdout, "b"), "stuck") {
		t.Errorf("dry run with the Role: want both stuck, exit 0:\n%s", r)
	}
	untouched(t, c, a, b)
	if r = rescueCmd(kubeconfigs["sidesync-rescue"], "-n", ns, "a", "--wait", "0"); r.code != 0 || !hasRescue(getPod(t, c, ns, "a")) {
		t.Errorf("rescue with the Role: want exit 0 and a rescue container in a:\n%s", r)
	}
	for name, want := range map[string]string{
		"no-patch": `kubectl sidesync rescue: cannot patch pods/ephemeralcontainers of pod "b" in namespace "rbac": forbidden; ` + rbacNeeds,
		"no-list":  `kubectl sidesync rescue: cannot list pods in namespace "rbac": forbidden; ` + rbacNeeds,
	} {
		r := rescueCmd(kubeconfigs[name], "-n", ns, "--wait", "0")
		if r.code != 1 || !strings.Contains(r.stderr, want+"\n") {
			t.Errorf("with the Role %s: want exit 1 and %q:\n%s", name, want, r)
		}
	}
	untouched(t, c, b)
}

// strs is a JSON list of strings.
func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// testRescueAdmission: a ValidatingAdmissionPolicy that forbids ephemeral containers in a
// namespace refuses the rescue; rescue passes the server's message on, naming the pod.
func testRescueAdmission(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "denied"
	const message = "ephemeral containers are forbidden here: ask the platform team"
	c.CreateNamespace(t, ns)
	pod := istioPod.create(t, c, ns, "guarded")
	c.Create(t, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "no-ephemeral-containers"},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []string{""}, "apiVersions": []string{"v1"}, "operations": []string{"UPDATE"}, "resources": []string{"pods/ephemeralcontainers"}}}},
			"validations": []any{map[string]any{"expression": "!has(object.spec.ephemeralContainers) || size(object.spec.ephemeralContainers) == 0", "message": message}},
		}})
	c.Create(t, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "no-ephemeral-containers"},
		"spec": map[string]any{"policyName": "no-ephemeral-containers", "validationActions": []string{"Deny"},
			"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}},
	})
	// The API server applies a new policy once its informer has it: ask, with a dry run that
	// writes nothing, until it refuses.
	probe := map[string]any{"spec": map[string]any{"ephemeralContainers": []any{map[string]any{"name": "probe", "image": "probe:1"}}}}
	for deadline := time.Now().Add(time.Minute); ; {
		resp := c.Send(t, http.MethodPatch, podPath(ns, "guarded")+"/ephemeralcontainers?dryRun=All", probe)
		if resp.Code/100 == 4 && strings.Contains(string(resp.Body), message) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy does not refuse ephemeral containers after 1m: %d %s", resp.Code, resp.Body)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by deadline
	}
	r := rescueCmd(admin, "-n", ns, "--wait", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "kubectl sidesync rescue: pod denied/guarded: the API server refused the rescue container: ") ||
		!strings.Contains(r.stderr, message) || !strings.Contains(outcomeRow(r.stdout, "guarded"), "rescue failed: ") {
		t.Errorf("want exit 1 and the policy's message, naming the pod:\n%s", r)
	}
	// --dry-run=server reaches the API server's admission, which refuses as it would for real.
	r = rescueCmd(admin, "-n", ns, "--dry-run=server")
	if r.code != 1 || !strings.Contains(r.stderr, message) || !strings.Contains(outcomeRow(r.stdout, "guarded"), "rescue failed: ") {
		t.Errorf("--dry-run=server: want exit 1 and the policy's message:\n%s", r)
	}
	untouched(t, c, pod)
}

// testRescueJSON: -o json is one document with the decisions, cluster-wide with -A, and with
// the outcomes after a rescue.
func testRescueJSON(t *testing.T, c *kubetest.Cluster, admin string) {
	const ns = "scripted"
	c.CreateNamespace(t, ns)
	busy := istioPod
	busy.states = map[string]corev1.ContainerState{"app": running()}
	istioPod.create(t, c, ns, "nightly")
	busy.create(t, c, ns, "busy")
	r := rescueCmd(admin, "-A", "--dry-run=client", "-o", "json")
	doc := decisions(t, r)
	if r.code != 0 || !doc.DryRun || doc.DryRunStrategy != "client" || doc.Others["app-running"] < 1 {
		t.Errorf("-A --dry-run -o json: want exit 0, dryRun, the busy pod counted:\n%s", r)
	}
	found := false
	for _, p := range doc.Pods {
		if p.Namespace == ns && p.Name == "nightly" {
			found = true
			if p.Verdict != "stuck" || p.Plan != "quit istio-proxy (istio) (attempt 1)" || len(p.Targets) != 1 || p.Targets[0].Spec != "istio" ||
				len(p.Add) != 1 || !slices.Equal(p.Add[0].Command, []string{"/sidesync", "quit", "--sidecar", "istio"}) || p.Outcome != nil {
				t.Errorf("nightly: %+v", p)
			}
		}
	}
	if !found {
		t.Errorf("-A: no decision for %s/nightly:\n%s", ns, r)
	}

	r = rescueCmd(admin, "-n", ns, "--wait", "0", "-o", "json")
	doc = decisions(t, r)
	if r.code != 0 || doc.DryRun || doc.DryRunStrategy != "none" || len(doc.Pods) != 1 || doc.Pods[0].Outcome == nil || !doc.Pods[0].Outcome.OK ||
		doc.Pods[0].Outcome.Rescuers["sidesync-rescue-1"] != "has no status yet" {
		t.Errorf("-o json after a rescue: want the outcome:\n%s", r)
	}
}

// closedKubeconfig is a kubeconfig whose API server is a loopback port nothing listens on:
// a command that reaches it fails with exit 1, not 2.
func closedKubeconfig(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"closed": {Server: "https://" + addr, InsecureSkipTLSVerify: true}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"user": {Token: "none"}},
		Contexts:       map[string]*clientcmdapi.Context{"closed": {Cluster: "closed", AuthInfo: "user"}},
		CurrentContext: "closed",
	}
	if err := clientcmd.WriteToFile(config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRescueUsage: bad flags are exit 2, with a message naming the flag, before anything is
// read: the kubeconfig's API server is a closed port, which would make them exit 1.
func TestRescueUsage(t *testing.T) {
	kubeconfig := closedKubeconfig(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown output", []string{"-o", "xml"}, `unable to match a printer suitable for the output format "xml", allowed formats are: text,json,yaml`},
		{"-A with names", []string{"-A", "job-1"}, "--all-namespaces (-A) takes no pod names"},
		{"-A with -n", []string{"-A", "-n", "batch"}, "--all-namespaces (-A) and --namespace (-n): give one"},
		{"bad image", []string{"--image", "Not An Image"}, `--image "Not An Image"`},
		{"negative wait", []string{"--wait", "-1s"}, "--wait -1s: must not be negative"},
		{"wait not a duration", []string{"--wait", "soon"}, `invalid argument "soon" for "--wait" flag: time: invalid duration "soon"`},
		{"unknown flag", []string{"--force"}, "error: unknown flag: --force\nSee 'kubectl sidesync rescue --help' for usage.\n"},
		{"bad dry run", []string{"--dry-run=maybe"}, `Invalid dry-run value (maybe). Must be "none", "server", or "client".`},
		{"bad signal", []string{"--signal", "app,Log_Shipper"}, `--signal "Log_Shipper": not a container name`},
		{"bad namespace", []string{"-n", "Batch"}, `--namespace "Batch": not a namespace name`},
		{"bad pod name", []string{"jobs/x/y"}, `"jobs/x/y": not a pod name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rescueCmd(kubeconfig, tt.args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "See 'kubectl sidesync rescue -") {
				t.Errorf("want exit 2, nothing on stdout, %q on stderr:\n%s", tt.want, r)
			}
		})
	}
	t.Run("development build without --image", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run([]string{"rescue", "--kubeconfig", kubeconfig}, devBuild, nil, &out, &errOut)
		if want := "--image is required: this is a development build"; code != 2 || !strings.Contains(errOut.String(), want) {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut.String(), want)
		}
	})
	// A dry run sends no image to run: it names the build's own, saying it is not published.
	t.Run("development build, dry run without --image", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run([]string{"rescue", "--kubeconfig", kubeconfig, "--dry-run=client"}, devBuild, nil, &out, &errOut)
		want := "kubectl sidesync rescue: a development build without --image: the dry run names " + buildinfo.ImageRepository + ":devel, which is not published; a rescue needs --image\n"
		if code != 1 || !strings.HasPrefix(errOut.String(), want) {
			t.Errorf("exit %d, stderr %q; want 1 (the API server is a closed port) and first %q", code, errOut.String(), want)
		}
	})
	t.Run("the same flags, right, reach the API server", func(t *testing.T) {
		r := rescueCmd(kubeconfig, "--dry-run=client", "-o", "json")
		if want := `kubectl sidesync rescue: cannot list pods in namespace "default": `; r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("want exit 1 and %q:\n%s", want, r)
		}
	})
}

// TestRescueHelp: --help prints the usage, with the exit codes, on stdout.
func TestRescueHelp(t *testing.T) {
	r := rescueCmd(closedKubeconfig(t), "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Exit codes: 0 every stuck pod rescued") || !strings.Contains(r.stdout, "deploy/rescue/role.yaml") {
		t.Errorf("want exit 0 and the usage:\n%s", r)
	}
}

// TestRescueFlags: flags may follow the pod names, as with kubectl; pod/NAME is NAME; a name
// given twice is one pod.
func TestRescueFlags(t *testing.T) {
	cfg := rescueConfig{kube: newKubeFlags()}
	var fl rescueFlags
	cmd := &cobra.Command{Use: "rescue"}
	addRescueFlags(cmd, &cfg, &fl)
	if err := cmd.ParseFlags([]string{"job-1", "--dry-run=client", "-n", "batch", "pod/job-2", "--signal", "a,b", "--signal", "c", "job-1", "--wait=0"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.complete(cmd, fl, cmd.Flags().Args(), env{build: corpusBuild, stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	image, _ := corpusBuild.Image()
	if diff := cmp.Diff([]string{"job-1", "job-2"}, cfg.pods); diff != "" || cfg.dryRun != dryRunClient || cfg.namespace != "batch" || cfg.wait != 0 ||
		!slices.Equal(cfg.opts.Signal, []string{"a", "b", "c"}) || cfg.opts.Image != image {
		t.Errorf("got %+v (pods -want +got:\n%s)", cfg, diff)
	}
}

// TestRescuePatchError: how a failed patch is reported. The 404 of a cluster without
// ephemeral containers cannot be had from a real API server of a supported release; it is the
// answer Kubernetes gives for a path it does not serve.
func TestRescuePatchError(t *testing.T) {
	d := rescue.Decision{Namespace: "batch", Name: "job-1"}
	pods := schema.GroupResource{Resource: "pods"}
	noRoute := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{noRoute, "pod batch/job-1: ephemeral containers are not enabled in this cluster (Kubernetes 1.25+ has them on)"},
		{apierrors.NewNotFound(pods, "job-1"), "pod batch/job-1: deleted since it was read"},
		{apierrors.NewForbidden(pods, "job-1", errors.New(`User "jane" cannot patch resource "pods/ephemeralcontainers" in API group "" in the namespace "batch"`)),
			`cannot patch pods/ephemeralcontainers of pod "job-1" in namespace "batch": forbidden; ` + rbacNeeds},
		{apierrors.NewForbidden(pods, "job-1", errors.New(`violates PodSecurity "restricted:latest": runAsNonRoot != true`)),
			`pod batch/job-1: the API server refused the rescue container: pods "job-1" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`},
		{errors.New("connection refused"), "pod batch/job-1: adding the rescue container: connection refused"},
	} {
		if got := patchError(d, tt.err).Error(); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%v: got %q, want %q", tt.err, got, tt.want)
		}
	}
}
