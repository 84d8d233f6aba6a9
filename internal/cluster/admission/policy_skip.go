package admission

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// This file holds why the MutatingAdmissionPolicy leaves a selected pod alone: the value of
// SkippedAnnotation it writes, as the webhook writes it (Mutator.skip: a reason, ": ", a
// message), with the webhook's reason wherever the webhook would skip the pod too, and
// ReasonPolicyCannot where the webhook would wrap it and the policy cannot (issue "Native
// first": the policy records why it left a selected pod alone, as the webhook does).

// ReasonPolicyCannot is the policy's reason for a pod that the webhook and inject would wrap or
// bring up to date and its JSON Patch cannot; the webhook never uses it.
const ReasonPolicyCannot = "policy-cannot"

// policyRegistry is what the policy says of an app without a command: the webhook reads the
// image's ENTRYPOINT and CMD from the registry when its lookups are on; CEL cannot.
const policyRegistry = "which the admission policy cannot read from a registry; give the container a command (the image's ENTRYPOINT, and its CMD as args unless it has args, as `crane config IMAGE` shows them), or wrap it with `kubectl sidesync inject --resolve` or the webhook, which read the registry"

// policyUpdate is the end of what the policy says of a pod that inject and the webhook would
// change in a way its JSON Patch cannot.
const policyUpdate = "; `kubectl sidesync inject` or the webhook does"

// notNeededMessage is what inject.Apply says of a pod whose sidecars are all native with a
// startup probe (the webhook's message for ReasonNotNeeded), read from a probe pod of one app
// and one such sidecar, so that the policy's wording is the webhook's.
func notNeededMessage(o PolicyOptions) (string, error) {
	native := map[string]any{"name": "probe-native", "image": "probe", "restartPolicy": "Always",
		"startupProbe": map[string]any{"tcpSocket": map[string]any{"port": int64(1)}}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "probe"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": probeName, "image": "probe", "command": []any{"probe"}}},
			"initContainers": []any{native}}}
	_, r, err := inject.Apply(pod, manifest.TypeMeta{}, inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery, Native: o.Native}, nil)
	if err != nil {
		return "", err
	}
	if r.Reason == "" || len(r.Wrapped) > 0 {
		return "", errors.New("inject wraps a pod whose only sidecar is native with a startup probe")
	}
	return r.Reason, nil
}

// skipCase is one reason the policy leaves a pod alone: when (CEL over the policy's variables)
// and the message after "reason: " (CEL of a string); no reason means no annotation.
type skipCase struct {
	reason, cond, message string
}

// skipCases are the policy's reasons, in the order in which inject decides (planPod: a clash is
// an error before anything; an app without a command leaves the pod unchanged; an app wrapped
// before is brought up to date, and then sidesync is never "not needed"). Each condition is the
// predicate that the variable ok already asks, rendered beside its Go (inject's, restart's);
// restart rules that restart.PlainRulesCEL refuses are ones inject refuses too (ReasonInvalid).
// notNeeded is inject's message for ReasonNotNeeded (notNeededMessage). With native
// (PolicyOptions.Native), a pod that inject may convert is the policy's to leave alone, after a
// clash (an error before inject converts anything) and before the rest (a converted pod may need
// no wrapper at all, whatever its apps).
func skipCases(notNeeded string, native bool) []skipCase {
	first := func(cond string) string { return "variables.apps.filter(c, " + cond + ")[0]" }
	image := func(c string) string { return "(has(" + c + ".image) ? " + c + ".image : \"\")" }
	ownedEnv := "has(c.env) && c.env.exists(e, " + inject.OwnedEnvCEL("e") + ")"
	plainRules := "!has(c.restartPolicyRules) || " + restart.PlainRulesCEL("c.restartPolicyRules")
	noCommand := "!" + inject.HasCommandCEL("c")
	cases := []skipCase{
		{"", "variables.ok", ""},
		{ReasonInvalid, "variables.clash", q("a volume, mount or container of the pod uses a name or a path that belongs to sidesync (its volumes, its install container " +
			contract.InitContainer + ", a mount below " + contract.Owned + "), and sidesync did not add it; rename it, or remove it if an earlier sidesync left it")},
		{ReasonNoCommand, "variables.apps.exists(c, " + noCommand + ")", fmt.Sprintf(`"container " + %s.name + " has no command, so the ENTRYPOINT of its image " + %s + %s`,
			first(noCommand), image(first(noCommand)), q(" decides what runs, "+policyRegistry))},
		{ReasonPolicyCannot, "variables.apps.exists(c, " + inject.WrappedCEL("c") + ")", fmt.Sprintf(`"container " + %s.name + %s`,
			first(inject.WrappedCEL("c")), q(" runs "+contract.Binary+" already, but the pod has no "+contract.InjectedAnnotation+
				" annotation: the admission policy cannot bring a container wrapped before up to date"+policyUpdate))},
		{ReasonNotNeeded, "variables.nativeOnly", q(notNeeded)},
		{"", "size(variables.wrapped) == 0", ""},
		{ReasonPolicyCannot, "variables.apps.exists(c, " + ownedEnv + ")", fmt.Sprintf(`"container " + %s.name + " sets " + %s.env.filter(e, %s)[0].name + %s`,
			first(ownedEnv), first(ownedEnv), inject.OwnedEnvCEL("e"),
			q(", a variable sidesync writes, itself: the admission policy only appends to env and cannot replace it"+policyUpdate))},
		{ReasonInvalid, "variables.apps.exists(c, !(" + plainRules + "))", fmt.Sprintf(`"container " + %s.name + %s`,
			first("!("+plainRules+")"), q(": restartPolicyRules with an action or an operator that is not a word sidesync knows"))},
	}
	if native {
		// inject with Native finds sidesync not needed (nativeDone, which for a pod nativeMay
		// leaves is nativeOnly) before it looks at the apps' commands, unless one is wrapped.
		cases = slices.Insert(cases, 2, skipCase{ReasonPolicyCannot, "variables.nativeMay", q(nativeCannot)},
			skipCase{ReasonNotNeeded, "variables.nativeOnly && !variables.apps.exists(c, " + inject.WrappedCEL("c") + ")", q(notNeeded)})
	}
	return cases
}

// skipCEL is the CEL of the policy's variable "skip": the value of SkippedAnnotation for a pod
// the policy leaves alone (variables.ok false) where the webhook would write one or would wrap
// it, "" otherwise: the first of skipCases that holds.
func skipCEL(notNeeded string, native bool) string {
	cases := skipCases(notNeeded, native)
	expr := `""`
	for i := len(cases) - 1; i >= 0; i-- {
		value := `""`
		if c := cases[i]; c.reason != "" {
			value = q(c.reason+": ") + " + " + c.message
		}
		expr = "(" + cases[i].cond + " ? " + value + " : " + expr + ")"
	}
	return expr
}
