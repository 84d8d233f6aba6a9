//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The rescuer on the real kube-apiserver (internal/testing/kubetest): the chart is rendered with Helm's
// engine and every object created; the rescuer runs as its own process with the token of the
// chart's service account, so that the chart's RBAC and ValidatingAdmissionPolicy govern what it
// does. No kubelet runs: the tests make the Jobs' pods and write their status as the Job
// controller and the kubelet would, and wait on what the API server then holds.

func TestOnAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	in := install(t, c)
	t.Run("policy", func(t *testing.T) { testPolicy(t, in) })
	t.Run("controller", func(t *testing.T) { testController(t, in) })
}

// stuck is the status of a pod whose app ended and whose Istio sidecar runs on.
var stuck = []state{{"main", "exited 0"}, {"istio-proxy", "running"}}

// testController runs two rescuers with leader election, as the chart does, and follows pods
// through the cases the rescuer must tell apart.
func testController(t *testing.T, in *installed) {
	for _, ns := range []string{"on", "off"} {
		in.c.CreateNamespace(t, ns)
	}
	in.label(t, "on")
	args := []string{"--kubeconfig=" + in.kubeconfig, "--image=" + chartImage, "--grace=1s",
		"--leader-elect", "--leader-election-namespace=" + releaseNS, "--leader-election-id=" + release}
	a := startRescuer(t, "rescuer-a", args...)
	b := startRescuer(t, "rescuer-b", args...)
	var leader, standby *proc
	waitFor(t, "a leader", func() (bool, string) {
		switch {
		case a.logged("successfully acquired lease") > 0:
			leader, standby = a, b
		case b.logged("successfully acquired lease") > 0:
			leader, standby = b, a
		}
		return leader != nil && leader.logged("Starting workers") > 0, "none yet"
	})
	waitFor(t, leader.name+" ready", func() (bool, string) {
		code := httpStatus(t, "http://"+leader.probes+readyzPath)
		return code == 200 && httpStatus(t, "http://"+leader.probes+healthzPath) == 200, "readyz " + http.StatusText(code)
	})

	// Created in this order, each after the other's status: the rescuer takes the pods' events in
	// the order of the watch, and once the last is rescued and the queue is empty, it has
	// decided on all of them.
	now := time.Now()
	unlabelled := in.setStatus(t, in.createPod(t, "off", "unlabelled", nil), corev1.PodRunning, now, stuck, nil)
	working := in.setStatus(t, in.createPod(t, "on", "working", nil), corev1.PodRunning, now,
		[]state{{"main", "running"}, {"istio-proxy", "running"}}, nil)
	unknown := in.setStatus(t, in.createPod(t, "on", "unknown", []corev1.Container{unknownContainer}), corev1.PodRunning, now,
		[]state{{"main", "exited 0"}, {"istio-proxy", "running"}, {"log-shipper", "running"}}, nil)
	done := leader.reconciles(t)
	first := in.setStatus(t, in.createPod(t, "on", "first", nil), corev1.PodRunning, time.Now(), stuck, nil)

	t.Run("a stuck pod is rescued after the grace, with Decide's container", func(t *testing.T) {
		pod := in.waitRescued(t, "on", first.Name, rescue.ContainerPrefix+"1")
		want := rescue.Decide(first, rescue.Options{Image: chartImage, Now: time.Now()}).Add
		if len(pod.Spec.EphemeralContainers) != 1 || len(want) != 1 {
			t.Fatalf("ephemeral containers %q, Decide's %d", ephemeralNames(pod), len(want))
		}
		got := pod.Spec.EphemeralContainers[0]
		if got.Image != want[0].Image || !cmp.Equal(got.Command, want[0].Command) || !cmp.Equal(got.SecurityContext, want[0].SecurityContext) || len(got.Env) > 0 {
			t.Errorf("the rescue container differs from Decide's (-want +got):\n%s", cmp.Diff(want[0].EphemeralContainerCommon, got.EphemeralContainerCommon))
		}
	})
	t.Run("Events on the pod and the Job", func(t *testing.T) {
		ev := in.waitEvent(t, "on", "Pod", first.Name, reasonRescued)
		if ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Message, "quit istio-proxy (istio)") || !strings.Contains(ev.Message, rescue.ContainerPrefix+"1") {
			t.Errorf("the pod's Event: %s %q", ev.Type, ev.Message)
		}
		job := in.waitEvent(t, "on", "Job", "first", reasonRescued)
		if !strings.Contains(job.Message, first.Name) || job.InvolvedObject.UID != first.OwnerReferences[0].UID {
			t.Errorf("the Job's Event: %q, regarding %+v", job.Message, job.InvolvedObject)
		}
		// Never before the grace: Decide measures it from the app's end as the status says it
		// (to the second), and the Event is written after the patch.
		ended := first.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
		if ev.EventTime.Time.Before(ended.Add(time.Second)) {
			t.Errorf("rescued at %s, before the grace of 1s from the app's end at %s", ev.EventTime.Time, ended)
		}
		t.Logf("the pod's Event: %s %s %q (by %s/%s)", ev.Type, ev.Reason, ev.Message, ev.ReportingController, ev.ReportingInstance)
		t.Logf("the Job's Event: %s %s %q, related %+v", job.Type, job.Reason, job.Message, job.Related)
	})
	t.Run("metrics", func(t *testing.T) {
		leader.waitMetric(t, "sidesync_rescuer_rescued_total", nil, 1)
		leader.waitMetric(t, "sidesync_rescuer_stuck_found_total", nil, 1)
		if got := leader.metric(t, "sidesync_rescuer_patch_errors_total", nil); got != 0 {
			t.Errorf("patch errors: %v", got)
		}
	})
	t.Run("an unknown container: one Warning, one refusal", func(t *testing.T) {
		ev := in.waitEvent(t, "on", "Pod", unknown.Name, reasonRefused)
		t.Logf("the Warning: %q", ev.Message)
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "log-shipper") || !strings.Contains(ev.Message, string(rescue.Unknown)) {
			t.Errorf("the Warning: %s %q", ev.Type, ev.Message)
		}
		leader.waitMetric(t, "sidesync_rescuer_refused_total", map[string]string{"reason": string(rescue.Unknown)}, 1)
	})
	leader.waitIdle(t, done)
	t.Run("untouched: an unlabelled namespace's pod, a pod whose app runs", func(t *testing.T) {
		for _, p := range []*corev1.Pod{unlabelled, working, unknown} {
			if got := ephemeralNames(in.getPod(t, p.Namespace, p.Name)); len(got) > 0 {
				t.Errorf("%s/%s: ephemeral containers %q", p.Namespace, p.Name, got)
			}
		}
		if got := in.events(t, "on", "Pod", working.Name, reasonRefused); len(got) > 0 {
			t.Errorf("a pod whose app runs has Warnings: %+v", got)
		}
	})
	t.Run("idempotent: another reconcile adds nothing, counts nothing, tells nothing", func(t *testing.T) {
		before := leader.reconciles(t)
		in.setStatus(t, first, corev1.PodRunning, time.Now().Add(-time.Minute), stuck, []state{{rescue.ContainerPrefix + "1", "running"}})
		in.setStatus(t, unknown, corev1.PodRunning, time.Now().Add(-time.Minute),
			[]state{{"main", "exited 0"}, {"istio-proxy", "running"}, {"log-shipper", "running"}}, nil)
		leader.waitIdle(t, before+1)
		if got := ephemeralNames(in.getPod(t, "on", first.Name)); len(got) != 1 {
			t.Errorf("ephemeral containers %q, want one", got)
		}
		if n := len(in.events(t, "on", "Pod", first.Name, reasonRescued)); n != 1 {
			t.Errorf("%d rescue Events, want 1", n)
		}
		if n := len(in.events(t, "on", "Pod", unknown.Name, reasonRefused)); n != 1 {
			t.Errorf("%d Warnings, want 1", n)
		}
		for name, want := range map[string]float64{"sidesync_rescuer_rescued_total": 1, "sidesync_rescuer_stuck_found_total": 1} {
			if got := leader.metric(t, name, nil); got != want {
				t.Errorf("%s %v, want %v", name, got, want)
			}
		}
		if got := leader.metric(t, "sidesync_rescuer_refused_total", map[string]string{"reason": string(rescue.Unknown)}); got != 1 {
			t.Errorf("refused %v, want 1", got)
		}
	})
	t.Run("rescues that leave a sidecar running: two more attempts, each after the grace, then a Warning", func(t *testing.T) {
		for attempt := 1; attempt < rescue.MaxAttempts; attempt++ {
			var ephemeral []state
			for i := 1; i <= attempt; i++ {
				ephemeral = append(ephemeral, state{rescue.ContainerPrefix + strconv.Itoa(i), "exited 0"})
			}
			ended := time.Now()
			in.setStatus(t, first, corev1.PodRunning, ended, stuck, ephemeral)
			next := rescue.ContainerPrefix + strconv.Itoa(attempt+1)
			in.waitRescued(t, "on", first.Name, next)
			leader.waitMetric(t, "sidesync_rescuer_rescued_total", nil, float64(attempt+1))
			waitFor(t, "the Event of "+next, func() (bool, string) {
				evs := in.events(t, "on", "Pod", first.Name, reasonRescued)
				for _, ev := range evs {
					if strings.Contains(ev.Message, next) {
						// Decide's status times are to the second, as the kubelet's.
						if ev.EventTime.Time.Before(ended.Truncate(time.Second).Add(time.Second)) {
							t.Errorf("%s added at %s, before the grace from the last attempt's end at %s", next, ev.EventTime.Time, ended)
						}
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d Events", len(evs))
			})
		}
		var ephemeral []state
		for i := 1; i <= rescue.MaxAttempts; i++ {
			ephemeral = append(ephemeral, state{rescue.ContainerPrefix + strconv.Itoa(i), "exited 0"})
		}
		in.setStatus(t, first, corev1.PodRunning, time.Now(), stuck, ephemeral)
		ev := in.waitEvent(t, "on", "Pod", first.Name, reasonRefused)
		if !strings.Contains(ev.Message, string(rescue.Exhausted)) {
			t.Errorf("the Warning: %q", ev.Message)
		}
		leader.waitMetric(t, "sidesync_rescuer_refused_total", map[string]string{"reason": string(rescue.Exhausted)}, 1)
		leader.waitMetric(t, "sidesync_rescuer_stuck_found_total", nil, float64(rescue.MaxAttempts))
	})
	t.Run("a namespace labelled later: its stuck pod is rescued", func(t *testing.T) {
		in.label(t, "off")
		in.waitRescued(t, "off", unlabelled.Name, rescue.ContainerPrefix+"1")
		leader.waitMetric(t, "sidesync_rescuer_rescued_total", nil, rescue.MaxAttempts+1)
	})
	t.Run("leader election: only the leader acted", func(t *testing.T) {
		if n := standby.logged("rescued"); n > 0 {
			t.Errorf("the standby rescued %d pods", n)
		}
		for _, name := range []string{"sidesync_rescuer_rescued_total", "sidesync_rescuer_stuck_found_total", "sidesync_rescuer_refused_total"} {
			if got := standby.metric(t, name, nil); got != 0 {
				t.Errorf("the standby's %s: %v", name, got)
			}
		}
	})
	t.Run("leader election: the standby takes over", func(t *testing.T) {
		if code := leader.stop(t); code != 0 {
			t.Errorf("the leader exited %d on SIGTERM", code)
		}
		waitFor(t, standby.name+" to lead", func() (bool, string) {
			return standby.logged("successfully acquired lease") > 0 && standby.logged("Starting workers") > 0, "standing by"
		})
		in.setStatus(t, working, corev1.PodRunning, time.Now(), stuck, nil)
		in.waitRescued(t, "on", working.Name, rescue.ContainerPrefix+"1")
		standby.waitMetric(t, "sidesync_rescuer_rescued_total", nil, 1)
	})
	t.Run("a rescuer with another image: the policy refuses, the rescuer reports it", func(t *testing.T) {
		standby.stop(t)
		rogue := startRescuer(t, "rescuer-rogue", "--kubeconfig="+in.kubeconfig, "--image=docker.io/library/busybox:1.37", "--grace=1s")
		pod := in.setStatus(t, in.createPod(t, "on", "refused", nil), corev1.PodRunning, time.Now(), stuck, nil)
		ev := in.waitEvent(t, "on", "Pod", pod.Name, reasonFailed)
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, rescue.PolicyMessage) {
			t.Errorf("the Warning: %s %q", ev.Type, ev.Message)
		}
		waitFor(t, "the patch errors to be counted", func() (bool, string) {
			got := rogue.metric(t, "sidesync_rescuer_patch_errors_total", map[string]string{"reason": "Forbidden"})
			return got >= 1, fmt.Sprint(got)
		})
		if got := ephemeralNames(in.getPod(t, "on", pod.Name)); len(got) > 0 {
			t.Errorf("ephemeral containers %q", got)
		}
		if got := rogue.metric(t, "sidesync_rescuer_rescued_total", nil); got != 0 {
			t.Errorf("rescued %v", got)
		}
	})
}

// label labels a namespace for the rescuer.
func (in *installed) label(t *testing.T, ns string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + rescue.NamespaceLabel + `":"` + rescue.Enabled + `"}}}`)
	if _, err := in.admin.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
