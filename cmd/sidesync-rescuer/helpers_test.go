//go:build linux

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The release the tests install, as the install guide does: `helm install sidesync-rescuer
// deploy/chart/sidesync-rescuer -n sidesync-system`.
const (
	releaseNS = "sidesync-system"
	release   = string(chart.Rescuer)
	// chartImage is the sidesync image the chart's defaults give (its appVersion).
	chartImage = "ghcr.io/sidesync/sidesync:v0.1.0"
)

// waitLimit bounds every wait on the API server or the controller: generous, for a machine
// under heavy load; a test never asserts how long anything took.
const waitLimit = 3 * time.Minute

// installed is the chart installed on a cluster: the rescuer's service account, its token and
// a kubeconfig with it, and an admin client.
type installed struct {
	c          *kubetest.Cluster
	token      string
	kubeconfig string
	admin      kubernetes.Interface
	rescuer    kubernetes.Interface // as the rescuer's service account
}

// install renders the chart with Helm's engine (internal/cluster/chart) and creates every object it
// makes, with strict field validation, as `helm install` would; then waits until RBAC lets the
// service account list pods and the policy judges its requests.
func install(t *testing.T, c *kubetest.Cluster) *installed {
	t.Helper()
	objs, err := chart.Rescuer.Render(nil, releaseNS)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	c.CreateNamespace(t, releaseNS)
	for _, o := range objs {
		kind := o["kind"].(string)
		path, served := kubetest.CollectionPath(o, releaseNS)
		if !served {
			t.Fatalf("the chart makes a %s, which the test does not know where to send", kind)
		}
		if r := c.Send(t, "POST", path+"?fieldValidation=Strict", o); r.Code != 201 || len(r.Warnings) > 0 {
			t.Fatalf("%s %v: %d %s, warnings %q", kind, o["metadata"].(map[string]any)["name"], r.Code, r.Body, r.Warnings)
		}
	}
	in := &installed{c: c, token: c.ServiceAccountToken(t, releaseNS, release)}
	in.kubeconfig = c.Kubeconfig(t, in.token)
	in.admin = clientFor(t, c.Kubeconfig(t, c.AdminToken))
	in.rescuer = clientFor(t, in.kubeconfig)
	c.WaitForStatus(t, in.token, "GET", "/api/v1/pods?limit=1", 200)
	c.WaitForStatus(t, in.token, "GET", "/apis/coordination.k8s.io/v1/namespaces/"+releaseNS+"/leases/"+release, 404)
	in.waitForPolicy(t)
	return in
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit in tests
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitForPolicy waits until the API server enforces the policy (it reads policies from a
// watch): a dry-run addition of a shell container by the rescuer is refused with its message.
func (in *installed) waitForPolicy(t *testing.T) {
	t.Helper()
	in.c.CreateNamespace(t, "policy-probe")
	pod := in.createPod(t, "policy-probe", "probe", nil)
	bad := []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: rescue.ContainerPrefix + "1", Image: "busybox", Command: []string{"sh"}}}}
	patch, err := rescue.Patch(bad)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the policy to be enforced", func() (bool, string) {
		_, err := in.rescuer.CoreV1().Pods("policy-probe").Patch(context.Background(), pod.Name, "application/strategic-merge-patch+json",
			patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "ephemeralcontainers")
		return err != nil && strings.Contains(err.Error(), rescue.PolicyMessage), fmt.Sprint(err)
	})
}

// waitFor polls cond (100 ms apart) until it holds, and fails the test after waitLimit with the
// last state cond described.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %s after %s", what, state, waitLimit)
		}
		time.Sleep(100 * time.Millisecond) // polling the API server's state, bounded by deadline
	}
}

// Containers of the test pods.
var (
	appContainer   = corev1.Container{Name: "main", Image: "example.com/app:1", Command: []string{"/app"}}
	istioContainer = corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.0", Args: []string{"proxy", "sidecar"}}
	// unknownContainer is a container the catalog does not know: an app to it.
	unknownContainer = corev1.Container{Name: "log-shipper", Image: "example.com/shipper:1"}
)

// createPod creates a Job with an app and an Istio sidecar (and extra containers), and its pod
// as the Job controller would make it (the template's labels, which the API server gave the
// Job, and the controller's owner reference); no Job controller or kubelet runs here. The pod
// is Pending until setStatus.
func (in *installed) createPod(t *testing.T, ns, name string, extra []corev1.Container) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	containers := append([]corev1.Container{appContainer, istioContainer}, extra...)
	job, err := in.admin.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: containers}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Job %s/%s: %v", ns, name, err)
	}
	yes := true
	pod, err := in.admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: job.Spec.Template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the pod of %s/%s: %v", ns, name, err)
	}
	return pod
}

// state is a container's state for setStatus: "running", or "exited N".
type state struct {
	name  string
	state string
}

// setStatus writes the pod's status through its status subresource, as the kubelet would:
// phase Running, and each container's state; an exited container ended at ended.
func (in *installed) setStatus(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, ended time.Time, containers []state, ephemeral []state) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	cur, err := in.admin.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Phase = phase
	cur.Status.ContainerStatuses = statuses(t, cur, containers, ended, false)
	cur.Status.EphemeralContainerStatuses = statuses(t, cur, ephemeral, ended, true)
	out, err := in.admin.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return out
}

func statuses(t *testing.T, pod *corev1.Pod, states []state, ended time.Time, ephemeral bool) []corev1.ContainerStatus {
	t.Helper()
	image := map[string]string{}
	for _, c := range pod.Spec.Containers {
		image[c.Name] = c.Image
	}
	for _, c := range pod.Spec.EphemeralContainers {
		image[c.Name] = c.Image
	}
	var out []corev1.ContainerStatus
	for _, s := range states {
		st := corev1.ContainerStatus{Name: s.name, Image: image[s.name], ImageID: "sha256:0", ContainerID: "containerd://" + s.name}
		started := metav1.NewTime(ended.Add(-time.Minute))
		code, err := strconv.Atoi(strings.TrimPrefix(s.state, "exited "))
		switch {
		case s.state == "running":
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			st.Ready, st.Started = true, &[]bool{true}[0]
		case strings.HasPrefix(s.state, "exited ") && err == nil:
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Completed",
				StartedAt: started, FinishedAt: metav1.NewTime(ended), ContainerID: st.ContainerID}
			st.Started = new(bool)
		default:
			t.Fatalf("state %q", s.state)
		}
		if ephemeral {
			st.Ready = false
		}
		out = append(out, st)
	}
	return out
}

// getPod reads a pod as the admin.
func (in *installed) getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := in.admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// waitRescued waits until the pod holds the rescue container name, and returns the pod.
func (in *installed) waitRescued(t *testing.T, ns, name, container string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, "the rescue of "+ns+"/"+name, func() (bool, string) {
		pod = in.getPod(t, ns, name)
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == container {
				return true, ""
			}
		}
		return false, fmt.Sprintf("ephemeral containers %v", ephemeralNames(pod))
	})
	return pod
}

func ephemeralNames(pod *corev1.Pod) []string {
	var n []string
	for _, c := range pod.Spec.EphemeralContainers {
		n = append(n, c.Name)
	}
	return n
}

// events are the Events of ns that regard kind/name with reason.
func (in *installed) events(t *testing.T, ns, kind, name, reason string) []corev1.Event {
	t.Helper()
	list, err := in.admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits until one Event regards kind/name with reason, and returns it.
func (in *installed) waitEvent(t *testing.T, ns, kind, name, reason string) corev1.Event {
	t.Helper()
	var evs []corev1.Event
	waitFor(t, fmt.Sprintf("an Event %s on %s %s/%s", reason, kind, ns, name), func() (bool, string) {
		evs = in.events(t, ns, kind, name, reason)
		return len(evs) > 0, fmt.Sprintf("%d Events", len(evs))
	})
	if len(evs) != 1 {
		t.Errorf("%d Events %s on %s %s/%s, want 1: %+v", len(evs), reason, kind, ns, name, evs)
	}
	return evs[0]
}
