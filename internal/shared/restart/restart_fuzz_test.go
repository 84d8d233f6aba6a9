package restart

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseRules reads arbitrary restartPolicyRules and restartPolicy text. Neither parser may
// panic. Rules that parse are re-marshalled and re-parse equal; with any policy that parses (a
// policy re-parses as itself), they decide every exit code 0..255 as Kubernetes does (the first
// rule that matches restarts; else Always restarts, OnFailure restarts a non-zero code), with a
// reason that names the rule or the policy.
func FuzzParseRules(f *testing.F) {
	for _, s := range []struct{ rules, policy string }{
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`, "Never"},
		{`[{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":[0,1,143]}}]`, "OnFailure"},
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":[1,2]}},{"action":"Restart","exitCodes":{"operator":"NotIn","values":[]}}]`, "always"},
		{`[]`, ""}, {`null`, " never "}, {`[{"action":"Recreate","exitCodes":{"operator":"In","values":[1]}}]`, "Sometimes"},
		{`[{"action":"restart","exitCodes":{"operator":"In","values":[1]}}]`, "Never"},
		{`[{"action":"Restart","exitCodes":{"operator":"Equals","values":[1]}}]`, "Never"},
		{`[{"action":"Restart"}]`, "Never"},
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":["1"]}}]`, "Never"},
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":[1.5]}}]`, "Never"},
		{`[{"action":"Restart","when":{"exitCodes":{"operator":"In","values":[1]}}}]`, "Never"},
		{`[] []`, "Never"},
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":[-1,256,2147483647]}}]`, "Never"},
		{`[{"action":"Restart","exitCodes":{"operator":"In","values":[4294967338]}}]`, "Never"},
		{`[{"action":"Restart","exitCodes":null}]`, "Never"},
	} {
		f.Add(s.rules, s.policy)
	}
	f.Fuzz(func(t *testing.T, data, policyText string) {
		policy, perr := ParsePolicy(policyText)
		if perr == nil {
			if again, err := ParsePolicy(string(policy)); err != nil || again != policy {
				t.Fatalf("ParsePolicy(%q) = %q, which reads back as %q, %v", policyText, policy, again, err)
			}
		} else if policy != Unknown {
			t.Fatalf("ParsePolicy(%q) failed but returned %q", policyText, policy)
		}
		rules, err := ParseRules(data)
		if err != nil {
			if rules != nil {
				t.Fatalf("ParseRules(%q) failed but returned %v", data, rules)
			}
			return
		}
		if rules == nil {
			t.Fatalf("ParseRules(%q) returned nil rules: given rules are known", data)
		}
		b, err := json.Marshal(rules)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRules(string(b))
		if err != nil || !reflect.DeepEqual(again, rules) {
			t.Fatalf("ParseRules(%q) = %v, marshalled %s, which reads back as %v, %v", data, rules, b, again, err)
		}
		spec := Spec{Policy: policy, Rules: rules}
		for code := 0; code <= 255; code++ {
			got, why := spec.Restarts(code)
			want, wantWhy := decide(spec, code)
			if got != want || !strings.HasPrefix(why, wantWhy) {
				t.Fatalf("%+v: Restarts(%d) = %v, %q; want %v, %q...", spec, code, got, why, want, wantWhy)
			}
		}
	})
}

// decide is Kubernetes' decision, written again independently of Restarts.
func decide(s Spec, code int) (bool, string) {
	for i, r := range s.Rules {
		in := false
		for _, v := range r.ExitCodes.Values {
			if int64(v) == int64(code) {
				in = true
			}
		}
		if (r.ExitCodes.Operator == OpIn) == in {
			return true, "restartPolicyRules[" + itoa(i) + "]"
		}
	}
	switch s.Policy {
	case Always:
		return true, "restartPolicy Always"
	case OnFailure:
		return code != 0, "restartPolicy OnFailure"
	case Never:
		return false, "restartPolicy Never"
	}
	return false, "restartPolicy unknown"
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
