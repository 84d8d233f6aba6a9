package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// controllerName names the controller in the logs and in controller-runtime's metrics.
const controllerName = "rescuer"

// rescuer is the reconciler of pods: it asks rescue.Decide of each and adds the ephemeral
// containers of a Stuck one, after the grace. It never signals: Options.Signal stays empty.
type rescuer struct {
	client  client.Client // the manager's: reads from the cache, writes to the API server
	events  recorder.EventRecorder
	metrics *metrics
	image   string
	grace   time.Duration
	now     func() time.Time

	mu   sync.Mutex
	pods map[types.NamespacedName]*memory
}

// memory is what the rescuer keeps of a pod between reconciles, so that it counts and reports
// each thing once, and so that a cache that has not yet seen its own patch does not make it
// patch again. It goes when the pod leaves the cache (ended, deleted). Only the reconcile of
// its pod touches its fields, and controller-runtime never reconciles one key twice at once.
// A new leader starts without it: it reports a pod's refusal once more.
type memory struct {
	uid     types.UID
	found   int // the last attempt counted as stuck
	rescued int // the last attempt this process added
	refused map[rescue.Refusal]bool
	failed  map[string]bool // the patch errors reported, by reason
}

// setup registers the controller: pods (the cache holds only running pods of Jobs, see
// cacheOptions), filtered at once to those of labelled namespaces, and the labelled namespaces,
// so that a namespace labelled later has its pods looked at.
func (r *rescuer) setup(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(controllerName).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return r.selected(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return r.selected(e.ObjectNew) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return r.remembers(client.ObjectKeyFromObject(e.Object)) },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.podsOf), builder.WithPredicates(predicate.Funcs{
			// The cache holds only labelled namespaces: one enters it (a Create) when labelled.
			CreateFunc:  func(e event.CreateEvent) bool { return enabled(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return enabled(e.ObjectNew) && !enabled(e.ObjectOld) },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(r)
}

// enabled reports whether a namespace opts its pods in.
func enabled(ns client.Object) bool { return ns.GetLabels()[rescue.NamespaceLabel] == rescue.Enabled }

// selected reports whether a pod is one the rescuer looks at: a Job controls it and its
// namespace opts in. Everything else is dropped here, before the queue.
func (r *rescuer) selected(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	if _, ok := rescue.JobOf(pod); !ok {
		return false
	}
	// The cache answers at once but while the namespaces' first list is read; bounded, so
	// that an event handler never hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.namespaceEnabled(ctx, pod.Namespace)
}

func (r *rescuer) namespaceEnabled(ctx context.Context, name string) bool {
	var ns corev1.Namespace
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, &ns); err != nil {
		return false
	}
	return enabled(&ns)
}

// podsOf are the cached pods of a namespace, to reconcile when it is labelled.
func (r *rescuer) podsOf(ctx context.Context, ns client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(ns.GetName())); err != nil {
		log.FromContext(ctx).Error(err, "listing the pods of a labelled namespace", "namespace", ns.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(pods.Items))
	for i := range pods.Items {
		if _, ok := rescue.JobOf(&pods.Items[i]); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
	}
	return reqs
}

// Reconcile decides for one pod and acts on the decision.
func (r *rescuer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := r.client.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			// Ended (the cache holds running pods only) or deleted.
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !r.namespaceEnabled(ctx, pod.Namespace) {
		return reconcile.Result{}, nil
	}
	d := rescue.Decide(&pod, rescue.Options{Image: r.image, Now: r.now(), Grace: r.grace})
	mem := r.memory(req.NamespacedName, pod.UID)
	switch d.Verdict {
	case rescue.Grace:
		return reconcile.Result{RequeueAfter: d.Waited}, nil
	case rescue.Stuck:
		return reconcile.Result{}, r.rescue(ctx, &pod, d, mem)
	case rescue.Left:
		return r.refused(ctx, &pod, d, mem), nil
	}
	// InFlight: the rescue container's end changes the pod's status, which brings it back.
	return reconcile.Result{}, nil
}

// rescue adds the decision's containers and records it.
func (r *rescuer) rescue(ctx context.Context, pod *corev1.Pod, d rescue.Decision, mem *memory) error {
	logger := log.FromContext(ctx)
	if mem.rescued >= d.Attempt {
		// This process added this attempt already; the cache has not caught up with it yet.
		return nil
	}
	if mem.found < d.Attempt {
		mem.found = d.Attempt
		r.metrics.stuck.Inc()
	}
	patch, err := rescue.Patch(d.Add)
	if err != nil {
		return fmt.Errorf("the patch of %s: %w", d.Key(), err)
	}
	// The patch's answer is written into the object: never into the cache's.
	target := pod.DeepCopy()
	err = r.client.SubResource("ephemeralcontainers").Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, patch),
		&client.SubResourcePatchOptions{PatchOptions: client.PatchOptions{FieldManager: fieldManager}})
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile: its deletion brings it back, to be forgotten.
		return nil
	}
	if err != nil {
		reason := errorReason(err)
		r.metrics.patchErrors.WithLabelValues(reason).Inc()
		if !mem.failed[reason] {
			mem.failed[reason] = true
			r.events.Eventf(pod, jobOf(pod), corev1.EventTypeWarning, reasonFailed, actionRescue, "%s",
				note("adding "+names(d.Add)+" was refused: "+err.Error()+" (the plan: "+d.Plan()+")"))
		}
		// Returned, so that the queue retries with its backoff: a refusal may be passing (a
		// webhook down, a timeout).
		return fmt.Errorf("adding %s to %s: %w", names(d.Add), d.Key(), err)
	}
	mem.rescued = d.Attempt
	r.metrics.rescued.Inc()
	msg := d.Reason + "; added " + names(d.Add) + " to " + d.Plan()
	if d.Hint != "" {
		// A sidecar whose quit endpoint the pod cannot show to be on: what to do if the quit fails.
		msg += "; " + d.Hint + " (kubectl sidesync rescue)"
	}
	job := jobOf(pod)
	if job != nil {
		// The Job's reference is the pod's owner reference: no read of the Job is needed.
		r.events.Eventf(job, pod, corev1.EventTypeNormal, reasonRescued, actionRescue, "%s", note("pod "+pod.Name+": "+msg))
	}
	r.events.Eventf(pod, job, corev1.EventTypeNormal, reasonRescued, actionRescue, "%s", note(msg))
	logger.Info("rescued", "attempt", d.Attempt, "plan", d.Plan(), "reason", d.Reason)
	return nil
}

// memory is the pod's memory, new for a pod not seen before or seen under another UID.
func (r *rescuer) memory(key types.NamespacedName, uid types.UID) *memory {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.pods[key]
	if m == nil || m.uid != uid {
		m = &memory{uid: uid, refused: map[rescue.Refusal]bool{}, failed: map[string]bool{}}
		r.pods[key] = m
	}
	return m
}

func (r *rescuer) remembers(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[key] != nil
}

func (r *rescuer) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, key)
}
