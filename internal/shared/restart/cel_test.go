package restart_test

import (
	"testing"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// TestPolicyCEL: the restartPolicy PolicyCEL writes for each regular container is the one
// Effective chooses, once the wrapper reads it (ParsePolicy): evaluated as the API server does,
// for every regular container of the corpus, the examples and inject's testdata, and for every
// combination of the container's and the pod's policies (unset, blank, each policy, another case,
// a word that is none).
func TestPolicyCEL(t *testing.T) {
	env := celeval.For(t)
	expr := "object.spec.containers.map(c, " + restart.PolicyCEL("c", "object.spec") + ")[0]"
	type pair struct{ container, pod string }
	var cases []pair
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.View.Containers {
			cases = append(cases, pair{c.RestartPolicy, p.View.RestartPolicy})
		}
	}
	policies := []string{"", " ", string(restart.Never), string(restart.OnFailure), string(restart.Always), "onfailure", "Sometimes"}
	for _, c := range policies {
		for _, p := range policies {
			cases = append(cases, pair{c, p})
		}
	}
	for _, tc := range cases {
		container := map[string]any{"name": "app"}
		if tc.container != "" {
			container["restartPolicy"] = tc.container
		}
		spec := map[string]any{"containers": []any{container}}
		if tc.pod != "" {
			spec["restartPolicy"] = tc.pod
		}
		written, err := env.String(expr, map[string]any{"spec": spec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := restart.Effective(tc.container, tc.pod, nil)
		read, readErr := restart.ParsePolicy(written)
		if (wantErr != nil) != (readErr != nil) || wantErr == nil && read != want.Policy {
			t.Errorf("container %q, pod %q: Effective gives %q (%v); PolicyCEL writes %q, read as %q (%v)\nCEL: %s",
				tc.container, tc.pod, want.Policy, wantErr, written, read, readErr, expr)
		}
	}
}

// TestFormatRulesCEL: FormatRulesCEL writes what FormatRules writes, evaluated as the API server
// does, for the restartPolicyRules of every regular container of the corpus, the examples and
// inject's testdata, for rules as JSON (read with RulesFrom, as inject reads them) and for rules
// RulesFrom would refuse (no exitCodes, no values, other actions), so that every branch is
// reached; PlainRulesCEL holds for every list RulesFrom reads, and not for those FormatRulesCEL
// cannot write.
func TestFormatRulesCEL(t *testing.T) {
	env := celeval.For(t)
	format, plain := restart.FormatRulesCEL("variables.rules"), restart.PlainRulesCEL("variables.rules")
	check := func(name string, rules []restart.Rule, object any, wantPlain bool) {
		t.Helper()
		vars := map[string]any{"rules": object}
		isPlain, err := env.Bool(plain, nil, vars)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if isPlain != wantPlain {
			t.Errorf("%s: PlainRulesCEL is %v, want %v\nCEL: %s", name, isPlain, wantPlain, plain)
		}
		if !isPlain {
			return
		}
		got, err := env.String(format, nil, vars)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := restart.FormatRules(rules); got != want {
			t.Errorf("%s: FormatRules writes %s, FormatRulesCEL %s\nCEL: %s", name, want, got, format)
		}
	}
	read := 0
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		objects, _ := p.Object["spec"].(map[string]any)["containers"].([]any)
		for i, c := range p.View.Containers {
			if c.RestartPolicyRules == nil {
				continue
			}
			rules, err := restart.RulesFrom(c.RestartPolicyRules)
			if err != nil {
				continue // inject refuses the pod
			}
			read++
			check(p.Name+", container "+c.Name, rules, objects[i].(map[string]any)["restartPolicyRules"], true)
		}
	}
	if read == 0 {
		t.Errorf("no container of %v has restartPolicyRules", celeval.Sources)
	}
	for _, s := range []string{
		`[]`,
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[42,43]}}]`,
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[]}}]`,
		`[{"action":"Restart","exitCodes":{"operator":"NotIn"}}]`,
		`[{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":[0,-1,2147483647,-2147483648]}},{"action":"Restart","exitCodes":{"operator":"In","values":[1]}}]`,
	} {
		v, err := jsonlite.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		rules, err := restart.RulesFrom(v)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		check(s, rules, celeval.Object(v), true)
	}
	codes := &restart.ExitCodes{Operator: restart.OpIn, Values: []int32{3}}
	for _, tc := range []struct {
		rules []restart.Rule
		plain bool
	}{
		{[]restart.Rule{{Action: restart.ActionRestart}}, true},
		{[]restart.Rule{{Action: "Sometimes", ExitCodes: &restart.ExitCodes{Operator: "Between"}}}, true},
		{[]restart.Rule{{Action: restart.ActionRestart, ExitCodes: &restart.ExitCodes{Operator: restart.OpNotIn, Values: []int32{}}}}, true},
		{[]restart.Rule{{Action: "", ExitCodes: codes}}, false},
		{[]restart.Rule{{Action: `Re"start`, ExitCodes: codes}}, false},
		{[]restart.Rule{{Action: `Re\start`, ExitCodes: codes}}, false},
		{[]restart.Rule{{Action: "Re\nstart", ExitCodes: codes}}, false},
		{[]restart.Rule{{Action: "Redémarrer", ExitCodes: codes}}, false},
		{[]restart.Rule{{Action: restart.ActionRestart, ExitCodes: &restart.ExitCodes{Operator: "In ", Values: []int32{1}}}}, false},
		{[]restart.Rule{{Action: restart.ActionRestart, ExitCodes: codes}, {Action: "Restart!", ExitCodes: codes}}, false},
	} {
		check(restart.FormatRules(tc.rules), tc.rules, rulesObject(tc.rules), tc.plain)
	}
}

// rulesObject is rules as the API server hands them to CEL: no field for what is unset.
func rulesObject(rules []restart.Rule) []any {
	out := []any{}
	for _, r := range rules {
		m := map[string]any{"action": string(r.Action)}
		if r.ExitCodes != nil {
			ec := map[string]any{"operator": string(r.ExitCodes.Operator)}
			if r.ExitCodes.Values != nil {
				values := []any{}
				for _, v := range r.ExitCodes.Values {
					values = append(values, int64(v))
				}
				ec["values"] = values
			}
			m["exitCodes"] = ec
		}
		out = append(out, m)
	}
	return out
}
