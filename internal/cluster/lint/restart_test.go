package lint

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/restart"
)

// wrappedWith is the wrapped app with more fields (flow style), e.g. restartPolicyRules or env.
func wrappedWith(fields string) string {
	return strings.TrimSuffix(wrapped, "}") + ", " + fields + "}"
}

// TestRestartsInPlace is rule 7: the app must not run again after its sidecars were told to quit.
func TestRestartsInPlace(t *testing.T) {
	onFailure := func(cs ...string) string {
		return `{restartPolicy: OnFailure, containers: [` + strings.Join(cs, ", ") + `]}`
	}
	told := `env: [{name: SIDESYNC_RESTART_POLICY, value: OnFailure}]`
	rules42 := `restartPolicy: Never, restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42, 43]}}]`
	toldRules42 := `env: [{name: SIDESYNC_RESTART_POLICY, value: Never}, {name: SIDESYNC_RESTART_RULES, value: '[{"action":"Restart","exitCodes":{"operator":"In","values":[42,43]}}]'}]`
	restarts := func(s Severity) short { return short{s, RuleRestartsInPlace, "job"} }
	runCases(t, []lintCase{
		{"pod OnFailure, sidesync told", job(noAnn, onFailure(wrappedWith(told), istioProxy)), []short{restarts(Warning)}},
		{"pod OnFailure, sidesync told by a ConfigMap", job(noAnn, onFailure(wrappedWith(
			`env: [{name: SIDESYNC_RESTART_POLICY, valueFrom: {configMapKeyRef: {name: c, key: k}}}]`), istioProxy)), []short{restarts(Warning)}},
		{"pod OnFailure, sidesync told by flag", job(noAnn, onFailure(
			`{name: job, image: x, command: [/sidesync/bin/sidesync, --restart-policy=OnFailure, "--", run]}`, istioProxy)), []short{restarts(Warning)}},
		{"pod OnFailure, an empty variable tells nothing", job(noAnn, onFailure(wrappedWith(`env: [{name: SIDESYNC_RESTART_POLICY, value: ""}]`), istioProxy)),
			[]short{restarts(Error)}},
		{"pod OnFailure, sidesync not told", job(noAnn, onFailure(wrapped, istioProxy)), []short{restarts(Error)}},
		{"pod OnFailure, app quits the sidecar itself", job(noAnn, onFailure(quitCurl, istioProxy)), []short{restarts(Warning)}},
		{"pod OnFailure, nothing quits the sidecar", job(noAnn, onFailure(app, istioProxy)),
			[]short{errorOf(RuleNeverQuits, "istio-proxy"), restarts(Warning)}},
		{"pod OnFailure, native sidecars only", job(noAnn, `{restartPolicy: OnFailure, containers: [`+wrapped+`], initContainers: [`+fluentBitProbe+`]}`),
			[]short{nativeOnly}},
		{"pod OnFailure, no sidecar", job(noAnn, onFailure(wrapped)), []short{noSidecar}},
		{"a Pod with restartPolicy OnFailure, not told", podYAML(noAnn, onFailure(wrapped, istioProxy)),
			[]short{restarts(Error)}},
		{"rules, sidesync told", job(noAnn, containers(wrappedWith(rules42+", "+toldRules42), istioProxy)), []short{restarts(Warning)}},
		{"rules, sidesync not told", job(noAnn, containers(wrappedWith(rules42), istioProxy)), []short{restarts(Error)}},
		{"rules, sidesync told something else", job(noAnn, containers(wrappedWith(rules42+`, env: [{name: SIDESYNC_RESTART_POLICY, value: Never}]`), istioProxy)),
			[]short{restarts(Error)}},
		{"rules, sidesync told what it cannot read: it does not start", job(noAnn, containers(wrappedWith(rules42+`, env: [{name: SIDESYNC_RESTART_POLICY, value: sometimes}]`), istioProxy)),
			[]short{errorOf(RuleWrapperConfig, "job"), errorOf(RuleNeverQuits, "istio-proxy")}},
		{"a stale OnFailure under Never: the quit is skipped after a failure", job(noAnn, containers(wrappedWith(`env: [{name: SIDESYNC_RESTART_POLICY, value: OnFailure}]`), istioProxy)),
			[]short{restarts(Error)}},
		{"container restartPolicy Always: restarts after success", job(noAnn, containers(wrappedWith(`restartPolicy: Always, `+told), istioProxy)),
			[]short{restarts(Error)}},
		{"container restartPolicy Never under a pod OnFailure", job(noAnn, onFailure(wrappedWith(`restartPolicy: Never`), istioProxy)), nil},
		{"rules on the sidecar are not the app's", job(noAnn, containers(wrapped,
			`{name: istio-proxy, image: istio/proxyv2, `+rules42+`}`)), nil},
		{"only the wrapped container counts (and the other should be wrapped)", job(noAnn, containers(wrapped, `{name: helper, image: x, `+rules42+`}`, istioProxy)),
			[]short{errorOf(RulePartlyWrapped, "helper")}},
		{"unwrapped apps each count", job(noAnn, containers(quitCurl, `{name: helper, image: x, `+rules42+`}`, istioProxy)),
			[]short{{Warning, RuleRestartsInPlace, "helper"}}},
	})
}

// TestRestartMessages checks that the message names the exit codes and the cause.
func TestRestartMessages(t *testing.T) {
	fs := lintOne(t, job(noAnn, containers(wrappedWith(
		`restartPolicy: Never, restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42, 43, 7]}}]`), istioProxy)))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1:\n%s", len(fs), lines(fs))
	}
	want := "Job/report: error: container job restarts in place on exit codes 7, 42-43 (its restartPolicyRules), and the sidesync it runs is not told so"
	if got := fs[0].String(); !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s...", got, want)
	}
}

// TestCodesString is how a set of exit codes reads.
func TestCodesString(t *testing.T) {
	in := func(values ...int32) []restart.Rule {
		return []restart.Rule{{Action: restart.ActionRestart, ExitCodes: &restart.ExitCodes{Operator: restart.OpIn, Values: values}}}
	}
	notIn := func(values ...int32) []restart.Rule {
		return []restart.Rule{{Action: restart.ActionRestart, ExitCodes: &restart.ExitCodes{Operator: restart.OpNotIn, Values: values}}}
	}
	tests := []struct {
		spec restart.Spec
		want string
	}{
		{restart.Spec{Policy: restart.Never}, "no exit code"},
		{restart.Spec{Policy: restart.Always}, "every exit code"},
		{restart.Spec{Policy: restart.OnFailure}, "every exit code but 0"},
		{restart.Spec{Policy: restart.Never, Rules: in(42)}, "exit code 42"},
		{restart.Spec{Policy: restart.Never, Rules: in(1, 2, 3, 137, 143)}, "exit codes 1-3, 137, 143"},
		{restart.Spec{Policy: restart.Never, Rules: notIn(0, 1)}, "every exit code but 0-1"},
		{restart.Spec{Policy: restart.Never, Rules: in(255)}, "exit code 255"},
		{restart.Spec{Policy: restart.OnFailure, Rules: notIn(0, 69)}, "every exit code but 0"},
	}
	for _, tt := range tests {
		if got := restartCodes(tt.spec).String(); got != tt.want {
			t.Errorf("restartCodes(%+v) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}
