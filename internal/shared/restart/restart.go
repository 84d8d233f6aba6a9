// Package restart decides whether the kubelet restarts a container in place after it exits,
// from the container's effective restartPolicy and its restartPolicyRules (KEP-5307, beta and on
// by default since Kubernetes 1.35). sidesync asks because a container that is about to run
// again must keep its sidecars: telling them to quit would leave the restarted command without
// its proxy. It is pure: no I/O, no logging.
package restart

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// Policy is a container's effective restartPolicy: its own, else its pod's.
type Policy string

// Restart policies, spelt as Kubernetes spells them. Unknown is not Kubernetes' default (a Pod
// without restartPolicy gets Always): it means that nobody said, and then no restart is assumed,
// so that sidecars are told to quit as they always were.
const (
	Unknown   Policy = ""
	Never     Policy = "Never"
	OnFailure Policy = "OnFailure"
	Always    Policy = "Always"
)

// ParsePolicy reads a restartPolicy in any case ("onfailure" is OnFailure); "" is Unknown.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	for _, p := range []Policy{Unknown, Never, OnFailure, Always} {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return Unknown, errors.New("must be Never, OnFailure or Always (a Kubernetes restartPolicy)")
}

// Rule is one of a container's restartPolicyRules, as the Kubernetes API writes it:
// {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}.
type Rule struct {
	Action    Action     `json:"action"`
	ExitCodes *ExitCodes `json:"exitCodes"`
}

// ExitCodes is the condition of a Rule on the container's exit code.
type ExitCodes struct {
	Operator Operator `json:"operator"`
	Values   []int32  `json:"values"`
}

// Action is what a Rule does when it matches.
type Action string

// Rule actions (k8s.io/api core/v1 ContainerRestartRuleAction). Both restart this container in
// place; RestartAllContainers (KEP-5532) restarts the pod's other containers, sidecars included,
// with it.
const (
	ActionRestart              Action = "Restart"
	ActionRestartAllContainers Action = "RestartAllContainers"
)

// Operator compares the exit code with a Rule's values.
type Operator string

// Operators (k8s.io/api core/v1 ContainerRestartRuleOnExitCodesOperator).
const (
	OpIn    Operator = "In"
	OpNotIn Operator = "NotIn"
)

// notRules begins the message for what is no list of rules at all.
const notRules = `not a JSON list of restartPolicyRules like [{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]: `

// ParseRules reads restartPolicyRules written as JSON (the value of --restart-rules and
// SIDESYNC_RESTART_RULES, which inject writes with FormatRules), as RulesFrom reads them.
func ParseRules(data string) ([]Rule, error) {
	v, err := jsonlite.Decode([]byte(data))
	if err != nil {
		return nil, fmt.Errorf(notRules+"%w", err)
	}
	return RulesFrom(v)
}

// RulesFrom reads restartPolicyRules decoded as internal/shared/jsonlite decodes them (a
// container's, in a manifest or in a Pod from the Kubernetes API, as internal/shared/manifest
// hands them on), strictly: an unknown field, action or operator, a value that is not a whole
// number (a json.Number), or a rule without exitCodes is an error. A rule that sidesync does not
// understand could restart the container where sidesync would not expect it. null is a list
// known to be empty.
func RulesFrom(v any) ([]Rule, error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, fmt.Errorf(notRules+"%s", what(v))
	}
	rules := []Rule{} // given, and empty: known to have no rules
	for i, e := range list {
		r, err := ruleFrom(e)
		if err != nil {
			return nil, fmt.Errorf(notRules+"rule %d: %w", i, err)
		}
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// ruleFrom reads one decoded rule, its fields and nothing else.
func ruleFrom(v any) (Rule, error) {
	var r Rule
	m, err := object(v, "action", "exitCodes")
	if err != nil || m == nil {
		return r, err
	}
	a, err := str(m["action"], "action")
	r.Action = Action(a)
	if err != nil {
		return r, err
	}
	ec, err := object(m["exitCodes"], "operator", "values")
	if err != nil || ec == nil {
		return r, err
	}
	r.ExitCodes = &ExitCodes{}
	op, err := str(ec["operator"], "exitCodes operator")
	r.ExitCodes.Operator = Operator(op)
	if err != nil {
		return r, err
	}
	switch values := ec["values"].(type) {
	case nil:
	case []any:
		r.ExitCodes.Values = make([]int32, 0, len(values)) // [] stays [], as the API wrote it
		for _, e := range values {
			n, ok := e.(json.Number)
			code, err := strconv.ParseInt(string(n), 10, 32)
			if !ok || err != nil {
				return r, fmt.Errorf("exitCodes values: %s is not a whole number from %d to %d", what(e), math.MinInt32, math.MaxInt32)
			}
			r.ExitCodes.Values = append(r.ExitCodes.Values, int32(code))
		}
	default:
		return r, fmt.Errorf("exitCodes values: %s, not a list", what(values))
	}
	return r, nil
}

// object reads a decoded JSON object that may have the given fields and no other; null is nil.
func object(v any, fields ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("%s, not an object", what(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // sorted: the same input, the same message
		if !slices.Contains(fields, k) {
			return nil, fmt.Errorf("unknown field %q", k)
		}
	}
	return m, nil
}

// str reads a decoded JSON string; null is "".
func str(v any, name string) (string, error) {
	s, ok := v.(string)
	if !ok && v != nil {
		return "", fmt.Errorf("%s: %s, not a string", name, what(v))
	}
	return s, nil
}

// what names a decoded JSON value in a message: its text, short.
func what(v any) string {
	b, err := jsonlite.Append(nil, v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 40 {
		b = append(b[:37], "..."...)
	}
	return string(b)
}

// FormatRules writes rules as the Kubernetes API writes them, and ParseRules reads them:
// [{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}].
func FormatRules(rules []Rule) string {
	if rules == nil {
		return "null"
	}
	b := []byte{'['}
	for i, r := range rules {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonlite.AppendString(append(b, `{"action":`...), string(r.Action)), `,"exitCodes":`...)
		if r.ExitCodes == nil {
			b = append(b, "null}"...)
			continue
		}
		b = append(jsonlite.AppendString(append(b, `{"operator":`...), string(r.ExitCodes.Operator)), `,"values":`...)
		if r.ExitCodes.Values == nil {
			b = append(b, "null}}"...)
			continue
		}
		b = append(b, '[')
		for j, v := range r.ExitCodes.Values {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(v), 10)
		}
		b = append(b, "]}}"...)
	}
	return string(append(b, ']'))
}

func (r Rule) validate() error {
	switch {
	case r.Action != ActionRestart && r.Action != ActionRestartAllContainers:
		return fmt.Errorf("action %q: must be %s or %s", r.Action, ActionRestart, ActionRestartAllContainers)
	case r.ExitCodes == nil:
		return errors.New("no exitCodes: a rule needs exitCodes with an operator and values")
	case r.ExitCodes.Operator != OpIn && r.ExitCodes.Operator != OpNotIn:
		return fmt.Errorf("exitCodes operator %q: must be %s or %s", r.ExitCodes.Operator, OpIn, OpNotIn)
	}
	return nil
}

// matches reports whether the rule's condition holds for an exit code.
func (r Rule) matches(code int) bool {
	in := slices.ContainsFunc(r.ExitCodes.Values, func(v int32) bool { return int(v) == code })
	return in == (r.ExitCodes.Operator == OpIn)
}

// String is the rule as the log shows it: "Restart when the exit code is In [1 2]".
func (r Rule) String() string {
	return fmt.Sprintf("%s when the exit code is %s %v", r.Action, r.ExitCodes.Operator, r.ExitCodes.Values)
}

// Spec is what decides whether a container restarts in place: its effective restartPolicy and
// its restartPolicyRules. The zero Spec is unknown, and restarts nothing.
type Spec struct {
	Policy Policy
	Rules  []Rule // nil: none known; an empty list: known to have none
}

// Known reports whether anything was said about the restarts.
func (s Spec) Known() bool { return s.Policy != Unknown || s.Rules != nil }

// Restarts reports whether the kubelet restarts the container in place after it exits with
// code (a death by signal S is the code 128+S, as the kubelet reports it), and says why, as
// Kubernetes decides (KEP-5307): the first rule whose exitCodes match decides; without one, the
// restartPolicy does: Always restarts, OnFailure restarts after a non-zero code, Never and an
// unknown policy do not.
func (s Spec) Restarts(code int) (bool, string) {
	for i, r := range s.Rules {
		if r.ExitCodes != nil && r.matches(code) {
			return true, fmt.Sprintf("restartPolicyRules[%d]: %s", i, r)
		}
	}
	switch {
	case s.Policy == Always:
		return true, "restartPolicy Always"
	case s.Policy == OnFailure && code != 0:
		return true, "restartPolicy OnFailure"
	case s.Policy == Unknown:
		return false, "restartPolicy unknown"
	}
	return false, "restartPolicy " + string(s.Policy)
}

// Effective is the Spec by which the kubelet restarts a regular container, with Kubernetes' own
// defaults: the container's restartPolicy, else the pod's, else Always (what Kubernetes sets on
// a Pod that says none; a Job's pod template must say Never or OnFailure); and the container's
// restartPolicyRules as decoded (RulesFrom; nil for none). Every reader of a pod (detection in
// the pod, inject, lint, rescue) asks this one function, so that they agree; the admission
// policies write its choice of policy with PolicyCEL.
func Effective(container, pod string, rules any) (Spec, error) {
	policy := container
	if strings.TrimSpace(policy) == "" {
		policy = pod
	}
	if strings.TrimSpace(policy) == "" {
		policy = string(Always)
	}
	var s Spec
	var err error
	if s.Policy, err = ParsePolicy(policy); err != nil {
		return Spec{}, fmt.Errorf("restartPolicy %q: %w", policy, err)
	}
	if rules != nil {
		if s.Rules, err = RulesFrom(rules); err != nil {
			return Spec{}, err
		}
	}
	return s, nil
}
