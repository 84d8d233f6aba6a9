package lint

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Rule names: stable, for --output json and for tests; what each finds is in the table below.
// The rules that find a sidecar's endpoint switched off are named in the catalog's rows
// (catalog.Switch.Rule).
const (
	RuleNeverQuits       = "sidecar-never-quits"
	RulePartlyWrapped    = "apps-partly-wrapped"
	RuleWrapperConfig    = "wrapper-refuses-config"
	RuleNoStartupProbe   = "native-sidecar-no-startup-probe"
	RuleFailurePolicy    = "pod-failure-policy-no-container"
	RuleRestartsInPlace  = "restarts-in-place"
	RuleSeveralApps      = "several-containers-no-sidecar"
	RuleAPIVersion       = "api-version-not-served"
	RuleNoSidecar        = "no-sidecar"
	RuleNativeWithProbes = "native-sidecars-only"
	RuleHandshake        = "sidecar-quits-by-handshake"
	RuleFromNamespace    = "sidecar-from-namespace"
	RuleEndpointsOff     = "sidecar-endpoints-off"
)

// rule is a row of lint's table: one rule, or one kind of catalog switch (a health check, a
// quit endpoint) standing for the rule of each catalog row that has such a switch.
type rule struct {
	// id names the rule (a Rule constant); "" in a row of switches, whose rules the catalog
	// names (catalog.Switch.Rule).
	id string
	// switchOf, in a row of switches, is the entry's switch of that kind, nil if it has none.
	switchOf func(*catalog.Entry) *catalog.Switch
	// severity, finds and short are the rule's RuleDoc; in a row of switches, finds is a format
	// of the sidecar's title and what its switch turns on ("Linkerd", "/shutdown endpoint").
	severity, finds, short string
	// ifMaybeNative, in a row of switches, ends finds for a sidecar whose mesh may inject it as a
	// native one (catalog.Maybe), whose findings mayBeNative makes warnings then.
	ifMaybeNative string
	// check finds the rule's findings in a pod, in the order of its containers.
	check func(*pod) []Finding
}

// table is every rule, in the order they run and their findings are reported; Rules and the
// README's table of rules are rendered from it. Read only.
var table = []rule{
	{id: RuleAPIVersion, severity: "error", check: notServed,
		finds: "a CronJob of an API version Kubernetes no longer serves (`batch/v1beta1`, `batch/v2alpha1`): upgrade it to `batch/v1`; its pod, the same in both, is linted as well (kubectl sidesync inject passes it through until then)",
		short: "API version no longer served: use batch/v1"},
	{id: RuleWrapperConfig, severity: "error", check: wrapperConfig,
		finds: "an app runs sidesync with settings it refuses (flags, `SIDESYNC_*` variables): it exits 2 without running the command",
		short: "sidesync refuses its settings: exit 2"},
	{id: RuleNeverQuits, severity: "error or warning", check: neverQuits,
		finds: "a classic sidecar (in the manifest, or announced by a mesh's injection annotation or label) and nothing to tell it to quit: the Job never completes; a warning when the mesh may inject it as a native sidecar",
		short: "never told to quit: the Job never completes"},
	{id: RuleEndpointsOff, severity: "error or warning", check: endpointsOff,
		finds: "a classic sidecar whose settings switch every endpoint off (Istio's `status.sidecar.istio.io/port: \"0\"`: no status server, so no quit and no readiness): nothing can tell it to quit; a warning when the mesh may inject it as a native sidecar",
		short: "endpoints off: the Job never completes"},
	{switchOf: func(e *catalog.Entry) *catalog.Switch { return e.QuitSwitch }, severity: "error", check: quitOff,
		finds:         "%s as a classic sidecar with its %s off: nothing can tell it to quit",
		ifMaybeNative: "; a warning when the mesh may inject it as a native sidecar",
		short:         "quit endpoint off: the Job never completes"},
	{id: RulePartlyWrapped, severity: "error", check: partlyWrapped,
		finds: "several app containers with classic sidecars, some running sidesync and others not, or wrappers that do not know each other: the first to end cuts the others' sidecars",
		short: "partly wrapped: first to end cuts sidecars"},
	{switchOf: func(e *catalog.Entry) *catalog.Switch { return e.ReadySwitch }, severity: "warning", check: readyOff,
		finds: "%s without its %s: sidesync cannot wait for it",
		short: "health check off: sidesync cannot wait"},
	{id: RuleNoStartupProbe, severity: "warning", check: nativeWithoutStartupProbe,
		finds: "a native sidecar without a startup probe that sidesync does not wait for: the app starts before it is ready",
		short: "no startupProbe: the app may start first"},
	{id: RuleFailurePolicy, severity: "warning", check: failurePolicyWithoutContainer,
		finds: "`onExitCodes` rules without `containerName`, which sidecars' 137 and 143 trip",
		short: "onExitCodes without containerName"},
	{id: RuleRestartsInPlace, severity: "error or warning", check: restartsInPlace,
		finds: "restarts in place (`OnFailure`, `Always`, restart rules): an error when the app runs again after exit 0, or the sidesync it runs is told otherwise than the kubelet does (it would quit the sidecars before a restart, or keep them after the last exit); a warning to bound them otherwise",
		short: "restarts in place: may run after quit"},
	{id: RuleFromNamespace, severity: "warning or info", check: fromNamespace,
		finds: "a pod annotation that only a mesh's injector reads (Istio's `proxy.istio.io/config`, Linkerd's `config.linkerd.io/*`, ...) and no request: the pod expects the mesh's sidecar from its namespace, which the manifest does not show; a warning when nothing in the apps would tell it to quit",
		short: "expects a mesh from its namespace"},
	{id: RuleSeveralApps, severity: "warning", check: severalApps,
		finds: "a Job of several regular containers and no sidecar sidesync knows: one that never ends on its own (a log shipper) keeps the Job running",
		short: "one container that never ends holds the Job"},
	{id: RuleHandshake, severity: "info", check: handshake,
		finds: "a classic sidecar that a shell script of its own ends once the app writes a file on a shared volume (a hand-written shutdown handshake): it works; a native sidecar would be simpler",
		short: "hand-written handshake: works"},
	{id: RuleNoSidecar, severity: "info", check: noSidecarFound,
		finds: "no sidecar: nothing for sidesync to do for sidecars",
		short: "no sidecar: nothing to do"},
	{id: RuleNativeWithProbes, severity: "info", check: nativeSidecarsOnly,
		finds: "every sidecar is native with a startup probe: Kubernetes orders and stops them",
		short: "native sidecars only: not needed"},
}

// neverCompletes ends the message of a sidecar that keeps its pod from completing: "so the Job
// never completes". A CronJob never completes, its Jobs do; what a Job that never completes does
// to the next runs depends on its concurrencyPolicy.
func (p *pod) neverCompletes() string {
	if p.Kind != manifest.CronJob {
		return "so the " + string(p.Kind) + " never completes"
	}
	switch p.ConcurrencyPolicy {
	case "Forbid":
		return "so the CronJob's Job never completes, and with concurrencyPolicy: Forbid no later run starts"
	case "Replace":
		return "so the CronJob's Job never completes: each run's Job is deleted, unfinished, when the next starts (concurrencyPolicy: Replace)"
	}
	return "so the CronJob's Jobs never complete, and each run adds one more that keeps running (concurrencyPolicy: Allow)"
}

// neverQuits (rule 1): in a pod that runs to completion, a classic sidecar that nothing tells
// to quit keeps running after the app ends, and the pod never completes. A sidecar only
// announced, which the injector may add as a native one, is a warning.
func neverQuits(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.classic() {
		if p.toldQuit(s) || s.EndpointsOff != "" { // endpointsOff says why nothing can
			continue
		}
		fix := "wrap the apps with sidesync (kubectl sidesync inject; an app without a command needs --resolve)"
		switch ws := p.wrapped(); {
		case s.QuitOff != nil && s.QuitOff.Unavailable: // no quit endpoint at all: wrapping cannot help
			fix = s.QuitOff.Fix
		case len(ws) > 0:
			fix = "let the apps' sidesync quit it (" + whyNoQuit(ws) + ")"
		}
		if n := p.nativeFix(s); n != "" {
			fix += ", or " + n
		}
		f := Finding{Severity: Error, Rule: RuleNeverQuits, Container: s.ContainerName(),
			Message: p.who(s) + " is a classic sidecar and nothing tells it to quit: it keeps running after the app ends, " +
				p.neverCompletes(), Fix: fix}
		fs = append(fs, mayBeNative(s, f))
	}
	return fs
}

// mayBeNative makes a finding about a classic sidecar a warning that says why, when the sidecar is
// only announced and its mesh may inject it as a native one (catalog.Sidecar.NativeMaybe): the
// kubelet then stops it, and nothing of the finding holds. Every rule about a classic sidecar's
// quit goes through it, so that one proxy gets one severity.
func mayBeNative(s *catalog.Sidecar, f Finding) Finding {
	if s.NativeMaybe && f.Severity == Error {
		f.Severity = Warning
		f.Message = "if your mesh injects classic sidecars (" + s.Entry.Native.Why + "), " + f.Message
	}
	return f
}

// toldQuit reports whether something in the pod tells the sidecar to quit: sidesync in the apps,
// the mesh's control plane (Kuma, for a Job's pod), or an app whose own command calls the
// sidecar's quit endpoint (`curl -X POST localhost:15020/quitquitquit`) or runs
// linkerd-await --shutdown.
func (p *pod) toldQuit(s *catalog.Sidecar) bool {
	if s.Handshake != "" {
		return true
	}
	if s.Entry == nil {
		return false
	}
	if p.Kind != manifest.Pod && s.Entry.QuitsInJobs {
		return true
	}
	quit := quitPath(s.Entry)
	for _, a := range p.apps {
		switch {
		case a.w != nil && a.w.quits():
			return true
		case a.w != nil:
			continue // its own words (--quit-url) are not calls
		case callsQuit(a.c, quit), s.Entry.QuitBy(a.c):
			return true
		}
	}
	return false
}

// whyNoQuit says why the apps' sidesync tells no sidecar to quit: "job runs --disabled".
func whyNoQuit(ws []*appContainer) string {
	var why []string
	for _, a := range ws {
		switch w := a.w; {
		case w.err != nil:
			why = append(why, a.c.Name+"'s does not start")
		case w.mode != config.ModeRun:
			why = append(why, a.c.Name+"'s only waits (sidesync wait)")
		case w.cfg.Disabled:
			why = append(why, a.c.Name+"'s runs --disabled")
		case w.cfg.QuitPolicy == config.QuitNever:
			why = append(why, a.c.Name+"'s runs with --quit never")
		}
	}
	return strings.Join(why, ", ")
}

// quitPath is the path of the profile's quit call ("/quitquitquit"), or "" if it has none.
func quitPath(e *catalog.Entry) string {
	if e.Sidecar.Quit == nil {
		return ""
	}
	u, err := url.Parse(e.Sidecar.Quit.URL)
	if err != nil {
		return ""
	}
	return u.Path
}

// nativeFix says how to make the sidecar native: the exact change where kubectl sidesync inject
// --native would make it (inject.Conversions, the one decision), the injector's annotation for
// one an injector adds, else moving the container; "" when none applies (Vault's injector has no
// native sidecars).
func (p *pod) nativeFix(s *catalog.Sidecar) string {
	if s.Container != nil {
		if c, ok := p.conversions[s.Container.Name]; ok && c.Native {
			return "run it as a native sidecar, as kubectl sidesync inject --native does: " + changeText(c.Change)
		}
	}
	switch {
	case s.Entry != nil && len(s.Entry.Native.Marks) > 0 && (s.Container == nil || s.Entry.Container == s.Container.Name):
		return "have it injected as a native sidecar (" + s.Entry.Native.Marks[0].YAML() + ")"
	case s.Container != nil && s.Entry != nil && len(s.Entry.Marks) == 0:
		return "run it as a native sidecar (in initContainers, with restartPolicy: Always)"
	case s.Container != nil && s.Entry == nil:
		return "run it as a native sidecar (in initContainers, with restartPolicy: Always)"
	}
	return ""
}

// changeText is a conversion to a native sidecar as a fix: "move it into initContainers with
// restartPolicy: Always, startupProbe: {httpGet: {path: /startup, port: 9090}}, and env
// CSQL_PROXY_HEALTH_CHECK=true".
func changeText(ch catalog.NativeChange) string {
	t := "move it into initContainers with restartPolicy: Always"
	if ch.Probe {
		t += ", startupProbe: {httpGet: {path: " + ch.Path + ", port: " + strconv.Itoa(ch.Port) + "}}"
	}
	var env []string
	for _, e := range ch.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if len(env) > 0 {
		t += ", and env " + strings.Join(env, ", ")
	}
	if !ch.Probe {
		t += " (" + ch.Why + ")"
	}
	return t
}

// endpointsOff: a classic sidecar whose settings switch all its endpoints off (Istio's status
// port 0) can be neither waited for nor told to quit, by sidesync or anyone.
func endpointsOff(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.classic() {
		if s.EndpointsOff == "" {
			continue
		}
		f := Finding{Severity: Error, Rule: RuleEndpointsOff, Container: s.ContainerName(),
			Message: p.who(s) + " is a classic sidecar whose " + s.EndpointsOff + " switches its endpoints off: nothing can tell it to quit, " + p.neverCompletes(),
			Fix:     "remove " + s.EndpointsOff}
		if n := p.nativeFix(s); n != "" {
			f.Fix += ", or " + n
		}
		fs = append(fs, mayBeNative(s, f))
	}
	return fs
}

// quitOff (one rule per switch, named in the catalog: linkerd-shutdown-off,
// cloudsql-no-quitquitquit, vault-quit-off): a classic sidecar whose quit endpoint is off cannot
// be told to quit, whoever tries.
func quitOff(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	never := p.neverCompletes()
	var fs []Finding
	for _, s := range p.classic() {
		off := s.QuitOff
		if off == nil || s.Handshake != "" {
			continue // a handshake of its own ends it
		}
		f := Finding{Severity: Error, Rule: off.Rule, Container: s.ContainerName(),
			Message: p.who(s) + " is a classic sidecar whose " + off.What + " is off: nothing can tell it to quit, " + never,
			Fix:     off.Fix}
		if n := p.nativeFix(s); n != "" {
			f.Fix += ", or " + n
		}
		switch {
		case off.Hidden != "":
			// Its value is in a ConfigMap, a Secret or a field: it may well be on.
			f.Severity = Warning
			f.Message = p.who(s) + " is a classic sidecar whose " + off.What + " is switched by " + off.Hidden +
				", whose value the manifest does not show (valueFrom): unless it is true, nothing can tell it to quit, " + never
			f.Fix = "make sure it is true, or give it a literal value"
		case !off.Certain && s.Entry.QuitSwitch.Maybe != "":
			f.Message = p.who(s) + " is a classic sidecar whose " + off.What + " is off unless the cluster turns it on (" +
				s.Entry.QuitSwitch.Maybe + "): otherwise nothing can tell it to quit, " + never
		}
		fs = append(fs, mayBeNative(s, f))
	}
	return fs
}

// readyOff (named in the catalog: cloudsql-no-health-check): a classic sidecar whose health
// check is off cannot be waited for. A native one is for the startup-probe rule.
func readyOff(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.classic() {
		switch off := s.ReadyOff; {
		case s.Handshake != "":
			// Its handshake is the app's business; sidesync does not wait for it.
		case off != nil && off.Hidden != "":
			fs = append(fs, Finding{Severity: Warning, Rule: off.Rule, Container: s.ContainerName(),
				Message: p.who(s) + "'s " + off.What + " is switched by " + off.Hidden + ", whose value the manifest does not show (valueFrom): unless it is true, sidesync cannot wait for it",
				Fix:     "make sure it is true, or give it a literal value"})
		case off != nil:
			fs = append(fs, Finding{Severity: Warning, Rule: off.Rule, Container: s.ContainerName(),
				Message: p.who(s) + " runs without its " + off.What + ": sidesync cannot wait for it, so the app may start before it is ready",
				Fix:     off.Fix})
		}
	}
	return fs
}

// partlyWrapped (new): with classic sidecars that sidesync tells to quit, every app must run
// sidesync and know the others: a wrapper tells the sidecars to quit when its own command ends,
// and it waits for the other apps only when it knows them (Argo's main and wait, an app and
// its uploader).
func partlyWrapped(p *pod) []Finding {
	quitters := slices.DeleteFunc(p.wrapped(), func(a *appContainer) bool { return !a.w.quits() })
	if !p.completes || len(quitters) == 0 || len(p.apps) < 2 || !slices.ContainsFunc(p.classic(), func(s *catalog.Sidecar) bool { return s.QuitOff == nil || !s.QuitOff.Certain }) {
		return nil
	}
	if un := p.unwrapped(); len(un) > 0 {
		w := p.wrapped()
		return []Finding{{Severity: Error, Rule: RulePartlyWrapped, Container: un[0].c.Name,
			Message: fmt.Sprintf("%s %s sidesync and %s %s not: the sidecars are told to quit when %s, while %s may still run and lose them",
				containersOf(w), plural3(w, "runs", "run"), containersOf(un), plural3(un, "does", "do"), ending(w), names(un)),
			Fix: "wrap every app container (kubectl sidesync inject wraps them all, and makes them peers)"}}
	}
	var alone []*appContainer
	for _, a := range quitters {
		if !a.w.knowsPeers(p, a) {
			alone = append(alone, a)
		}
	}
	if len(alone) == 0 {
		return nil
	}
	return []Finding{{Severity: Error, Rule: RulePartlyWrapped, Container: alone[0].c.Name,
		Message: fmt.Sprintf("%s %s the sidecars to quit when %s own command ends, without waiting for the other app containers: the first to end cuts the others' sidecars",
			containersOf(alone), plural3(alone, "tells", "each tell"), plural3(alone, "its", "their")),
		Fix: "inject again (kubectl sidesync inject makes the wrapped containers peers), or give each --peers, --state-dir (a shared emptyDir) and --container"}}
}

// wrapperConfig (new): sidesync refuses settings it cannot read: it exits 2 without running the
// command, and never tells the sidecars to quit.
func wrapperConfig(p *pod) []Finding {
	var fs []Finding
	for _, a := range p.wrapped() {
		if a.w.err == nil {
			continue
		}
		msg := strings.ReplaceAll(a.w.err.Error(), "\n", "; ")
		fs = append(fs, Finding{Severity: Error, Rule: RuleWrapperConfig, Container: a.c.Name,
			Message: "container " + a.c.Name + " runs sidesync with settings it refuses (" + msg + "): it exits 2 without running the command",
			Fix:     "correct the flags or SIDESYNC_* variables named"})
	}
	return fs
}

// nativeWithoutStartupProbe (rule 5): Kubernetes starts the next containers as soon as a native
// sidecar's process runs, unless it has a startup probe. sidesync in the app waits for a
// sidecar it knows whose health check is on, so that case is fine; for one whose health check is
// off, the fix is to switch it on and probe it, never to wrap the app.
func nativeWithoutStartupProbe(p *pod) []Finding {
	var fs []Finding
	for _, s := range p.sorted.Sidecars {
		if !s.Native || s.Container == nil || s.StartupProbe || p.waitsFor(s) {
			continue
		}
		fix := "add a startupProbe, or wrap the apps with sidesync (kubectl sidesync inject), which waits for it"
		switch {
		case s.ReadyOff != nil && s.ReadyOff.Hidden == "":
			fix = s.ReadyOff.Fix + " and a startupProbe on it"
		case s.Entry == nil:
			fix = "add a startupProbe, or wrap the apps with sidesync and name this sidecar (--sidecar http:ready=URL)"
		case s.Profile.Ready == nil:
			fix = "add a startupProbe"
		}
		fs = append(fs, Finding{Severity: Warning, Rule: RuleNoStartupProbe, Container: s.Container.Name,
			Message: p.who(s) + " is a native sidecar without a startupProbe: Kubernetes starts the app as soon as the sidecar's process runs, ready or not",
			Fix:     fix})
	}
	return fs
}

// waitsFor reports whether sidesync in one of the apps waits for the sidecar: a profile with a
// health check that is on.
func (p *pod) waitsFor(s *catalog.Sidecar) bool {
	if s.Entry == nil || s.Profile.Ready == nil {
		return false
	}
	return slices.ContainsFunc(p.wrapped(), func(a *appContainer) bool { return a.w.waits() })
}

// failurePolicyWithoutContainer (rule 6): a podFailurePolicy rule on exit codes without a
// containerName looks at every container, native sidecars included, which the kubelet stops
// with SIGTERM or SIGKILL (143, 137).
func failurePolicyWithoutContainer(p *pod) []Finding {
	if p.JobSpec == nil || len(p.sorted.Sidecars) == 0 && len(p.wrapped()) == 0 {
		return nil
	}
	var fs []Finding
	for i, r := range exitCodeRules(p.JobSpec) {
		if r.container != "" {
			continue
		}
		fs = append(fs, Finding{Severity: Warning, Rule: RuleFailurePolicy,
			Message: "podFailurePolicy rule " + strconv.Itoa(i+1) + " (" + r.action + " on exit codes " + r.operator + " " + r.values +
				") has no containerName: it also matches the sidecars' exit codes (137/143 when the kubelet kills them)",
			Fix: "set containerName to the app's container (" + p.appNames() + ")"})
	}
	return fs
}

// exitCodeRule is a podFailurePolicy rule on exit codes, as much of it as lint reads.
type exitCodeRule struct {
	action, container, operator, values string
}

// exitCodeRules reads the podFailurePolicy's rules from the Job's spec; a rule that is not on
// exit codes is the zero value with a container, so that nothing reports it.
func exitCodeRules(job map[string]any) []exitCodeRule {
	policy, _ := job["podFailurePolicy"].(map[string]any)
	rules, _ := policy["rules"].([]any)
	var out []exitCodeRule
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		codes, ok := rm["onExitCodes"].(map[string]any)
		if !ok {
			out = append(out, exitCodeRule{container: "-"})
			continue
		}
		out = append(out, exitCodeRule{action: manifest.Str(rm, "action"), container: manifest.Str(codes, "containerName"),
			operator: manifest.Str(codes, "operator"), values: fmt.Sprint(codes["values"])})
	}
	return out
}

// severalApps (new): a pod that runs to completion with several regular containers and no
// sidecar sidesync knows may still hold one that never ends (a log shipper running tail -F, a
// proxy nobody announced): it keeps the Job running (the Kubernetes documentation's own
// example of the problem).
func severalApps(p *pod) []Finding {
	if !p.completes || len(p.sorted.Sidecars) > 0 || len(p.expected) > 0 || len(p.apps) < 2 {
		return nil
	}
	return []Finding{{Severity: Warning, Rule: RuleSeveralApps,
		Message: containersOf(p.apps) + " are regular containers and no sidecar sidesync knows is among them: if one of them never ends on its own (a log shipper, a proxy), it keeps running, " + p.neverCompletes(),
		Fix:     "run such a container as a native sidecar (in initContainers, with restartPolicy: Always), or name it to sidesync (--sidecar http:quit=URL) if it can be told to quit"}}
}

// handshake (info): a classic sidecar that ends by a shutdown handshake written by hand
// (catalog.HandshakeQuit) needs nothing, and the pod completes; a native sidecar does the same
// with less.
func handshake(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.classic() {
		if s.Handshake == "" {
			continue
		}
		f := Finding{Severity: Info, Rule: RuleHandshake, Container: s.ContainerName(),
			Message: p.who(s) + " ends by " + s.Handshake + "; it ends when the app does, and sidesync has nothing to do for it"}
		if n := p.nativeFix(s); n != "" {
			f.Fix = "simpler: " + n + ", and drop the handshake"
		}
		fs = append(fs, f)
	}
	return fs
}

// fromNamespace (warning or info): an annotation that only a mesh's injector reads announces that
// the pod expects the mesh's sidecar, from the namespace's request that the manifest does not
// show (a Helm chart's Job with Istio's proxy.istio.io/config): not a pod without sidecars.
// Nothing in the manifest asks for it, so inject does not wrap for it; sidesync in the apps finds
// it at run time.
func fromNamespace(p *pod) []Finding {
	var fs []Finding
	for _, x := range p.expected {
		e := x.Entry
		f := Finding{Severity: Info, Rule: RuleFromNamespace, Container: e.Container,
			Message: "the pod's annotation " + x.Key + " means something only to " + e.Title + "'s injector: the pod expects " + e.Title +
				"'s sidecar (container " + e.Container + ") from its namespace, which the manifest does not show"}
		ask := ""
		if len(e.Requests) > 0 {
			ask = "ask for it in the pod (" + e.Requests[0].String() + "), so that lint and kubectl sidesync inject see it"
		}
		switch quits := slices.ContainsFunc(p.wrapped(), func(a *appContainer) bool { return a.w.quits() }); {
		case quits:
			f.Message += "; the apps' sidesync finds it at run time"
		case p.completes:
			f.Severity = Warning
			f.Message += "; if it comes as a classic sidecar, nothing tells it to quit: it keeps running after the app ends, " + p.neverCompletes()
			f.Fix = ask
			if n := p.nativeFix(&catalog.Sidecar{Entry: e}); n != "" {
				f.Fix = strings.TrimPrefix(f.Fix+", or "+n, ", or ")
			}
		default:
			f.Fix = ask
		}
		fs = append(fs, f)
	}
	return fs
}

// noSidecarFound (info): a pod without sidecars needs nothing of sidesync for its sidecars.
func noSidecarFound(p *pod) []Finding {
	if len(p.sorted.Sidecars) > 0 || len(p.expected) > 0 || (len(p.apps) > 1 && p.completes) {
		return nil // severalApps or fromNamespace says what matters
	}
	return []Finding{{Severity: Info, Rule: RuleNoSidecar,
		Message: "no sidecar found; sidesync is not needed for sidecars here (it still keeps exit codes and reaps zombies)"}}
}

// nativeSidecarsOnly (info): a pod whose sidecars are all native with startup probes needs
// nothing of sidesync for its sidecars: Kubernetes orders and stops them. The rule is
// catalog.Pod.NativeOnly, the one inject and the admission policy leave such a pod unwrapped by.
func nativeSidecarsOnly(p *pod) []Finding {
	if !p.sorted.NativeOnly() {
		return nil
	}
	return []Finding{{Severity: Info, Rule: RuleNativeWithProbes,
		Message: "every sidecar is native with a startup probe: Kubernetes already orders and stops them; sidesync is not needed for them"}}
}
