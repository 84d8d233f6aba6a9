package restart

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// decoded is s as every reader of a pod decodes it.
func decoded(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonlite.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRulesFrom reads rules already decoded, as a Pod's container holds them, exactly as
// ParseRules reads their text; numbers of any type but json.Number, the one number type, are
// refused rather than guessed at.
func TestRulesFrom(t *testing.T) {
	for _, s := range []string{
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[1,2]}},{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":[0]}}]`,
		`[]`, `null`, `[{"action":"Restart","exitCodes":{"operator":"In","values":[]}}]`,
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[1.5]}}]`, `{"action":"Restart"}`, `[{"action":"Restart"}]`,
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[2147483648]}}]`, `[{"action":"Restart","when":{}}]`,
	} {
		want, wantErr := ParseRules(s)
		got, err := RulesFrom(decoded(t, s))
		if diff := cmp.Diff(want, got); diff != "" || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("RulesFrom(%s) = %v, %v; ParseRules %v, %v", s, got, err, want, wantErr)
		}
	}
	for _, n := range []any{int64(42), float64(42), 42, int32(42), "42"} {
		v := []any{map[string]any{"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{n}}}}
		if rules, err := RulesFrom(v); err == nil || !strings.Contains(err.Error(), "is not a whole number") {
			t.Errorf("RulesFrom with the value %#v (%T) = %v, %v; want it refused", n, n, rules, err)
		}
	}
}

// TestEffectiveRules: the rules come as decoded; nil is none known, and rules that cannot be
// read are an error, not a guess.
func TestEffectiveRules(t *testing.T) {
	in42 := []Rule{rule(ActionRestart, OpIn, 42)}
	for _, tc := range []struct {
		name, container, pod string
		rules                any
		want                 Spec
		err                  string
	}{
		{"no rules", "", "Never", nil, Spec{Policy: Never}, ""},
		{"rules as decoded", "Never", "OnFailure", decoded(t, `[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`), Spec{Policy: Never, Rules: in42}, ""},
		{"an empty list: known to have none", "", "", decoded(t, `[]`), Spec{Policy: Always, Rules: []Rule{}}, ""},
		{"rules it cannot read", "Never", "", decoded(t, `[{"action":"Reboot","exitCodes":{"operator":"In","values":[1]}}]`), Spec{}, `rule 0: action "Reboot"`},
		{"rules as text are no rules", "Never", "", `[]`, Spec{}, "not a JSON list of restartPolicyRules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Effective(tc.container, tc.pod, tc.rules)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Effective (-want +got):\n%s", diff)
			}
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Effective: %v, want an error with %q", err, tc.err)
			}
		})
	}
}
