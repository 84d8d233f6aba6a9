package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Outcome is what the webhook did with one request, as the metrics count it.
type Outcome string

// The outcomes.
const (
	Wrapped   Outcome = "wrapped"   // the pod is patched
	Unchanged Outcome = "unchanged" // nothing to do: wrapped already (a re-invocation), or not a pod sidesync selects
	Skipped   Outcome = "skipped"   // selected, admitted unwrapped, annotated with why
	Denied    Outcome = "denied"    // a pod that opted in itself and cannot be wrapped
	Errored   Outcome = "error"     // a request the webhook cannot read
)

// Skip reasons: bounded, as they label a metric.
const (
	ReasonNoCommand = "no-command" // an app without a command, and no registry lookup (or it failed)
	ReasonRegistry  = "registry"   // the registry did not answer in time, or refused
	ReasonNotNeeded = "not-needed" // every sidecar is native with a startup probe
	ReasonInvalid   = "invalid"    // inject refused the pod (a name sidesync owns used by something else, ...)
	ReasonExcluded  = "excluded"   // a namespace or pod that is never selected (checked again here)
)

// Resolver reads the ENTRYPOINT and CMD of images from their registry, for the pod's
// pull secrets; nil means no lookups. Its error for an image says why it was not read.
type Resolver interface {
	Resolve(ctx context.Context, namespace string, pullSecrets []string, serviceAccount string, images []string) (inject.Entrypoints, map[string]error)
}

// Recorder tells the owner of a skipped or denied pod why, as an Event. It must not block.
type Recorder func(namespace string, owner metav1.OwnerReference, reason, message string)

// Mutator answers the pod webhook.
type Mutator struct {
	Inject inject.Options
	// Native chooses Inject.Native per pod, recorded in NativeAnnotation; nil: Inject.Native as
	// it is, unrecorded.
	Native   *NativeChooser
	Resolver Resolver // nil: no registry lookups
	Record   Recorder // nil: no Events
	// Namespace is the injector's own: never mutated.
	Namespace string
}

// Result is the answer to one request, with what the metrics and the log need.
type Result struct {
	Response *admissionv1.AdmissionResponse
	Outcome  Outcome
	Reason   string // for Skipped, Denied: one of the Reason constants
	Message  string // for the log
	Ops      int
	Lookups  int           // images read from a registry
	Name     string        // the object's name for the log ("" when not read): a pod at creation often has only a generateName, "report-*"
	Native   *NativeChoice // nil when the Mutator has no NativeChooser, or the pod was not considered
}

// Mutate answers one AdmissionRequest for a pod. It never fails: a request it cannot read is
// answered with an error status (the API server then applies the webhook's failurePolicy).
func (m *Mutator) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) Result {
	return m.mutate(ctx, req, nil)
}

// mutate is Mutate with the request's object already decoded (nil: decode req.Object.Raw).
func (m *Mutator) mutate(ctx context.Context, req *admissionv1.AdmissionRequest, obj map[string]any) Result {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	res := Result{Response: resp, Outcome: Unchanged}
	if req.Kind.Kind != "Pod" || req.Kind.Group != "" || req.Operation != admissionv1.Create || req.SubResource != "" {
		res.Message = fmt.Sprintf("%s %s/%s: not a pod's creation", req.Operation, req.Kind.Kind, req.SubResource)
		return res
	}
	pod, err := decodePod(req.Object.Raw, obj)
	if err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: 400, Message: "sidesync: " + err.Error()}
		res.Outcome, res.Message = Errored, err.Error()
		return res
	}
	res.Name = pod.Name
	explicit := pod.Labels[InjectLabel] == Enabled
	if why := m.excluded(req.Namespace, pod); why != "" || !explicit && pod.RestartPolicy == string(restart.Always) {
		if why == "" {
			why = "restartPolicy Always: the pod never runs to completion (a pod opts in by itself with the label " + InjectLabel + "=" + Enabled + ")"
		}
		res.Outcome, res.Reason, res.Message = Skipped, ReasonExcluded, why
		return res
	}
	opts := m.Inject
	// Native here converts the sidecars the pod holds; it must not ask meshes for native sidecars
	// by their annotations: their webhooks have run before this one and never see what it adds
	// (docs/KUBERNETES.md 9).
	if m.Native != nil {
		choice := m.Native.Choose(pod.obj)
		opts.Native, res.Native = choice.Native, &choice
	}
	var eps inject.Entrypoints
	var lookupErrs map[string]error
	if m.Resolver != nil {
		images, err := inject.Images(pod.obj, manifest.TypeMeta{APIVersion: "v1", Kind: "Pod"}, opts)
		if err == nil && len(images) > 0 {
			eps, lookupErrs = m.Resolver.Resolve(ctx, req.Namespace, pod.PullSecrets, pod.ServiceAccount, images)
			res.Lookups = len(images)
		}
	}
	if err := ctx.Err(); err != nil { // the API server gave up waiting
		res.Outcome, res.Message = Errored, "the request's time ran out: "+err.Error()
		return res
	}
	ops, r, err := inject.PatchObject(pod.obj, manifest.TypeMeta{APIVersion: "v1", Kind: "Pod"}, opts, eps)
	switch {
	case err != nil:
		return m.skip(req, pod, explicit, res, ReasonInvalid, err.Error())
	case len(ops) > 0:
		if _, had := pod.Annotations[SkippedAnnotation]; had {
			ops = append(ops, inject.Op{Op: "remove", Path: "/metadata/annotations/" + inject.EscapePointer(SkippedAnnotation)})
		}
		if res.Native != nil && pod.Annotations[NativeAnnotation] != res.Native.Annotation() {
			ops = append(ops, nativeOp(pod, ops, res.Native.Annotation()))
		}
		return patched(res, ops, fmt.Sprintf("wrapped %s", strings.Join(slices.Concat(r.Wrapped, r.Updated), ",")))
	case r.Reason != "" && r.Injected && convertedBefore(pod, res.Native, r.Reason):
		res.Message = "converted at an earlier invocation"
		return res
	case r.Reason != "" && r.Injected:
		reason, msg := ReasonNoCommand, r.Reason
		if len(r.Warnings) > 0 {
			msg = r.Warnings[0] // what to add: it names the container and the image
		}
		switch {
		case len(lookupErrs) > 0:
			reason = ReasonRegistry
			msg = "the registry did not tell the image's ENTRYPOINT and CMD: " + lookupMessage(lookupErrs)
		case strings.Contains(r.Reason, "not needed"):
			reason, msg = ReasonNotNeeded, r.Reason
		}
		return m.skip(req, pod, explicit && reason != ReasonNotNeeded, res, reason, msg)
	}
	res.Message = "nothing to change"
	return res
}

// convertedBefore reports whether this webhook converted the pod's sidecars at an earlier
// invocation (reinvocationPolicy IfNeeded), so that it now needs nothing: the pod carries the
// native choice, made the same way, and no skipped annotation, which a pod that was native as
// submitted got at its first invocation.
func convertedBefore(pod *podInfo, choice *NativeChoice, reason string) bool {
	_, skipped := pod.Annotations[SkippedAnnotation]
	return choice != nil && choice.Native && !skipped && strings.Contains(reason, "not needed") &&
		pod.Annotations[NativeAnnotation] == choice.Annotation()
}

// nativeOp writes NativeAnnotation: into the pod's annotations, there before or added by inject's
// ops when it wrapped an app; as the whole map when neither (a pod whose sidecars inject only
// converted has none written by inject, and the API server refuses a patch into a missing map).
func nativeOp(pod *podInfo, ops []inject.Op, value string) inject.Op {
	made := slices.ContainsFunc(ops, func(o inject.Op) bool { return o.Op == "add" && o.Path == "/metadata/annotations" })
	if !pod.hasAnnotations && !made {
		return inject.Op{Op: "add", Path: "/metadata/annotations", Value: map[string]any{NativeAnnotation: value}}
	}
	return inject.Op{Op: "add", Path: "/metadata/annotations/" + inject.EscapePointer(NativeAnnotation), Value: value}
}

// skip admits the pod unwrapped with the skipped annotation, or denies it when it opted in
// itself, and tells its owner.
func (m *Mutator) skip(req *admissionv1.AdmissionRequest, pod *podInfo, deny bool, res Result, reason, message string) Result {
	if m.Record != nil && (req.DryRun == nil || !*req.DryRun) {
		if owner, ok := pod.controller(); ok {
			m.Record(req.Namespace, owner, "SidesyncSkipped", short(message, 1000))
		}
	}
	res.Reason, res.Message = reason, message
	if deny {
		res.Outcome = Denied
		res.Response.Allowed = false
		res.Response.Result = &metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("sidesync: the pod asks to be wrapped (label %s=%s) and cannot be: %s", InjectLabel, Enabled, message)}
		return res
	}
	res.Outcome = Skipped
	want := map[string]string{SkippedAnnotation: reason + ": " + message}
	if res.Native != nil {
		want[NativeAnnotation] = res.Native.Annotation()
	}
	var ops []inject.Op
	if !pod.hasAnnotations {
		all := map[string]any{}
		for k, v := range want {
			all[k] = v
		}
		ops = []inject.Op{{Op: "add", Path: "/metadata/annotations", Value: all}}
	} else {
		for _, k := range []string{SkippedAnnotation, NativeAnnotation} {
			if v, ok := want[k]; ok && pod.Annotations[k] != v {
				ops = append(ops, inject.Op{Op: "add", Path: "/metadata/annotations/" + inject.EscapePointer(k), Value: v})
			}
		}
	}
	if len(ops) == 0 {
		return res // annotated at an earlier invocation
	}
	res.Ops = len(ops)
	res.Response.Patch = mustJSON(ops)
	res.Response.PatchType = ptr(admissionv1.PatchTypeJSONPatch)
	return res
}

func patched(res Result, ops []inject.Op, message string) Result {
	res.Outcome, res.Message, res.Ops = Wrapped, message, len(ops)
	res.Response.Patch = mustJSON(ops)
	res.Response.PatchType = ptr(admissionv1.PatchTypeJSONPatch)
	return res
}

// excluded says why a pod is never mutated, whatever the configuration selected: the
// configuration is the first guard, this the second (a hand-edited configuration, a
// namespace-wide selector without its exclusions).
func (m *Mutator) excluded(namespace string, pod *podInfo) string {
	switch {
	case slices.Contains(SystemNamespaces, namespace) || namespace == m.Namespace:
		return "namespace " + namespace + " is never selected"
	case pod.Labels[InjectLabel] == Disabled || pod.Annotations[InjectLabel] == OptOutAnnotationValue:
		return "the pod opted out"
	case pod.Annotations[MirrorAnnotation] != "":
		return "a mirror pod"
	}
	return ""
}

// lookupMessage is the registry errors in one line, by image.
func lookupMessage(errs map[string]error) string {
	var parts []string
	for img, err := range errs {
		parts = append(parts, img+": "+err.Error())
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// podInfo is what the webhook reads of a pod besides what inject reads.
type podInfo struct {
	obj            map[string]any
	Labels         map[string]string
	Annotations    map[string]string
	hasAnnotations bool
	PullSecrets    []string
	ServiceAccount string
	Name           string // the name, or the generateName and "*"
	RestartPolicy  string // "" when the pod says nothing (the API server defaults it to Always first)
	owners         []metav1.OwnerReference
}

func decodePod(raw []byte, obj map[string]any) (*podInfo, error) {
	if obj == nil {
		var err error
		if obj, err = manifest.DecodeJSONObject(raw); err != nil {
			return nil, err
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	info := &podInfo{obj: obj, Labels: stringMap(meta, "labels"), Annotations: stringMap(meta, "annotations"),
		ServiceAccount: manifest.Str(spec, "serviceAccountName"), RestartPolicy: manifest.Str(spec, "restartPolicy"),
		Name: manifest.Str(meta, "name")}
	if info.Name == "" {
		info.Name = manifest.Str(meta, "generateName") + "*"
	}
	_, info.hasAnnotations = meta["annotations"].(map[string]any)
	secrets, _ := spec["imagePullSecrets"].([]any)
	for _, s := range secrets {
		if m, ok := s.(map[string]any); ok && manifest.Str(m, "name") != "" {
			info.PullSecrets = append(info.PullSecrets, manifest.Str(m, "name"))
		}
	}
	owners, _ := meta["ownerReferences"].([]any)
	for _, o := range owners {
		m, ok := o.(map[string]any)
		if !ok {
			continue
		}
		ref := metav1.OwnerReference{APIVersion: manifest.Str(m, "apiVersion"), Kind: manifest.Str(m, "kind"),
			Name: manifest.Str(m, "name"), UID: types.UID(manifest.Str(m, "uid"))}
		if c, ok := m["controller"].(bool); ok {
			ref.Controller = &c
		}
		info.owners = append(info.owners, ref)
	}
	return info, nil
}

// stringMap is m[key] as a map of strings: the values that are strings (a label or annotation
// value is always one).
func stringMap(m map[string]any, key string) map[string]string {
	src, _ := m[key].(map[string]any)
	out := make(map[string]string, len(src))
	for k, v := range src {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// controller is the pod's controlling owner (its Job), if it has one.
func (p *podInfo) controller() (metav1.OwnerReference, bool) {
	for _, o := range p.owners {
		if o.Controller != nil && *o.Controller {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // ops are strings, lists and maps of them
	}
	return b
}

// short cuts s to n bytes at most, on a rune boundary.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len("…") {
		return ""
	}
	cut := n - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
