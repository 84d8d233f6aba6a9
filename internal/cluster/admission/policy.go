package admission

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Names of the webhook-less mode's objects: a MutatingAdmissionPolicy per webhook of
// MutatingWebhookConfiguration (ExplicitWebhook fails closed, NamespaceWebhook open), each with a
// binding of the same name, and the backstop's ValidatingAdmissionPolicy with its bindings.
const (
	// BackstopPolicy warns about a selected pod admitted unwrapped.
	BackstopPolicy = "backstop.pods.sidesync.io"
)

// BackstopMessage begins the warning of the backstop.
const BackstopMessage = "sidesync: this pod was admitted without sidesync"

// selection is one of the ways a pod is selected: a webhook of MutatingWebhookConfiguration,
// read from it so that the policies select exactly as the webhooks do.
type selection struct {
	name        string
	failure     admissionregistrationv1.FailurePolicyType
	reinvoke    admissionregistrationv1.ReinvocationPolicyType
	ns, objects *metav1.LabelSelector
	conditions  []admissionregistrationv1.MatchCondition
}

func (o Options) selections() []selection {
	var out []selection
	for _, h := range MutatingWebhookConfiguration(o).Webhooks {
		out = append(out, selection{name: h.Name, failure: *h.FailurePolicy, reinvoke: *h.ReinvocationPolicy,
			ns: h.NamespaceSelector, objects: h.ObjectSelector, conditions: h.MatchConditions})
	}
	return out
}

// selectorCEL is a label selector over the pod's labels as CEL.
func selectorCEL(sel *metav1.LabelSelector) (string, error) {
	if sel == nil {
		return "true", nil
	}
	labels := "(has(object.metadata.labels) ? object.metadata.labels : {})"
	var conds []string
	for _, k := range sortedKeys(anyMap(sel.MatchLabels)) {
		conds = append(conds, fmt.Sprintf("(%s in %s && %s[%s] == %s)", q(k), labels, labels, q(k), q(sel.MatchLabels[k])))
	}
	for _, e := range sel.MatchExpressions {
		in := fmt.Sprintf("(%s in %s && %s[%s] in %s)", q(e.Key), labels, labels, q(e.Key), celList(e.Values))
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			conds = append(conds, in)
		case metav1.LabelSelectorOpNotIn:
			conds = append(conds, "!"+in)
		case metav1.LabelSelectorOpExists:
			conds = append(conds, fmt.Sprintf("(%s in %s)", q(e.Key), labels))
		case metav1.LabelSelectorOpDoesNotExist:
			conds = append(conds, fmt.Sprintf("!(%s in %s)", q(e.Key), labels))
		default:
			return "", fmt.Errorf("label selector operator %q", e.Operator)
		}
	}
	return and(conds), nil
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// podCreates are the requests the policies see: the creation of a Pod.
func podCreates() *admissionregistrationv1.MatchResources {
	equivalent := admissionregistrationv1.Equivalent
	return &admissionregistrationv1.MatchResources{
		MatchPolicy: &equivalent,
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr(admissionregistrationv1.NamespacedScope)},
		}}},
	}
}

// Injector is what wraps the pods that the backstop watches: its warning says what to do when
// a pod was admitted unwrapped, which depends on the install.
type Injector int

const (
	// ByWebhook is the sidesync injector, the webhook (the chart; kubectl sidesync policy
	// --backstop-only beside it). It tells a skipped pod's Job why with an Event.
	ByWebhook Injector = iota
	// ByPolicy is the MutatingAdmissionPolicies of Policy, with no webhook (kubectl sidesync
	// policy). No injector runs that could be waited for, and a policy sends no Events.
	ByPolicy
)

// backstopCEL is the backstop's test of a selected pod (CEL, true when no warning is due) and
// its warning (a messageExpression). Beside the webhook, a pod with SkippedAnnotation has had
// its Event and is let be, and one with neither annotation met an injector that did not
// answer. Without it, the skipped annotation is the only word the user gets, so the warning
// quotes it (but for ReasonNotNeeded: nothing is wrong with such a pod), and a pod with
// neither annotation met no policy: one not installed, not loaded yet, or whose evaluation
// failed (the namespace-wide policy fails open).
func (by Injector) backstopCEL() (admitted, message string) {
	ann := "object.metadata.annotations"
	has := func(key string) string { return q(key) + " in " + ann }
	neither := fmt.Sprintf("%s (neither %s nor %s): its namespace or its own label %s=%s selects it, and ", BackstopMessage, contract.InjectedAnnotation, SkippedAnnotation, InjectLabel, Enabled)
	optOut := fmt.Sprintf(", or label it %s=%s", InjectLabel, Disabled)
	if by == ByWebhook {
		return fmt.Sprintf("(has(%s) && (%s || %s))", ann, has(contract.InjectedAnnotation), has(SkippedAnnotation)),
			q(neither + "the sidesync injector did not answer; recreate it once the injector runs" + optOut)
	}
	skipped := fmt.Sprintf("%s[%s]", ann, q(SkippedAnnotation))
	return fmt.Sprintf("(has(%s) && (%s || (%s && %s.startsWith(%s))))", ann, has(contract.InjectedAnnotation), has(SkippedAnnotation), skipped, q(ReasonNotNeeded+":")),
		fmt.Sprintf("has(%s) && %s ? %s + %s : %s", ann, has(SkippedAnnotation), q(BackstopMessage+", "+SkippedAnnotation+": "), skipped,
			q(neither+"sidesync's MutatingAdmissionPolicy did not act on it (not installed, not loaded yet, or its evaluation failed); "+
				"recreate it once `kubectl sidesync policy | kubectl apply -f -` is in place"+optOut))
}

// Backstop is the ValidatingAdmissionPolicy that warns (and records in the audit log) when a
// pod that the webhooks select (its namespace's label InjectLabel=Enabled, or its own; the
// webhooks' match conditions: not opted out, no mirror, no Windows pod, and what else each
// webhook asks) is admitted unwrapped: with neither contract.InjectedAnnotation nor
// SkippedAnnotation (the namespace webhook and policy fail open, so a pod can be created
// unwrapped while the injector is down), and, where the policies of Policy wrap pods (by), with
// SkippedAnnotation too. The warning says what to do for the install by names. It never denies.
// One binding per webhook, with its selectors; the policy's expression tells which webhook's
// object selector and conditions apply.
func Backstop(o Options, by Injector) (*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	ignore := admissionregistrationv1.Ignore
	sels := o.selections()
	var conds []admissionregistrationv1.MatchCondition
	var selected []string
	for _, c := range podMatchConditions() {
		shared := true
		for _, s := range sels {
			shared = shared && slices.Contains(s.conditions, c)
		}
		if shared {
			conds = append(conds, c)
		}
	}
	for _, s := range sels {
		objects, err := selectorCEL(s.objects)
		if err != nil {
			panic(err) // the webhooks' selectors are this package's own
		}
		terms := []string{objects}
		for _, c := range s.conditions {
			if !slices.Contains(conds, c) {
				terms = append(terms, "("+c.Expression+")")
			}
		}
		selected = append(selected, and(terms))
	}
	admitted, message := by.backstopCEL()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: BackstopPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &ignore,
			MatchConstraints: podCreates(),
			MatchConditions:  conds,
			Variables:        []admissionregistrationv1.Variable{{Name: "selected", Expression: or(selected)}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "!variables.selected || " + admitted,
				MessageExpression: message,
				Reason:            ptr(metav1.StatusReasonInvalid),
			}},
		},
	}
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, s := range sels {
		bindings = append(bindings, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: BackstopPolicy + "." + s.name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        BackstopPolicy,
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: s.ns, ObjectSelector: s.objects},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
			},
		})
	}
	return policy, bindings
}

// PolicyOptions say how the MutatingAdmissionPolicy injects: as inject.Apply with
// inject.Options{Version, Image, Delivery} and nothing else.
type PolicyOptions struct {
	Version  string
	Image    string
	Delivery inject.Delivery
	// Native is inject.Options.Native (kubectl sidesync policy --native: auto is native, see
	// docs/POLICY.md): a pod that it may change otherwise (nativeMay) is left alone with
	// ReasonPolicyCannot, every other pod made as inject.Apply with Native makes it.
	Native bool
	// Namespace is never selected (the injector's, if one runs too).
	Namespace string
}

// Policy is the webhook-less injector: a MutatingAdmissionPolicy (JSON Patch, CEL) per webhook of
// MutatingWebhookConfiguration, selecting as it does, with its binding. For a selected pod whose
// app containers all have a command, it makes the pod inject.Apply makes with
// inject.Options{Version, Image, Delivery}; every other pod (an app without a command, an app
// wrapped before, names of sidesync's used by the pod, an app that sets sidesync's restart
// variables itself, a pod whose sidecars are all native with startup probes) it leaves as it is, as
// Apply's all-or-none rule does for pods it cannot wrap whole. The rules are rendered in CEL beside
// their Go, and only assembled here: the sidecars are sorted and the native-only rule decided by
// catalog.SortCEL, the found sidecars written by config.FormatSidecarCEL, the restart rules by
// restart.FormatRulesCEL, a container that runs sidesync already told by contract.RunsSidesyncCEL,
// and inject's own rules by inject's CEL: its names and paths used by the pod (inject.ClashCEL), an
// app wrapped before (inject.WrappedCEL) or without a command (inject.HasCommandCEL), its variables
// set by an app (inject.OwnedEnvCEL). The values (flags, volumes, mounts, the install container,
// annotations) are read from what inject.Apply makes of a probe pod, so that they cannot drift from
// inject's. A selected pod it leaves alone gets SkippedAnnotation saying why, with the webhook's
// reason where the webhook would skip it too (skipCEL).
func Policy(o PolicyOptions) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	spec, err := policySpec(o)
	if err != nil {
		return nil, nil, err
	}
	var policies []*admissionregistrationv1.MutatingAdmissionPolicy
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, s := range (Options{Namespace: o.Namespace}).selections() {
		fail := s.failure
		p := &admissionregistrationv1.MutatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: s.name},
			Spec:       *spec.DeepCopy(),
		}
		p.Spec.FailurePolicy = &fail
		p.Spec.ReinvocationPolicy = s.reinvoke
		p.Spec.MatchConditions = append(slices.Clone(s.conditions), p.Spec.MatchConditions...)
		policies = append(policies, p)
		bindings = append(bindings, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: s.name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
				PolicyName:     s.name,
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: s.ns, ObjectSelector: s.objects},
			},
		})
	}
	return policies, bindings, nil
}

// probe is what inject.Apply makes of a pod of n apps with commands: the values the policy
// writes.
type probe struct {
	flags    []string // the wrapper's flags before "--", of the first app
	mounts   []any    // the first app's volumeMounts (the probe's apps have none of their own)
	volumes  []any
	inits    []any // the install container, or none
	injected string
}

// probeName names the probe's apps; a flag that ends with "=" and an app's name takes the name.
const probeName = "sidesync-probe-app"

func probeApply(o PolicyOptions, n int) (*probe, error) {
	var cs []any
	for i := range n {
		cs = append(cs, map[string]any{"name": fmt.Sprintf("%s%d", probeName, i), "image": "probe", "command": []any{"probe"}})
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "probe"}, "spec": map[string]any{"containers": cs}}
	out, r, err := inject.Apply(pod, manifest.TypeMeta{}, inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery, Native: o.Native}, nil)
	if err != nil {
		return nil, err
	}
	if len(r.Wrapped) != n {
		return nil, fmt.Errorf("inject wrapped %d of the probe's %d apps: %s", len(r.Wrapped), n, r)
	}
	spec, _ := out["spec"].(map[string]any)
	first, _ := spec["containers"].([]any)[0].(map[string]any)
	args, _ := first["args"].([]any)
	p := &probe{mounts: asList(first["volumeMounts"]), volumes: asList(spec["volumes"]), inits: asList(spec["initContainers"])}
	for _, a := range args {
		if a == "--" {
			break
		}
		s, _ := a.(string)
		p.flags = append(p.flags, s)
	}
	ann, _ := out["metadata"].(map[string]any)["annotations"].(map[string]any)
	p.injected, _ = ann[contract.InjectedAnnotation].(string)
	if p.injected == "" || len(p.flags) == len(args) {
		return nil, errors.New("inject's probe pod has no injected annotation or no \"--\"")
	}
	return p, nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

// flagsCEL is the probe's flags as a CEL list, the first app's name replaced by the container's.
func flagsCEL(flags []string, c string) string {
	name := probeName + "0"
	var words []string
	for _, f := range flags {
		if prefix, ok := strings.CutSuffix(f, "="+name); ok {
			words = append(words, q(prefix+"=")+" + "+c+".name")
			continue
		}
		words = append(words, q(f))
	}
	return "[" + strings.Join(words, ", ") + "]"
}

// policySpec is the spec both policies share.
func policySpec(o PolicyOptions) (*admissionregistrationv1.MutatingAdmissionPolicySpec, error) {
	one, err := probeApply(o, 1)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	two, err := probeApply(o, 2)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	k, err := catalog.NewSortCEL(policyPod)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	notNeeded, err := notNeededMessage(o)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	vars := []admissionregistrationv1.Variable{ // ann and lbl: what policyPod names
		{Name: "ann", Expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"},
		{Name: "lbl", Expression: "has(object.metadata.labels) ? object.metadata.labels : {}"},
	}
	for _, v := range k.Variables() {
		vars = append(vars, admissionregistrationv1.Variable{Name: v.Name, Expression: v.Expression})
	}
	vars = append(vars, []admissionregistrationv1.Variable{
		{Name: "inits", Expression: "has(object.spec.initContainers) ? object.spec.initContainers : []"},
		{Name: "natives", Expression: "variables.inits.filter(c, " + manifest.NativeCEL("c") + ")"},
		{Name: "nativeEnt", Expression: "variables.natives.map(c, " + k.Claim("c") + ")"},
		{Name: "ent", Expression: "object.spec.containers.map(c, " + k.Claim("c") + ")"},
		{Name: "apps", Expression: "object.spec.containers.transformList(i, c, variables.ent[i] == -1, c)"},
		{Name: "wrapAt", Expression: "object.spec.containers.transformList(i, c, variables.ent[i] == -1 && !" + contract.RunsSidesyncCEL("c") + ")"},
		{Name: "wrapped", Expression: "object.spec.containers.transformList(i, c, variables.wrapAt[i], c.name)"},
		{Name: "foundAll", Expression: "(variables.natives.transformList(i, c, " + foundCEL(k, "c", "variables.nativeEnt[i]", true) + ") + " +
			"object.spec.containers.transformList(i, c, " + foundCEL(k, "c", "variables.ent[i]", false) + ")).filter(s, s != \"\")"},
		{Name: "found", Expression: "variables.foundAll.transformList(i, s, variables.foundAll.indexOf(s) == i, s)"},
		{Name: "nativeOnly", Expression: k.NativeOnly("variables.natives", "variables.ent", "variables.nativeEnt")},
		// clash is inject's rule over all the apps (a path below /sidesync counts in an app wrapped
		// before too, as in Apply); ok leaves a pod with such an app alone in any case.
		{Name: "clash", Expression: inject.ClashCEL("object.spec", "variables.apps")},
	}...)
	okNative := ""
	if o.Native {
		vars = append(vars, admissionregistrationv1.Variable{Name: "nativeMay", Expression: nativeMayCEL(k)})
		okNative = "!variables.nativeMay && "
	}
	vars = append(vars, []admissionregistrationv1.Variable{
		{Name: "ok", Expression: "size(variables.wrapped) > 0 && !variables.nativeOnly && !variables.clash && " + okNative +
			"variables.apps.all(c, " + inject.HasCommandCEL("c") + " && !" + inject.WrappedCEL("c") + " && " +
			"(!has(c.restartPolicyRules) || " + restart.PlainRulesCEL("c.restartPolicyRules") + ") && " +
			"!(has(c.env) && c.env.exists(e, " + inject.OwnedEnvCEL("e") + ")))"},
		// skip is why a pod left alone is, as the webhook's SkippedAnnotation says it (skipCEL).
		{Name: "skip", Expression: skipCEL(notNeeded, o.Native)},
	}...)

	// The API server hands the policy the pod's lists with what earlier admission plugins added
	// (the ServiceAccount's volume and mounts) as values CEL cannot write back into a patch
	// value: the patches never copy an existing entry, they append to the lists, or add them
	// whole when the pod has none.
	many := "size(variables.wrapped) > 1"
	each := func(cond, path, value string) string {
		return fmt.Sprintf(`object.spec.containers.transformList(i, c, variables.ok && variables.wrapAt[i] && %s, JSONPatch{op: "add", path: "/spec/containers/" + string(i) + %s, value: %s})`, cond, q(path), value)
	}
	single := func(cond, op, path, value string) string {
		v := ""
		if value != "" {
			v = ", value: " + value
		}
		return fmt.Sprintf(`[JSONPatch{op: %q, path: %s%s}].filter(x, variables.ok && %s)`, op, path, v, cond)
	}
	// appended adds items (their CEL, each with the condition under which it is there) to the
	// list at path: one "-" each when the list is there (has), else the whole list.
	appended := func(perItem func(cond, path, value string) string, has, path string, items, conds []string) []string {
		var out []string
		var whole []string
		for i, it := range items {
			out = append(out, perItem(has+" && "+conds[i], path+"/-", it))
			whole = append(whole, fmt.Sprintf("[%s].filter(x, %s)", it, conds[i]))
		}
		return append(out, perItem("!"+has, path, strings.Join(whole, " + ")))
	}
	cels := func(l []any, typ string) ([]string, error) {
		var out []string
		for _, e := range l {
			v, err := valueCEL(e, typ)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	// manyOnly: the items of two's list beyond one's are there only with several wrapped apps.
	manyOnly := func(one, two []any) ([]string, error) {
		if len(two) < len(one) || !reflect.DeepEqual(two[:len(one)], one) {
			return nil, errors.New("policy: inject's volumes or mounts for several apps do not begin with those for one")
		}
		var conds []string
		for i := range two {
			conds = append(conds, map[bool]string{true: "true", false: many}[i < len(one)])
		}
		return conds, nil
	}
	mounts, err := cels(two.mounts, "Object.spec.containers.volumeMounts")
	if err != nil {
		return nil, err
	}
	mountConds, err := manyOnly(one.mounts, two.mounts)
	if err != nil {
		return nil, err
	}
	vols, err := cels(two.volumes, "Object.spec.volumes")
	if err != nil {
		return nil, err
	}
	volConds, err := manyOnly(one.volumes, two.volumes)
	if err != nil {
		return nil, err
	}
	annPath := func(key string) string {
		return fmt.Sprintf(`"/metadata/annotations/" + jsonpatch.escapeKey(%s)`, q(key))
	}
	policyEnv := fmt.Sprintf(`Object.spec.containers.env{name: %s, value: %s}`,
		q(contract.Env(contract.FlagRestartPolicy)), restart.PolicyCEL("c", "object.spec"))
	// The container's restartPolicyRules as restart.FormatRules writes them (ok has checked
	// restart.PlainRulesCEL).
	rulesEnv := fmt.Sprintf(`Object.spec.containers.env{name: %s, value: %s}`,
		q(contract.Env(contract.FlagRestartRules)), restart.FormatRulesCEL("c.restartPolicyRules"))
	patches := []string{
		each("true", "/command", celList([]string{contract.Binary})),
		each("true", "/args", fmt.Sprintf(`(%s ? %s : %s) + ["--"] + c.command + (has(c.args) ? c.args : [])`, many, flagsCEL(two.flags, "c"), flagsCEL(one.flags, "c"))),
		each("has(c.env)", "/env/-", policyEnv),
		each("has(c.env) && has(c.restartPolicyRules)", "/env/-", rulesEnv),
		each("!has(c.env)", "/env", fmt.Sprintf("[%s] + (has(c.restartPolicyRules) ? [%s] : [])", policyEnv, rulesEnv)),
	}
	patches = append(patches, appended(each, "has(c.volumeMounts)", "/volumeMounts", mounts, mountConds)...)
	patches = append(patches, appended(func(cond, path, value string) string { return single(cond, "add", q(path), value) },
		"has(object.spec.volumes)", "/spec/volumes", vols, volConds)...)
	if len(one.inits) > 0 {
		if len(one.inits) != 1 {
			return nil, errors.New("policy: inject adds more than one init container")
		}
		install, err := valueCEL(one.inits[0], "Object.spec.initContainers")
		if err != nil {
			return nil, err
		}
		patches = append(patches,
			single("has(object.spec.initContainers)", "add", `"/spec/initContainers/0"`, install),
			single("!has(object.spec.initContainers)", "add", `"/spec/initContainers"`, "["+install+"]"))
	}
	patches = append(patches,
		single("!has(object.metadata.annotations)", "add", `"/metadata/annotations"`, fmt.Sprintf("{%s: %s}", q(contract.InjectedAnnotation), q(one.injected))),
		single("true", "add", annPath(contract.InjectedAnnotation), q(one.injected)),
		single("true", "add", annPath(contract.WrappedAnnotation), `variables.wrapped.join(",")`),
		single("size(variables.found) > 0", "add", annPath(contract.FoundAnnotation), `variables.found.join(",")`),
		single(fmt.Sprintf("size(variables.found) == 0 && %s in variables.ann", q(contract.FoundAnnotation)), "remove", annPath(contract.FoundAnnotation), ""),
		// A pod wrapped now loses the skipped annotation of an earlier invocation, as the
		// webhook removes it; one left alone gets it (skipCEL).
		single(fmt.Sprintf("%s in variables.ann", q(SkippedAnnotation)), "remove", annPath(SkippedAnnotation), ""),
		fmt.Sprintf(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {%s: variables.skip}}].filter(x, variables.skip != "" && !has(object.metadata.annotations))`, q(SkippedAnnotation)),
		fmt.Sprintf(`[JSONPatch{op: "add", path: %s, value: variables.skip}].filter(x, variables.skip != "" && has(object.metadata.annotations))`, annPath(SkippedAnnotation)),
	)
	// after each webhook's own match conditions (Policy)
	conds := []admissionregistrationv1.MatchCondition{{
		Name:       "not-injected",
		Expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%s in object.metadata.annotations)`, q(contract.InjectedAnnotation)),
	}}
	return &admissionregistrationv1.MutatingAdmissionPolicySpec{
		MatchConstraints: podCreates(),
		Variables:        vars,
		MatchConditions:  conds,
		Mutations: []admissionregistrationv1.Mutation{{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: strings.Join(patches, " +\n")},
		}},
	}, nil
}
