package rescue

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// The policy's CEL is judged on a real API server by cmd/sidesync-rescuer's tests (through the
// chart, generated from Policy); these tests check what it is made of.

func testPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return Policy(PolicyOptions{Image: "registry.example/sidesync:v1", Namespace: "rescue-system", ServiceAccount: "rescuer"})
}

// TestPolicyScope: the policy judges only the rescuer's additions of ephemeral containers, and
// refuses what it cannot judge.
func TestPolicyScope(t *testing.T) {
	policy, binding := testPolicy()
	if policy.Name != PolicyName || binding.Name != PolicyName || binding.Spec.PolicyName != PolicyName {
		t.Errorf("names %q, %q -> %q", policy.Name, binding.Name, binding.Spec.PolicyName)
	}
	if fp := policy.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", fp)
	}
	if got := binding.Spec.ValidationActions; !cmp.Equal(got, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("validationActions %v, want Deny", got)
	}
	rules := policy.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !cmp.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}) ||
		!cmp.Equal(rules[0].Resources, []string{"pods/ephemeralcontainers"}) || !cmp.Equal(rules[0].APIGroups, []string{""}) {
		t.Errorf("resource rules %+v, want UPDATE of pods/ephemeralcontainers", rules)
	}
	conds := policy.Spec.MatchConditions
	if len(conds) != 1 || conds[0].Expression != `request.userInfo.username == "system:serviceaccount:rescue-system:rescuer"` {
		t.Errorf("match conditions %+v: want the service account's user name", conds)
	}
	if v := policy.Spec.Variables[0]; v.Name != "image" || v.Expression != `"registry.example/sidesync:v1"` {
		t.Errorf("the image variable: %+v", v)
	}
}

// TestPolicyOneHome: the policy is written from the names the decision uses, not copies of them.
func TestPolicyOneHome(t *testing.T) {
	policy, _ := testPolicy()
	var all strings.Builder
	for _, v := range policy.Spec.Validations {
		all.WriteString(v.Expression + "\n")
		if !strings.HasPrefix(v.Message, PolicyMessage) && !strings.HasPrefix(v.MessageExpression, `"`+PolicyMessage) {
			t.Errorf("validation %q: its message does not begin with PolicyMessage", v.Expression)
		}
		if v.Reason == nil || *v.Reason != "Forbidden" {
			t.Errorf("validation %q: reason %v, want Forbidden", v.Expression, v.Reason)
		}
	}
	want := []string{strconv.Quote(ContainerPrefix), strconv.Quote("--" + contract.FlagSidecar)}
	for i, w := range QuitCommand() {
		want = append(want, "c.command["+strconv.Itoa(i)+"] == "+strconv.Quote(w))
	}
	want = append(want, Credentials()...)
	want = append(want, catalog.ProfileNames()...)
	for _, w := range want {
		if !strings.Contains(all.String(), w) {
			t.Errorf("no validation mentions %s", w)
		}
	}
}

// TestCredentials: the variables a quit container may carry are the catalog's credentials.
func TestCredentials(t *testing.T) {
	var want []string
	for _, e := range catalog.Entries() {
		if e.Credential != nil {
			want = append(want, e.Credential.Env)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if got := Credentials(); len(got) == 0 || !cmp.Equal(got, want) {
		t.Errorf("Credentials() = %q, want %q", got, want)
	}
}

// TestPolicyBoundsTheFlags: the listed places of --sidecar and its specs reach the longest
// command the policy admits, and no further.
func TestPolicyBoundsTheFlags(t *testing.T) {
	cel := quitCommandCEL()
	n := len(QuitCommand())
	last := strconv.Itoa(n + 2*MaxQuitSidecars - 1)
	if !strings.Contains(cel, "size(c.command) <= "+strconv.Itoa(n+2*MaxQuitSidecars)) || !strings.Contains(cel, ", "+last+"]") ||
		strings.Contains(cel, ", "+strconv.Itoa(n+2*MaxQuitSidecars)+"]") {
		t.Errorf("the places do not end at %s:\n%s", last, cel)
	}
}
