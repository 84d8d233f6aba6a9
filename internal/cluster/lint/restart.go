package lint

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Restarts in place: a container of a pod that runs to completion
// can run again after it exits, by the pod's restartPolicy OnFailure or by its own
// restartPolicy and restartPolicyRules (KEP-5307, on by default since Kubernetes 1.35). With
// classic sidecars, whatever tells them to quit must not do it before such a restart. Lint asks
// internal/shared/restart, the wrapper's own decision, so that it says what sidesync will do.

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

// restartCause says what restarts the container: "the pod's restartPolicy OnFailure", or its
// own settings ("its restartPolicyRules", "its restartPolicy OnFailure").
func restartCause(c *manifest.Container, pod string) string {
	var own []string
	if c.RestartPolicyRules != nil {
		own = append(own, "restartPolicyRules")
	}
	if c.RestartPolicy != "" && c.RestartPolicy != string(restart.Never) {
		own = append(own, "restartPolicy "+c.RestartPolicy)
	}
	if len(own) == 0 {
		if pod == "" {
			pod = "Always (a Pod's default)"
		}
		return "the pod's restartPolicy " + pod
	}
	return "its " + strings.Join(own, " and ")
}

// restartsInPlace (rule 7): in a pod that runs to completion with classic sidecars, the
// containers that run sidesync (else each app) must not run again after their sidecars were
// told to quit, and sidesync must be told exactly when they do. The findings are per container,
// in the order of the pod.
func restartsInPlace(p *pod) []Finding {
	if !p.completes || len(p.classic()) == 0 {
		return nil
	}
	targets := p.wrapped()
	if len(targets) == 0 {
		targets = p.apps
	}
	var fs []Finding
	for _, a := range targets {
		if f, ok := restartFinding(p, a); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// restartFinding says what a restart in place of the app means for its sidecars, worst first:
// after exit 0 the pod never completes; sidesync told otherwise than the kubelet does (not told
// of a restart, or told of one that will not come) quits the sidecars before a restart, or
// never; otherwise the restarts keep the sidecars and must be bounded.
func restartFinding(p *pod, a *appContainer) (Finding, bool) {
	c, policy := a.c, p.Pod.RestartPolicy
	spec, err := restart.Effective(c.RestartPolicy, policy, c.RestartPolicyRules)
	if err != nil {
		return Finding{}, false // the API server refuses it; nothing sidesync could do
	}
	set := restartCodes(spec)
	f := Finding{Severity: Error, Rule: RuleRestartsInPlace, Container: c.Name}
	runs := "container " + c.Name + " restarts in place on " + set.String() + " (" + restartCause(c, policy) + ")"
	told, known, hidden := a.toldRestarts()
	switch {
	case a.w != nil && a.w.err != nil:
		return Finding{}, false // wrapperConfig says it
	case set.count() > 0 && set[0]:
		f.Message = runs + ": it runs again even after it succeeds, " + p.neverCompletes()
		f.Fix = "restart it only on failure (restartPolicy OnFailure, or restartPolicyRules that leave out exit code 0)"
	case a.w == nil && set.count() > 0:
		f.Severity = Warning
		f.Message = runs + ": whatever tells the sidecars to quit must not do it before a restart, or the app runs again without them"
		f.Fix = "wrap it with sidesync (kubectl sidesync inject tells it the restart settings), and bound the restarts with activeDeadlineSeconds"
	case a.w == nil || !a.w.quits():
		return Finding{}, false
	case !known && !hidden && set.count() > 0:
		f.Message = runs + ", and the sidesync it runs is not told so: it tells the sidecars to quit before the restart, and the restarted container finds none (it waits, then exits 69)"
		f.Fix = "inject it again (kubectl sidesync inject sets " + envRestartPolicy + " and " + envRestartRules + "), or set them yourself"
	case known && restartCodes(told) != set:
		f.Message = mismatch(c, restartCause(c, policy), set, restartCodes(told), p.neverCompletes())
		f.Fix = "inject it again to update " + envRestartPolicy + " and " + envRestartRules + ", or correct them"
	case set.count() == 0:
		return Finding{}, false
	default:
		f.Severity = Warning
		f.Message = runs + "; sidesync does not quit the sidecars then"
		f.Fix = "make sure activeDeadlineSeconds bounds the restarts"
		if c.RestartPolicy == "" && c.RestartPolicyRules == nil {
			f.Message = "container " + c.Name + " restarts in place on failure (the pod's restartPolicy OnFailure); sidesync does not quit the sidecars then"
			f.Fix = "make sure backoffLimit or activeDeadlineSeconds bound the restarts"
		}
	}
	return f, true
}

// mismatch says what follows when the sidesync in c is told it restarts on told while the
// kubelet restarts it on actual: a quit before a restart, or sidecars kept for a restart that
// never comes.
func mismatch(c *manifest.Container, cause string, actual, told codes, never string) string {
	var early, kept codes
	for code := range actual {
		early[code] = actual[code] && !told[code]
		kept[code] = told[code] && !actual[code]
	}
	msg := "container " + c.Name + " restarts in place on " + actual.String() + " (" + cause + "), but the sidesync it runs is told it does on " + told.String()
	var what []string
	if early.count() > 0 {
		what = append(what, "after "+early.String()+" it tells the sidecars to quit before the restart, and the restarted container finds none")
	}
	if kept.count() > 0 {
		what = append(what, "after "+kept.String()+" it keeps the sidecars for a restart that never comes, "+never)
	}
	return msg + ": " + strings.Join(what, "; ")
}

// The wrapper's restart variables, which inject sets.
var (
	envRestartPolicy = contract.Env(contract.FlagRestartPolicy)
	envRestartRules  = contract.Env(contract.FlagRestartRules)
)

// toldRestarts is what the sidesync in the app is told about its restarts (its --restart-policy
// and --restart-rules, else their variables), as it reads them; known is false when nothing is
// said, or a value comes from a ConfigMap or a Secret (hidden: told, but not known here).
func (a *appContainer) toldRestarts() (spec restart.Spec, known, hidden bool) {
	if a.w == nil || a.w.err != nil {
		return restart.Spec{}, false, false
	}
	if slices.Contains(a.w.hidden, envRestartPolicy) || slices.Contains(a.w.hidden, envRestartRules) {
		return restart.Spec{}, false, true
	}
	return a.w.cfg.Restart, a.w.cfg.Restart.Known(), false
}
