package main

import (
	"context"
	"strings"

	"github.com/sidesync/sidesync/internal/pod/detect"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/redact"
	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/sidecar"
)

// plan is what the resolve phase decided: the sidecars this run handles.
type plan struct {
	sidecars []sidecar.Sidecar
	// detected is what detection found, when it ran, for the summary.
	detected detectState
	// missing is set when no sidecar was found and --require-sidecar makes that fatal: the run
	// stops with 69 without starting the command.
	missing bool
	// restart is what detection read from the pod about restarting this container, and from
	// what; used only when no setting says it.
	restart     restart.Spec
	restartFrom string
}

// resolve is the first phase: the configured sidecars, or those detection finds when none is
// configured. It logs what sidesync will wait for and quit, so that a pod's log says why.
func (s *session) resolve(ctx context.Context) plan {
	p := plan{sidecars: s.cfg.Sidecars}
	if s.cfg.Detect {
		p = s.detect(ctx)
	}
	s.describeSidecars(p.sidecars)
	s.signals.await() // a stop signal must stop the wait from its first probe
	return p
}

// detect runs detection and logs what it found, or why it found nothing.
func (s *session) detect(ctx context.Context) plan {
	r := detect.Detect(ctx, detect.Options{
		PodInfoDir: s.cfg.PodInfoDir, PodInfo: s.readPodInfo(ctx), KubeAPI: s.cfg.KubeAPI, ServiceAccountDir: s.cfg.ServiceAccountDir,
		LookupEnv: s.detectEnv,
	})
	p := s.restartFromPod(r)
	for _, w := range r.Warnings {
		s.log.Warn(w)
	}
	for _, f := range r.Found {
		p.sidecars = append(p.sidecars, f.Sidecar)
		s.log.Info("detected sidecar", "sidecar", f.Sidecar.Name, "from", r.Source, "by", f.Why)
		for _, n := range f.Notes {
			s.log.Warn(n, "sidecar", f.Sidecar.Name)
		}
	}
	if len(r.Found) > 0 {
		p.detected = detectFound
		return p
	}
	p.detected = detectNoneFound
	tried := strings.Join(r.Tried, "; ")
	switch {
	case s.cfg.RequireSidecar:
		p.missing = true
		s.log.Error("no sidecar configured or detected, and --require-sidecar is set: not running the command",
			"tried", tried, "fix", fixOr(r.Fix), "exit", exitUnavailable)
	case r.Failed != nil:
		// Could not look is not the same as found nothing: in a default cluster a service account
		// may not read its pod, and a silent fallback would run the job without its proxy.
		s.log.Warn("no sidecar configured or detected, but detection could not look: running the command without waiting",
			"err", r.Failed, "fix", r.Fix, "tried", tried)
	default:
		s.log.Info("no sidecar configured or detected: running the command without waiting", "tried", tried)
	}
	return p
}

// detectEnv is the environment as detection sees it: SIDESYNC_CONTAINER is this container's
// name as the configuration settled it (--container, SIDESYNC_CONTAINER, POD_CONTAINER_NAME), so
// that the flag, too, says whose restart rules to read from the pod.
func (s *session) detectEnv(name string) (string, bool) {
	if name == contract.Env(contract.FlagContainer) && s.cfg.Container != "" {
		return s.cfg.Container, true
	}
	return s.lookupEnv(name)
}

// restartFromPod starts the plan with what detection read from the pod about restarting this
// container, and says it when no setting does.
func (s *session) restartFromPod(r detect.Result) plan {
	p := plan{restart: r.Restart, restartFrom: r.RestartFrom}
	switch {
	case s.cfg.Restart.Known():
	case r.RestartNote != "":
		s.log.Info(r.RestartNote, "fix", "set --container (SIDESYNC_CONTAINER) to this container's name, or SIDESYNC_RESTART_POLICY and SIDESYNC_RESTART_RULES")
	case r.Restart.Known():
		s.log.Debug("restart rules read from the pod", "from", r.RestartFrom, "policy", r.Restart.Policy, "rules", len(r.Restart.Rules))
	}
	return p
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
func (s *session) describeSidecars(scs []sidecar.Sidecar) {
	handled := len(scs) > 0
	for _, sc := range scs {
		s.log.Debug("sidecar", "sidecar", sc.Name, "ready", urlOf(sc.Ready), "quit", quitURLOf(sc.Quit), "native", sc.Native)
		if sc.Native {
			s.log.Info("native sidecar: the kubelet stops it after the job, so it will not be told to quit", "sidecar", sc.Name)
		}
		handled = handled && sc.Native && (sc.StartupProbe || sc.Ready == nil)
	}
	if handled {
		// Said plainly: Kubernetes already orders these sidecars before the job and stops them
		// after it; what sidesync still adds is exit codes, signals and reaping.
		s.log.Info("every sidecar is native with a startup probe: Kubernetes already starts the job after them and stops them after it, so sidesync has nothing to wait for or quit")
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
