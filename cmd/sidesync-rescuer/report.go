package main

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// The Events the rescuer records: on the pod and its Job when it adds a rescue container; on
// the pod, once, when it must leave a pod a human should look at, or when the API server refuses
// the container.
const (
	reasonRescued = "SidecarsRescued"
	reasonRefused = "RescueRefused"
	reasonFailed  = "RescueFailed"
	// actionRescue is the events.k8s.io action of them all.
	actionRescue = "Rescue"
	// maxNote is the most an events.k8s.io Event's note may hold (1 kB).
	maxNote = 1024
)

// refused reports, once per pod and refusal, a pod left for a reason a human should see; the
// ordinary ones (an app still running, a pod that is not a Job's) are not reported. The report
// waits for the grace too: a second app may still be ending, a sidecar still restarting.
func (r *rescuer) refused(ctx context.Context, pod *corev1.Pod, d rescue.Decision, mem *memory) reconcile.Result {
	if !reported(d.Refusal) || mem.refused[d.Refusal] {
		return reconcile.Result{}
	}
	var lastEnd time.Time
	for _, a := range d.Apps {
		if a.Ended.After(lastEnd) {
			lastEnd = a.Ended
		}
	}
	if wait := r.grace - r.now().Sub(lastEnd); !lastEnd.IsZero() && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}
	}
	mem.refused[d.Refusal] = true
	r.metrics.refused.WithLabelValues(string(d.Refusal)).Inc()
	msg := "left (" + string(d.Refusal) + "): " + d.Reason
	if d.Hint != "" {
		// The hints name flags of `kubectl sidesync rescue`: the rescuer itself never signals.
		msg += "; " + d.Hint + " (kubectl sidesync rescue)"
	}
	r.events.Eventf(pod, jobOf(pod), corev1.EventTypeWarning, reasonRefused, actionRescue, "%s", note(msg))
	log.FromContext(ctx).Info("left", "refusal", string(d.Refusal), "reason", d.Reason)
	return reconcile.Result{}
}

// reported are the refusals worth a Warning: the pod looks stuck and the rescuer cannot end
// it. An app still running, a restart coming, a pod not running or not a Job's, only native
// sidecars left (the kubelet ends them) are the ordinary life of pods.
func reported(r rescue.Refusal) bool {
	switch r {
	case rescue.Unknown, rescue.NoQuit, rescue.Orchestrator, rescue.SidecarWaiting, rescue.Exhausted, rescue.SharedPID:
		return true
	}
	return false
}

// reportedRefusals are the refusals that reported accepts, for the metric's initial series.
func reportedRefusals() []rescue.Refusal {
	return []rescue.Refusal{rescue.Unknown, rescue.NoQuit, rescue.Orchestrator, rescue.SidecarWaiting, rescue.Exhausted, rescue.SharedPID}
}

// jobOf is the reference of the pod's Job as an object an Event can regard, or an untyped nil
// (a nil *ObjectReference in the interface would be taken for an object).
func jobOf(pod *corev1.Pod) runtime.Object {
	if job, ok := rescue.JobOf(pod); ok {
		return &job
	}
	return nil
}

// errorReason is the API server's reason for refusing a patch (Forbidden, Invalid, NotFound,
// ...), or "Transport" when none answered.
func errorReason(err error) string {
	if reason := apierrors.ReasonForError(err); reason != "" {
		return string(reason)
	}
	return "Transport"
}

// names are the containers' names, comma-separated.
func names(add []corev1.EphemeralContainer) string {
	var n []string
	for _, c := range add {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// note is s cut to what an Event's note may hold.
func note(s string) string {
	if len(s) <= maxNote {
		return s
	}
	n := maxNote - len("...")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
