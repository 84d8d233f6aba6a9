package lint

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidesync/sidesync/internal/restart"
)

// Restarts in place (kubernetes-delivery.md 1.2): a container of a pod that runs to completion
// can run again after it exits, by the pod's restartPolicy OnFailure or by its own
// restartPolicy and restartPolicyRules (KEP-5307, on by default since Kubernetes 1.35). With
// classic sidecars, whatever tells them to quit must not do it before such a restart. Lint asks
// internal/restart, the wrapper's own decision, so that it says what sidesync will do.

// restartSpec is how the kubelet restarts the container: its own restartPolicy, else the pod's
// (Never when a Job's template says nothing), and its restartPolicyRules.
func restartSpec(c *corev1.Container, pod corev1.RestartPolicy) restart.Spec {
	policy := restart.Policy(pod)
	if c.RestartPolicy != nil {
		policy = restart.Policy(*c.RestartPolicy)
	}
	if policy == restart.Unknown {
		policy = restart.Never
	}
	var rules []restart.Rule
	for _, r := range c.RestartPolicyRules {
		rule := restart.Rule{Action: restart.Action(r.Action)}
		if r.ExitCodes != nil {
			rule.ExitCodes = &restart.ExitCodes{Operator: restart.Operator(r.ExitCodes.Operator), Values: r.ExitCodes.Values}
		}
		rules = append(rules, rule)
	}
	return restart.Spec{Policy: policy, Rules: rules}
}

// codes is a set of exit codes: a container exits with 0 to 255 (128+S when killed by signal S).
type codes [256]bool

// restartCodes are the exit codes after which the spec restarts the container in place.
func restartCodes(s restart.Spec) codes {
	var set codes
	for code := range set {
		set[code], _ = s.Restarts(code)
	}
	return set
}

func (set codes) count() int {
	n := 0
	for _, in := range set {
		if in {
			n++
		}
	}
	return n
}

// String names the set for a message: "every exit code", "every exit code but 0",
// "exit codes 3, 42-44", "exit code 42", or "no exit code".
func (set codes) String() string {
	switch n := set.count(); {
	case n == len(set):
		return "every exit code"
	case n == 0:
		return "no exit code"
	case n > len(set)/2:
		var out codes
		for code, in := range set {
			out[code] = !in
		}
		return "every exit code but " + out.ranges()
	case n == 1:
		return "exit code " + set.ranges()
	default:
		return "exit codes " + set.ranges()
	}
}

// ranges lists the set compactly: "0", "3, 42-44".
func (set codes) ranges() string {
	var parts []string
	for code := 0; code < len(set); code++ {
		if !set[code] {
			continue
		}
		end := code
		for end+1 < len(set) && set[end+1] {
			end++
		}
		part := strconv.Itoa(code)
		if end > code {
			part += "-" + strconv.Itoa(end)
		}
		parts = append(parts, part)
		code = end
	}
	return strings.Join(parts, ", ")
}

// toldSpec is what the sidesync in c is told about its restarts (its --restart-policy and
// --restart-rules, else their variables). known is false when a value comes from a ConfigMap or
// a Secret, or nothing is said; err says why a value is not valid.
func toldSpec(c *corev1.Container) (spec restart.Spec, known bool, err error) {
	policy, okP := toldValue(c, flagRestartPolicy, envRestartPolicy)
	rules, okR := toldValue(c, flagRestartRules, envRestartRules)
	if !okP && !okR {
		return restart.Spec{}, false, nil
	}
	if okP {
		if spec.Policy, err = restart.ParsePolicy(policy); err != nil {
			return spec, false, fmt.Errorf("%s %q: %w", envRestartPolicy, policy, err)
		}
	}
	if okR {
		if spec.Rules, err = restart.ParseRules(rules); err != nil {
			return spec, false, fmt.Errorf("%s: %w", envRestartRules, err)
		}
	}
	return spec, !hasValueFrom(c, envRestartPolicy) && !hasValueFrom(c, envRestartRules), nil
}

// toldValue is a literal value of sidesync's flag in c, else of its variable.
func toldValue(c *corev1.Container, flag, env string) (string, bool) {
	if v, ok := flagValue(wrapperArgs(c), flag); ok {
		return v, true
	}
	return envValue(c, env)
}

func hasValueFrom(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil {
			return true
		}
	}
	return false
}

// restartCause says what restarts the container: "the pod's restartPolicy OnFailure", or its
// own settings ("its restartPolicyRules", "its restartPolicy OnFailure").
func restartCause(c *corev1.Container, pod corev1.RestartPolicy) string {
	var own []string
	if len(c.RestartPolicyRules) > 0 {
		own = append(own, "restartPolicyRules")
	}
	if c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyNever {
		own = append(own, "restartPolicy "+string(*c.RestartPolicy))
	}
	if len(own) == 0 {
		return "the pod's restartPolicy " + string(pod)
	}
	return "its " + strings.Join(own, " and ")
}

// restartsInPlace (rule 7): in a pod that runs to completion with classic sidecars, the
// container that runs sidesync (else each app) must not run again after its sidecars were told
// to quit. The findings are per container, in the order of the pod.
func restartsInPlace(p *pod) []Finding {
	if !p.completes || len(p.classic()) == 0 {
		return nil
	}
	targets := p.wrapped()
	if len(targets) == 0 {
		targets = p.apps
	}
	var fs []Finding
	for _, c := range targets {
		if f, ok := restartFinding(p, c); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// restartFinding says what a restart in place of c means for its sidecars, worst first: after
// exit 0 the pod never completes; sidesync not told, or told wrong, quits the sidecars before
// the restart; otherwise the restarts keep the sidecars and must be bounded.
func restartFinding(p *pod, c *corev1.Container) (Finding, bool) {
	policy := p.Pod.Spec.RestartPolicy
	set := restartCodes(restartSpec(c, policy))
	if set.count() == 0 {
		return Finding{}, false
	}
	f := Finding{Severity: Error, Rule: RuleRestartsInPlace, Container: c.Name}
	runs := "container " + c.Name + " restarts in place on " + set.String() + " (" + restartCause(c, policy) + ")"
	told, known, err := toldSpec(c)
	switch {
	case set[0]:
		f.Message = runs + ": it runs again even after it succeeds, " + fmt.Sprintf(neverCompletesTheKind, p.Kind)
		f.Fix = "restart it only on failure (restartPolicy OnFailure, or restartPolicyRules that leave out exit code 0)"
	case !isWrapped(c):
		f.Severity = Warning
		f.Message = runs + ": whatever tells the sidecars to quit must not do it before a restart, or the app runs again without them"
		f.Fix = "wrap it with sidesync (kubectl sidesync inject tells it the restart settings), and bound the restarts with activeDeadlineSeconds"
	case err != nil:
		f.Message = "container " + c.Name + " runs sidesync with " + err.Error() + ": sidesync does not start with it"
		f.Fix = "re-run kubectl sidesync inject, which writes " + envRestartPolicy + " and " + envRestartRules
	case !toldRestarts(c):
		f.Message = runs + ", and the sidesync it runs is not told so: it tells the sidecars to quit before the restart, and the restarted container finds none (it waits, then exits 69)"
		f.Fix = "re-run kubectl sidesync inject, which sets " + envRestartPolicy + " and " + envRestartRules + ", or set them yourself"
	case known && restartCodes(told) != set:
		f.Message = runs + ", but the sidesync it runs is told " + restartCodes(told).String() + ": it tells the sidecars to quit before some restarts, or keeps them after the last exit"
		f.Fix = "re-run kubectl sidesync inject to update " + envRestartPolicy + " and " + envRestartRules
	default:
		f.Severity = Warning
		f.Message = runs + "; sidesync does not quit the sidecars then"
		f.Fix = "make sure activeDeadlineSeconds bounds the restarts"
		if c.RestartPolicy == nil && len(c.RestartPolicyRules) == 0 {
			f.Message = "container " + c.Name + " restarts in place on failure (the pod's restartPolicy OnFailure); sidesync does not quit the sidecars then"
			f.Fix = "make sure backoffLimit or activeDeadlineSeconds bound the restarts"
		}
	}
	return f, true
}
