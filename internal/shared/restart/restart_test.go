package restart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rule(action Action, op Operator, values ...int32) Rule {
	return Rule{Action: action, ExitCodes: &ExitCodes{Operator: op, Values: values}}
}

// TestRestarts is the decision table: every row of Kubernetes' rules (KEP-5307) that sidesync
// relies on, for exit codes, signal deaths (128+S) and an unknown policy.
func TestRestarts(t *testing.T) {
	in42 := []Rule{rule(ActionRestart, OpIn, 42)}
	tests := []struct {
		name    string
		spec    Spec
		code    int
		want    bool
		wantWhy string
	}{
		{"unknown, exit 0", Spec{}, 0, false, "restartPolicy unknown"},
		{"unknown, exit 1: not assumed", Spec{}, 1, false, "restartPolicy unknown"},
		{"Never, exit 0", Spec{Policy: Never}, 0, false, "restartPolicy Never"},
		{"Never, exit 1", Spec{Policy: Never}, 1, false, "restartPolicy Never"},
		{"OnFailure, exit 0", Spec{Policy: OnFailure}, 0, false, "restartPolicy OnFailure"},
		{"OnFailure, exit 3", Spec{Policy: OnFailure}, 3, true, "restartPolicy OnFailure"},
		{"OnFailure, SIGTERM (143)", Spec{Policy: OnFailure}, 143, true, "restartPolicy OnFailure"},
		{"OnFailure, SIGKILL (137)", Spec{Policy: OnFailure}, 137, true, "restartPolicy OnFailure"},
		{"Always, exit 0", Spec{Policy: Always}, 0, true, "restartPolicy Always"},
		{"Always, exit 1", Spec{Policy: Always}, 1, true, "restartPolicy Always"},
		{"Never with In [42], exit 42", Spec{Policy: Never, Rules: in42}, 42, true, "restartPolicyRules[0]: Restart when the exit code is In [42]"},
		{"Never with In [42], exit 1: the policy decides", Spec{Policy: Never, Rules: in42}, 1, false, "restartPolicy Never"},
		{"Never with In [42], exit 0", Spec{Policy: Never, Rules: in42}, 0, false, "restartPolicy Never"},
		{"OnFailure with In [42], exit 1: the policy decides", Spec{Policy: OnFailure, Rules: in42}, 1, true, "restartPolicy OnFailure"},
		{"Never with NotIn [0 1], exit 2", Spec{Policy: Never, Rules: []Rule{rule(ActionRestart, OpNotIn, 0, 1)}}, 2, true, "restartPolicyRules[0]: Restart when the exit code is NotIn [0 1]"},
		{"Never with NotIn [0 1], exit 1", Spec{Policy: Never, Rules: []Rule{rule(ActionRestart, OpNotIn, 0, 1)}}, 1, false, "restartPolicy Never"},
		{"the first matching rule decides", Spec{Policy: Never, Rules: []Rule{rule(ActionRestart, OpIn, 7), rule(ActionRestart, OpNotIn, 0)}}, 3, true, "restartPolicyRules[1]: Restart when the exit code is NotIn [0]"},
		{"rules with an unknown policy", Spec{Rules: in42}, 42, true, "restartPolicyRules[0]: Restart when the exit code is In [42]"},
		{"rules with an unknown policy, no match", Spec{Rules: in42}, 1, false, "restartPolicy unknown"},
		{"RestartAllContainers restarts this one too", Spec{Policy: Never, Rules: []Rule{rule(ActionRestartAllContainers, OpIn, 9)}}, 9, true, "restartPolicyRules[0]: RestartAllContainers when the exit code is In [9]"},
		{"an empty list of rules", Spec{Policy: Never, Rules: []Rule{}}, 1, false, "restartPolicy Never"},
		{"a signal death matched by a rule (128+15)", Spec{Policy: Never, Rules: []Rule{rule(ActionRestart, OpIn, 143)}}, 143, true, "restartPolicyRules[0]: Restart when the exit code is In [143]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := tt.spec.Restarts(tt.code)
			if got != tt.want || why != tt.wantWhy {
				t.Errorf("Restarts(%d) = %v, %q; want %v, %q", tt.code, got, why, tt.want, tt.wantWhy)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"": Unknown, " ": Unknown, "Never": Never, "onfailure": OnFailure, "ALWAYS": Always} {
		if got, err := ParsePolicy(in); got != want || err != nil {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"sometimes", "On-Failure", "0"} {
		if _, err := ParsePolicy(bad); err == nil || !strings.Contains(err.Error(), "Never, OnFailure or Always") {
			t.Errorf("ParsePolicy(%q): %v, want an error naming the values", bad, err)
		}
	}
}

func TestParseRules(t *testing.T) {
	got, err := ParseRules(` [{"action":"Restart","exitCodes":{"operator":"In","values":[1,2]}},
		{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":[0]}}] `)
	want := []Rule{rule(ActionRestart, OpIn, 1, 2), rule(ActionRestartAllContainers, OpNotIn, 0)}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("ParseRules = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseRules("[]"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ParseRules([]) = %#v, %v; want an empty, known list", got, err)
	}
	bad := map[string]string{
		"not JSON":          `restart on 42`,
		"an object":         `{"action":"Restart"}`,
		"unknown action":    `[{"action":"Recreate","exitCodes":{"operator":"In","values":[1]}}]`,
		"lower-case action": `[{"action":"restart","exitCodes":{"operator":"In","values":[1]}}]`,
		"unknown operator":  `[{"action":"Restart","exitCodes":{"operator":"Equals","values":[1]}}]`,
		"no exitCodes":      `[{"action":"Restart"}]`,
		"a string value":    `[{"action":"Restart","exitCodes":{"operator":"In","values":["1"]}}]`,
		"a fraction":        `[{"action":"Restart","exitCodes":{"operator":"In","values":[1.5]}}]`,
		"unknown field":     `[{"action":"Restart","when":{"exitCodes":{"operator":"In","values":[1]}}}]`,
		"trailing data":     `[] []`,
	}
	for name, in := range bad {
		if rules, err := ParseRules(in); err == nil {
			t.Errorf("%s: ParseRules(%s) = %v, want an error", name, in, rules)
		}
	}
}

// TestParseRulesSameMessage: with several unknown fields, the message names the same one every
// time (FuzzParse found it naming whichever a map walk met first).
func TestParseRulesSameMessage(t *testing.T) {
	const in = `[{"action":"Restart","exitCodes":{"zz":1,"aa":2,"operator":"In","values":[1]}}]`
	_, want := ParseRules(in)
	if want == nil || !strings.Contains(want.Error(), `unknown field "aa"`) {
		t.Fatalf("ParseRules(%s) = %v, want the error to name the field aa", in, want)
	}
	for range 50 {
		if _, err := ParseRules(in); err.Error() != want.Error() {
			t.Fatalf("ParseRules(%s):\n%v\nthen\n%v", in, want, err)
		}
	}
}
