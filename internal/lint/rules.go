package lint

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/sidecar"
)

// Rule names: stable, for --output json and for tests.
const (
	RuleNeverQuits       = "sidecar-never-quits"             // a classic sidecar that nothing tells to quit
	RuleLinkerdShutdown  = "linkerd-shutdown-off"            // Linkerd's /shutdown is off
	RuleCloudSQLQuit     = "cloudsql-no-quitquitquit"        // the Cloud SQL Auth Proxy without --quitquitquit
	RuleCloudSQLHealth   = "cloudsql-no-health-check"        // ... without --health-check
	RuleVaultQuit        = "vault-quit-off"                  // Vault Agent's quit API is off
	RuleNoStartupProbe   = "native-sidecar-no-startup-probe" // Kubernetes does not wait for it
	RuleFailurePolicy    = "pod-failure-policy-no-container" // onExitCodes that sidecars trip
	RuleRestartsInPlace  = "restarts-in-place"               // the app runs again after its sidecars quit
	RuleNoSidecar        = "no-sidecar"                      // info: nothing for sidesync to do here
	RuleNativeWithProbes = "native-sidecars-only"            // info: Kubernetes orders and stops them
)

// neverCompletesTheKind ends the message of a sidecar that keeps its pod from completing.
const neverCompletesTheKind = "so the %s never completes"

// neverQuits (rule 1): in a pod that runs to completion, a classic sidecar that nothing tells
// to quit keeps running after the app ends, and the pod never completes.
func neverQuits(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.classic() {
		if p.toldQuit(s) {
			continue
		}
		fix := "wrap the app with sidesync (kubectl sidesync inject)"
		if len(p.wrapped()) > 0 {
			fix = "let the app's sidesync quit it (it runs --disabled, with --quit never, or as sidesync wait)"
		}
		if n := nativeFix(s); n != "" {
			fix += ", or " + n
		}
		fs = append(fs, Finding{Severity: Error, Rule: RuleNeverQuits, Container: s.container,
			Message: s.who() + " is a classic sidecar and nothing tells it to quit: it keeps running after the app ends, " +
				fmt.Sprintf(neverCompletesTheKind, p.Kind),
			Fix: fix})
	}
	return fs
}

// nativeFix says how to make the sidecar native: the injector's annotation for one an injector
// adds, else moving the container; "" when neither applies (Vault's injector has no native
// sidecars).
func nativeFix(s podSidecar) string {
	info := profileInfos()[s.profile]
	switch {
	case (s.via != "" || s.c == nil) && info.nativeFix != "":
		return "have it injected as a native sidecar (" + info.nativeFix + ")"
	case s.c != nil:
		return "run it as a native sidecar (in initContainers, with restartPolicy: Always)"
	}
	return ""
}

// quitEndpointsOff (rules 2, 3, 4): a classic sidecar whose quit endpoint is off cannot be told
// to quit, whoever tries: Linkerd without proxy-admin-shutdown, the Cloud SQL Auth Proxy without
// --quitquitquit, Vault Agent without agent-enable-quit.
func quitEndpointsOff(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	never := fmt.Sprintf(neverCompletesTheKind, p.Kind)
	var fs []Finding
	for _, s := range p.classic() {
		f := Finding{Severity: Error, Container: s.container}
		switch {
		case s.profile == "linkerd" && p.ann[linkerdShutdown] != "enabled":
			f.Rule = RuleLinkerdShutdown
			f.Message = s.who() + " is a classic sidecar whose /shutdown endpoint is off (" + linkerdShutdown +
				" is not \"enabled\"): nothing can tell it to quit, " + never
			f.Fix = "add the pod annotation " + linkerdShutdown + ": enabled (or the Helm value proxy.enableShutdownEndpoint: true), or " + nativeFix(s)
		case s.profile == "cloudsql" && s.c != nil && !proxyFlag(s, "quitquitquit"):
			f.Rule = RuleCloudSQLQuit
			f.Message = s.who() + " runs without --quitquitquit: nothing can tell it to quit, " + never
			f.Fix = "add --quitquitquit (and --admin-port if 9091 is taken), or run it as a native sidecar" + cloudSQLv1(s)
		case s.profile == "vault" && p.ann[vaultEnableQuit] != "true":
			f.Rule = RuleVaultQuit
			f.Message = s.who() + " is a classic sidecar whose quit API is off (" + vaultEnableQuit +
				" is not \"true\"): nothing can tell it to quit, " + never
			f.Fix = "add " + vaultPrePopulate + ": \"true\" if the app needs its secrets only at start (an init container renders them, no sidecar), or " +
				vaultEnableQuit + ": \"true\" and wrap the app with sidesync"
		default:
			continue
		}
		fs = append(fs, f)
	}
	return fs
}

// cloudSQLv1 adds to a fix, for the proxy's v1 image, that v1 has neither flag.
func cloudSQLv1(s podSidecar) string {
	if s.c == nil || !strings.Contains(strings.ToLower(s.c.Image), "gce-proxy") {
		return ""
	}
	return "; v1 (" + s.c.Image + ") has neither --quitquitquit nor --health-check: move to v2, gcr.io/cloud-sql-connectors/cloud-sql-proxy"
}

// proxyFlag reports whether the Cloud SQL Auth Proxy's container has the flag on, read as
// detection reads it (command and args; --flag=false counts as absent).
func proxyFlag(s podSidecar, name string) bool {
	_, on := flagValue(append(append([]string{}, s.c.Command...), s.c.Args...), name)
	return on
}

// cloudSQLHealthCheck (rule 3): without --health-check the proxy has no /startup, so sidesync
// has nothing to wait on and the app may start before the proxy is ready. A native proxy with a
// startup probe is waited for by Kubernetes instead.
func cloudSQLHealthCheck(p *pod) []Finding {
	if !p.completes {
		return nil
	}
	var fs []Finding
	for _, s := range p.sidecars {
		if s.profile != "cloudsql" || s.c == nil || proxyFlag(s, "health-check") || s.native && s.c.StartupProbe != nil {
			continue
		}
		fs = append(fs, Finding{Severity: Warning, Rule: RuleCloudSQLHealth, Container: s.container,
			Message: s.who() + " runs without --health-check: sidesync cannot wait for it, so the app may start before the proxy is ready",
			Fix:     "add --health-check (and --http-port if 9090 is taken)" + cloudSQLv1(s)})
	}
	return fs
}

// nativeWithoutStartupProbe (rule 5): Kubernetes starts the next containers as soon as a native
// sidecar's process runs, unless it has a startup probe. sidesync in the app waits for a
// sidecar it knows, so that case is fine.
func nativeWithoutStartupProbe(p *pod) []Finding {
	var fs []Finding
	for _, s := range p.sidecars {
		if !s.native || s.c == nil || s.c.StartupProbe != nil || p.waitsFor(s) {
			continue
		}
		fix := "add a startupProbe, or wrap the app with sidesync (kubectl sidesync inject), which waits for it"
		if s.profile == "" {
			fix = "add a startupProbe, or wrap the app with sidesync and name this sidecar (--sidecar http:ready=URL)"
		}
		fs = append(fs, Finding{Severity: Warning, Rule: RuleNoStartupProbe, Container: s.container,
			Message: s.who() + " is a native sidecar without a startupProbe: Kubernetes starts the app as soon as the sidecar's process runs, ready or not",
			Fix:     fix})
	}
	return fs
}

// waitsFor reports whether sidesync in one of the apps waits for the sidecar: it is a profile
// with something to wait on (the Cloud SQL Auth Proxy only with --health-check).
func (p *pod) waitsFor(s podSidecar) bool {
	sc, ok := sidecar.Profile(s.profile)
	if !ok || sc.Ready == nil || s.profile == "cloudsql" && !proxyFlag(s, "health-check") {
		return false
	}
	for _, c := range p.wrapped() {
		if noWait, _ := boolFlag(wrapperArgs(c), "no-wait"); !noWait && !disabled(c) {
			return true
		}
	}
	return false
}

// failurePolicyWithoutContainer (rule 6): a podFailurePolicy rule on exit codes without a
// containerName looks at every container, native sidecars included, which the kubelet stops
// with SIGTERM or SIGKILL (143, 137) (kubernetes-delivery.md 1.2).
func failurePolicyWithoutContainer(p *pod) []Finding {
	if p.Job == nil || p.Job.PodFailurePolicy == nil || len(p.sidecars) == 0 && len(p.wrapped()) == 0 {
		return nil
	}
	var fs []Finding
	for i, r := range p.Job.PodFailurePolicy.Rules {
		if r.OnExitCodes == nil || r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != "" {
			continue
		}
		fs = append(fs, Finding{Severity: Warning, Rule: RuleFailurePolicy,
			Message: "podFailurePolicy rule " + strconv.Itoa(i+1) + " (" + string(r.Action) + " on exit codes " +
				string(r.OnExitCodes.Operator) + " " + fmt.Sprint(r.OnExitCodes.Values) +
				") has no containerName: it also matches the sidecars' exit codes (137/143 when the kubelet kills them)",
			Fix: "set containerName to the app's container (" + p.appNames() + ")"})
	}
	return fs
}

// nothingToDo (rule 8, info): a pod without sidecars, or whose sidecars are all native with
// startup probes, needs nothing of sidesync for its sidecars.
func nothingToDo(p *pod) []Finding {
	if len(p.sidecars) == 0 {
		return []Finding{{Severity: Info, Rule: RuleNoSidecar,
			Message: "no sidecar found; sidesync is not needed for sidecars here (it still keeps exit codes and reaps zombies)"}}
	}
	for _, s := range p.sidecars {
		if !s.native || s.c == nil || s.c.StartupProbe == nil {
			return nil
		}
	}
	return []Finding{{Severity: Info, Rule: RuleNativeWithProbes,
		Message: "every sidecar is native with a startup probe: Kubernetes already orders and stops them; sidesync is not needed for them"}}
}
