package lint

import (
	"github.com/sidesync/sidesync/internal/shared/catalog"
)

//go:generate go test -run TestREADMERules -update

// RuleDoc is what the documentation says of a rule: a row of the README's table of rules.
type RuleDoc struct {
	Rule     string
	Severity string // "error", "warning", "error or warning", "info"
	Finds    string // what it finds, one line of Markdown
	// Short is the finding in a few words, for the webhook's warnings at a Job's creation,
	// which kubectl prints one per line (at most 45 bytes, plain text).
	Short string
}

// ShortOf is the Short of a rule, "" for an unknown one.
func ShortOf(rule string) string {
	for _, r := range Rules() {
		if r.Rule == rule {
			return r.Short
		}
	}
	return ""
}

// Rules documents every rule, in the order of their findings; the rules that find a sidecar's
// endpoint switched off come from the catalog's rows.
func Rules() []RuleDoc {
	docs := []RuleDoc{
		{RuleAPIVersion, "error", "a CronJob of an API version Kubernetes no longer serves (`batch/v1beta1`, `batch/v2alpha1`): upgrade it to `batch/v1` (kubectl sidesync inject passes it through until then)",
			"API version no longer served: use batch/v1"},
		{RuleWrapperConfig, "error", "an app runs sidesync with settings it refuses (flags, `SIDESYNC_*` variables): it exits 2 without running the command",
			"sidesync refuses its settings: exit 2"},
		{RuleNeverQuits, "error or warning", "a classic sidecar (in the manifest, or announced by a mesh's injection annotation or label) and nothing to tell it to quit: the Job never completes; a warning when the mesh may inject it as a native sidecar",
			"never told to quit: the Job never completes"},
	}
	for _, e := range catalog.Entries() {
		for _, s := range []*catalog.Switch{e.QuitSwitch, e.ReadySwitch} {
			if s == nil {
				continue
			}
			sev, finds, short := "error", e.Title+" as a classic sidecar with its "+s.What+" off: nothing can tell it to quit", "quit endpoint off: the Job never completes"
			if s == e.ReadySwitch {
				sev, finds, short = "warning", e.Title+" without its "+s.What+": sidesync cannot wait for it", "health check off: sidesync cannot wait"
			}
			docs = append(docs, RuleDoc{s.Rule, sev, finds, short})
		}
	}
	return append(docs,
		RuleDoc{RulePartlyWrapped, "error", "several app containers with classic sidecars, some running sidesync and others not, or wrappers that do not know each other: the first to end cuts the others' sidecars",
			"partly wrapped: first to end cuts sidecars"},
		RuleDoc{RuleNoStartupProbe, "warning", "a native sidecar without a startup probe that sidesync does not wait for: the app starts before it is ready",
			"no startupProbe: the app may start first"},
		RuleDoc{RuleFailurePolicy, "warning", "`onExitCodes` rules without `containerName`, which sidecars' 137 and 143 trip",
			"onExitCodes without containerName"},
		RuleDoc{RuleRestartsInPlace, "error or warning", "restarts in place (`OnFailure`, `Always`, restart rules): an error when the app runs again after exit 0, or the sidesync it runs is told otherwise than the kubelet does (it would quit the sidecars before a restart, or keep them after the last exit); a warning to bound them otherwise",
			"restarts in place: may run after quit"},
		RuleDoc{RuleSeveralApps, "warning", "a Job of several regular containers and no sidecar sidesync knows: one that never ends on its own (a log shipper) keeps the Job running",
			"one container that never ends holds the Job"},
		RuleDoc{RuleNoSidecar, "info", "no sidecar: nothing for sidesync to do for sidecars", "no sidecar: nothing to do"},
		RuleDoc{RuleNativeWithProbes, "info", "every sidecar is native with a startup probe: Kubernetes orders and stops them", "native sidecars only: not needed"},
	)
}
