package lint

import (
	"strings"
	"testing"
)

// cronJob is a CronJob of apiVersion, with this concurrencyPolicy ("" for none), whose pod has
// these annotations and a classic Istio proxy that nothing tells to quit.
func cronJob(apiVersion, policy string) string {
	pol := ""
	if policy != "" {
		pol = "  concurrencyPolicy: " + policy + "\n"
	}
	return "apiVersion: " + apiVersion + "\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n" + pol +
		"  jobTemplate:\n    spec:\n      template:\n        spec: " + containers(app, istioProxy) + "\n"
}

// TestCronJobWording: a CronJob does not complete, its Jobs do; what a Job that never completes
// does to the next runs is said by its concurrencyPolicy.
func TestCronJobWording(t *testing.T) {
	for _, tt := range []struct{ policy, want string }{
		{"", "so the CronJob's Jobs never complete, and each run adds one more"},
		{"Allow", "so the CronJob's Jobs never complete, and each run adds one more"},
		{"Forbid", "so the CronJob's Job never completes, and with concurrencyPolicy: Forbid no later run starts"},
		{"Replace", "deleted, unfinished, when the next starts"},
	} {
		t.Run("policy "+tt.policy, func(t *testing.T) {
			fs := lintOne(t, cronJob("batch/v1", tt.policy))
			if len(fs) != 1 || !strings.Contains(fs[0].Message, tt.want) || strings.Contains(fs[0].Message, "CronJob never completes") {
				t.Errorf("findings:\n%s\nwant one that says %q", lines(fs), tt.want)
			}
		})
	}
}

// TestRemovedAPIVersion: a CronJob of a version no longer served gets the upgrade and its pod's
// findings at once, since its pod is where batch/v1 keeps it.
func TestRemovedAPIVersion(t *testing.T) {
	for _, v := range []string{"batch/v1beta1", "batch/v2alpha1"} {
		t.Run(v, func(t *testing.T) {
			fs := lintOne(t, cronJob(v, "Forbid"))
			want := []short{errorOf(RuleAPIVersion, ""), errorOf(RuleNeverQuits, "istio-proxy")}
			if got := shorten(fs); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("findings:\n%s\nwant %v", lines(fs), want)
			}
		})
	}
	// A version that never was is not read: the pod may be anywhere.
	fs := lintOne(t, cronJob("batch/v9", ""))
	if got := shorten(fs); len(got) != 1 || got[0].Rule != RuleAPIVersion {
		t.Errorf("findings of batch/v9:\n%s\nwant the API version's alone", lines(fs))
	}
}
