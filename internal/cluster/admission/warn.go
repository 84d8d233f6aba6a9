package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/lint"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// MaxWarning is the longest warning written: kubectl prints each on a line of its own, and the
// API server truncates long ones.
const MaxWarning = 120

// DocsAnchor is where a warning's rule is explained: the README's table of lint rules.
const DocsAnchor = "README.md#lint-rules"

// Namespaces tells the labels and annotations of a namespace (from a cache: it must not wait on
// the API server).
type Namespaces func(name string) (labels, annotations map[string]string, ok bool)

// Warner answers the validating webhook of Jobs and CronJobs: always allowed, with lint's
// findings as warnings, told whether sidesync will wrap the pods.
type Warner struct {
	Inject     inject.Options
	Namespace  string     // the injector's own
	Namespaces Namespaces // nil: namespace labels unknown (only the pod's own opt-in counts)
}

// Warn answers one request. It never denies.
func (w *Warner) Warn(ctx context.Context, req *admissionv1.AdmissionRequest) Result {
	return w.warn(ctx, req, nil)
}

// warn is Warn with the request's object already decoded (nil: decode req.Object.Raw).
func (w *Warner) warn(_ context.Context, req *admissionv1.AdmissionRequest, obj map[string]any) Result {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	res := Result{Response: resp, Outcome: Unchanged}
	if req.Kind.Group != "batch" || (req.Kind.Kind != "Job" && req.Kind.Kind != "CronJob") {
		res.Message = "not a Job or CronJob"
		return res
	}
	if obj == nil {
		var err error
		if obj, err = manifest.DecodeJSONObject(req.Object.Raw); err != nil {
			res.Outcome, res.Message = Errored, err.Error()
			return res
		}
	}
	tm := manifest.TypeMeta{APIVersion: "batch/" + req.Kind.Version, Kind: req.Kind.Kind}
	res.Name = manifest.Name(obj, tm)
	resp.Warnings, res.Message = w.warnings(req.Namespace, obj, tm)
	return res
}

// warnings are the warnings for obj, and a line for the log.
func (w *Warner) warnings(namespace string, obj map[string]any, tm manifest.TypeMeta) ([]string, string) {
	wl, err := manifest.Locate(obj, tm)
	if err != nil || wl == nil {
		return nil, fmt.Sprintf("not read: %v", err)
	}
	pod, err := manifest.ReadWorkload(wl)
	if err != nil {
		return []string{Short("", "", "the pod template is not read: "+err.Error())}, "pod template not read"
	}
	if namespace == w.Namespace || slices.Contains(SystemNamespaces, namespace) {
		return nil, "namespace never selected"
	}
	var nsLabels, nsAnn map[string]string
	if w.Namespaces != nil {
		nsLabels, nsAnn, _ = w.Namespaces(namespace)
	}
	// What the namespace asks the meshes' injectors for, the pod template is taken to ask: a
	// plain Job in an Istio-injected namespace gets Istio's sidecar.
	obj, _ = lint.InNamespace(obj, tm, nsAnn, nsLabels) // the warnings are short: they do not say what asks
	optedOut := pod.Labels[InjectLabel] == Disabled || pod.Annotations[InjectLabel] == OptOutAnnotationValue
	selected := !optedOut && (nsLabels[InjectLabel] == Enabled || pod.Labels[InjectLabel] == Enabled)
	lintObj := obj
	var out []string
	state := "not selected"
	if selected {
		applied, r, err := inject.Apply(obj, tm, w.Inject, nil)
		switch {
		case err != nil:
			out = append(out, Short("", "", "will not be wrapped: "+err.Error()))
			state = "selected, refused"
		case r.Injected && r.Reason != "" && !strings.Contains(r.Reason, "not needed"):
			why := r.Reason
			for _, l := range r.Left {
				if l.Why == "no command" {
					why = l.Container + " has no command"
				}
			}
			out = append(out, Short("", "", "will not be wrapped: "+why))
			state = "selected, not wrappable"
		default:
			lintObj = applied // lint the pod as it will run
			state = "selected, will be wrapped"
		}
	}
	objs, err := lintObjects(lintObj, tm)
	if err != nil {
		return out, state
	}
	for _, o := range objs {
		for _, f := range lint.Lint(o) {
			if f.Severity == lint.Info {
				continue
			}
			msg := lint.ShortOf(f.Rule)
			if msg == "" {
				msg = f.Message
			}
			out = append(out, Short(f.Rule, f.Container, msg))
		}
	}
	return out, state
}

// lintObjects reads obj for lint.
func lintObjects(obj map[string]any, tm manifest.TypeMeta) ([]lint.Object, error) {
	wl, err := manifest.Locate(obj, tm)
	if err != nil || wl == nil {
		return nil, err
	}
	o, err := lint.FromWorkload(wl)
	if err != nil {
		return nil, err
	}
	return []lint.Object{o}, nil
}

// Short is a finding as a warning: "sidesync: CONTAINER: MESSAGE (RULE, README.md#lint-rules)",
// at most MaxWarning bytes, the message cut first.
func Short(rule, container, message string) string {
	head := "sidesync: "
	if container != "" {
		head += short(container, 40) + ": " // a name may have 63 bytes: keep room for the message
	}
	tail := " (" + DocsAnchor + ")"
	if rule != "" {
		tail = " (" + rule + ", " + DocsAnchor + ")"
	}
	if room := MaxWarning - len(head) - len(tail); len(message) > room {
		message = short(message, max(room, 0))
	}
	return head + message + tail
}
