package lint

import (
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What lint reads of a container that runs sidesync, and of the other ways a sidecar is told to
// quit.

// Names of the wrapper's contract that lint reads (README "Configuration"; the restart ones are
// internal/inject's EnvRestartPolicy and EnvRestartRules, the SIDESYNC_* variables of the
// wrapper's --restart-policy and --restart-rules). Lint does not import internal/inject: it
// recognises sidesync by the base name of the command, wherever it is mounted.
const (
	wrapperName        = "sidesync"
	envDisabled        = "SIDESYNC_DISABLED"
	envQuit            = "SIDESYNC_QUIT"
	envRestartPolicy   = "SIDESYNC_RESTART_POLICY"
	envRestartRules    = "SIDESYNC_RESTART_RULES"
	flagRestartPolicy  = "restart-policy"
	flagRestartRules   = "restart-rules"
	wrapperWaitCommand = "wait" // `sidesync wait -- CMD` waits and never quits
)

// isWrapped reports whether the container runs sidesync: the first word of its command is a
// program called sidesync (the injected /sidesync/bin/sidesync, or one of the user's own).
func isWrapped(c *corev1.Container) bool {
	return len(c.Command) > 0 && path.Base(c.Command[0]) == wrapperName
}

// wrapperArgs are sidesync's own words: after the program, up to the "--" before the command;
// none when c does not run sidesync.
func wrapperArgs(c *corev1.Container) []string {
	if !isWrapped(c) {
		return nil
	}
	words := append(slices.Clone(c.Command[1:]), c.Args...)
	if i := slices.Index(words, "--"); i >= 0 {
		words = words[:i]
	}
	return words
}

// envValue is the literal value of the container's variable name; a value from a ConfigMap or
// a Secret is not known here. README "Configuration": an empty variable counts as unset.
func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, e.ValueFrom == nil && e.Value != ""
		}
	}
	return "", false
}

// boolFlag reads a boolean flag of sidesync in args: --name (true), --name=V; set reports
// whether it is there at all.
func boolFlag(args []string, name string) (on, set bool) {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name {
			return true, true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			on, _ := strconv.ParseBool(v)
			return on, true
		}
	}
	return false, false
}

// quitsSidecars reports whether the sidesync in c tells the sidecars to quit: unless it is
// disabled, runs with --quit never, or only waits (`sidesync wait`). A flag beats its variable.
func quitsSidecars(c *corev1.Container) bool {
	args := wrapperArgs(c)
	if len(args) > 0 && args[0] == wrapperWaitCommand {
		return false
	}
	quit, set := flagValue(args, "quit")
	if v, ok := envValue(c, envQuit); !set && ok {
		quit = v
	}
	return !disabled(c) && quit != "never"
}

// disabled reports whether the sidesync in c touches no sidecar (--disabled, SIDESYNC_DISABLED).
func disabled(c *corev1.Container) bool {
	on, set := boolFlag(wrapperArgs(c), "disabled")
	if v, ok := envValue(c, envDisabled); !set && ok {
		on, _ = strconv.ParseBool(v)
	}
	return on
}

// toldRestarts reports whether sidesync in c is told how its container restarts, by flag or by
// variable (from anywhere, a ConfigMap too), so that it keeps the sidecars for a restart in
// place.
func toldRestarts(c *corev1.Container) bool {
	args := wrapperArgs(c)
	_, policy := flagValue(args, flagRestartPolicy)
	_, rules := flagValue(args, flagRestartRules)
	return policy || rules || envSet(c, envRestartPolicy) || envSet(c, envRestartRules)
}

// envSet reports whether the container sets the variable: to a value other than "" (which
// counts as unset), or from a ConfigMap or a Secret.
func envSet(c *corev1.Container, name string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name && (e.Value != "" || e.ValueFrom != nil) })
}

// toldQuit reports whether something in the pod tells the sidecar to quit: sidesync in one of
// the apps, the mesh's control plane (Kuma, for a Job's pod), or an app whose command calls the
// sidecar's quit endpoint itself (`curl -X POST localhost:15020/quitquitquit`) or runs
// linkerd-await --shutdown.
func (p *pod) toldQuit(s podSidecar) bool {
	if p.Job != nil && profileInfos()[s.profile].quitsInJobs {
		return true
	}
	quit := quitPath(s.profile)
	for _, c := range p.apps {
		if isWrapped(c) {
			if quitsSidecars(c) {
				return true
			}
			continue // its own words (--quit-url) are not calls
		}
		words := append(slices.Clone(c.Command), c.Args...)
		if quit != "" && strings.Contains(strings.Join(words, " "), quit) {
			return true
		}
		if s.profile == "linkerd" && len(words) > 0 && path.Base(words[0]) == "linkerd-await" {
			if _, on := flagValue(words, "shutdown"); on {
				return true
			}
		}
	}
	return false
}
