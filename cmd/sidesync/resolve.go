package main

import (
	"context"
	"strings"

	"github.com/sidesync/sidesync/internal/detect"
	"github.com/sidesync/sidesync/internal/redact"
	"github.com/sidesync/sidesync/sidecar"
)

// resolve finds the pod's sidecars when none is configured, and logs what sidesync will
// wait for and quit, so that a pod's log says what happened and why. It reports false when
// --require-sidecar makes finding none fatal: the caller exits 69 without running the command.
func (a *app) resolve() bool {
	if a.cfg.Detect && !a.detect() {
		return false
	}
	a.describeSidecars()
	return true
}

// detect runs detection and adds what it finds to the configuration. It reports false when
// nothing was found and --require-sidecar is set.
func (a *app) detect() bool {
	r := detect.Detect(context.Background(), detect.Options{
		PodInfoDir: a.cfg.PodInfoDir, KubeAPI: a.cfg.KubeAPI, ServiceAccountDir: a.cfg.ServiceAccountDir,
		LookupEnv: a.lookupEnv,
	})
	for _, f := range r.Found {
		a.cfg.Sidecars = append(a.cfg.Sidecars, f.Sidecar)
		a.log.Info("detected sidecar", "sidecar", f.Sidecar.Name, "from", r.Source, "by", f.Why)
		for _, n := range f.Notes {
			a.log.Warn(n, "sidecar", f.Sidecar.Name)
		}
	}
	if len(r.Found) > 0 {
		return true
	}
	a.sum.sidecar = "none found"
	tried := strings.Join(r.Tried, "; ")
	switch {
	case a.cfg.RequireSidecar:
		// Said at ERROR with the same facts, since the job now fails on it.
		a.log.Error("no sidecar configured or detected, and --require-sidecar is set: not running the command",
			"tried", tried, "fix", fixOr(r.Fix), "exit", exitUnavailable)
		a.sum.outcome = "no sidecar found (--require-sidecar)"
		return false
	case r.Failed != nil:
		// Could not look is not the same as found nothing: in a default cluster a service account
		// may not read its pod, and a silent fallback would run the job without its proxy.
		a.log.Warn("no sidecar configured or detected, but detection could not look: running the command without waiting",
			"err", r.Failed, "fix", r.Fix, "tried", tried)
	default:
		a.log.Info("no sidecar configured or detected: running the command without waiting", "tried", tried)
	}
	return true
}

// fixOr is the fix for a failed detection, or the general advice when detection looked
// everywhere and found nothing.
func fixOr(fix string) string {
	if fix != "" {
		return fix
	}
	return "name the sidecars with --sidecar (or SIDESYNC_SIDECARS), or drop --require-sidecar if this pod has none"
}

// describeSidecars logs the sidecars sidesync will handle, and says when Kubernetes already does
// everything sidesync would.
func (a *app) describeSidecars() {
	handled := len(a.cfg.Sidecars) > 0
	for _, sc := range a.cfg.Sidecars {
		a.log.Debug("sidecar", "sidecar", sc.Name, "ready", urlOf(sc.Ready), "quit", quitURLOf(sc.Quit), "native", sc.Native)
		if sc.Native {
			a.log.Info("native sidecar: the kubelet stops it after the job, so it will not be told to quit", "sidecar", sc.Name)
		}
		handled = handled && sc.Native && (sc.StartupProbe || sc.Ready == nil)
	}
	if handled {
		// Said plainly: Kubernetes already orders these sidecars before the job and stops them
		// after it; what sidesync still adds is exit codes, signals and reaping.
		a.log.Info("every sidecar is native with a startup probe: Kubernetes already starts the job after them and stops them after it, so sidesync has nothing to wait for or quit")
	}
}

// urlOf is a readiness URL for the log and the check table, never with its credentials.
func urlOf(c *sidecar.Check) string {
	if c == nil {
		return "-"
	}
	return redact.String(c.URL)
}

// quitURLOf is a quit URL for the log and the check table, never with its credentials.
func quitURLOf(c *sidecar.Call) string {
	if c == nil {
		return "-"
	}
	return redact.String(c.URL)
}
