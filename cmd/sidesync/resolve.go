package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/sidesync/sidesync/internal/pod/detect"
	"github.com/sidesync/sidesync/internal/shared/config"
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

// resolver is the first phase: which sidecars this run handles.
type resolver struct {
	cfg       *config.Config
	log       *slog.Logger
	lookupEnv func(string) (string, bool)
	signals   *signals   // awaited before the phases that a stop signal must stop
	pod       *podVolume // shared with the peers, so that the volume is read once
}

func newResolver(s *session, pod *podVolume) *resolver {
	return &resolver{cfg: s.cfg, log: s.log, lookupEnv: s.lookupEnv, signals: s.signals, pod: pod}
}

// podVolume is the downward-API volume, read once when first needed, for the peers and for
// detection alike.
type podVolume struct {
	dir  string
	info *detect.PodInfo // once read
}

// read reads the volume, the first time it is asked.
func (v *podVolume) read(ctx context.Context) *detect.PodInfo {
	if v.info == nil {
		pi := detect.ReadPodInfo(ctx, v.dir)
		v.info = &pi
	}
	return v.info
}

// resolve is the configured sidecars, or those detection finds when none is configured. It logs
// what sidesync will wait for and quit, so that a pod's log says why.
func (r *resolver) resolve(ctx context.Context) plan {
	p := plan{sidecars: r.cfg.Sidecars}
	if r.cfg.Detect {
		p = r.detect(ctx)
	}
	r.describeSidecars(p.sidecars)
	r.signals.await() // a stop signal must stop the wait from its first probe
	return p
}

// detect runs detection and logs what it found, or why it found nothing.
func (r *resolver) detect(ctx context.Context) plan {
	res := detect.Detect(ctx, detect.Options{
		PodInfoDir: r.cfg.PodInfoDir, PodInfo: r.pod.read(ctx), KubeAPI: r.cfg.KubeAPI, ServiceAccountDir: r.cfg.ServiceAccountDir,
		LookupEnv: r.detectEnv,
	})
	p := r.restartFromPod(res)
	for _, w := range res.Warnings {
		r.log.Warn(w)
	}
	for _, f := range res.Found {
		p.sidecars = append(p.sidecars, f.Sidecar)
		r.log.Info("detected sidecar", "sidecar", f.Sidecar.Name, "from", res.Source, "by", f.Why)
		for _, n := range f.Notes {
			r.log.Warn(n, "sidecar", f.Sidecar.Name)
		}
	}
	if len(res.Found) > 0 {
		p.detected = detectFound
		return p
	}
	p.detected = detectNoneFound
	tried := strings.Join(res.Tried, "; ")
	switch {
	case r.cfg.RequireSidecar:
		p.missing = true
		r.log.Error("no sidecar configured or detected, and --require-sidecar is set: not running the command",
			"tried", tried, "fix", fixOr(res.Fix), "exit", exitUnavailable)
	case res.Failed != nil:
		// Could not look is not the same as found nothing: in a default cluster a service account
		// may not read its pod, and a silent fallback would run the job without its proxy.
		r.log.Warn("no sidecar configured or detected, but detection could not look: running the command without waiting",
			"err", res.Failed, "fix", res.Fix, "tried", tried)
	default:
		r.log.Info("no sidecar configured or detected: running the command without waiting", "tried", tried)
	}
	return p
}

// detectEnv is the environment as detection sees it: SIDESYNC_CONTAINER is this container's
// name as the configuration settled it (--container, SIDESYNC_CONTAINER, POD_CONTAINER_NAME), so
// that the flag, too, says whose restart rules to read from the pod.
func (r *resolver) detectEnv(name string) (string, bool) {
	if name == contract.Env(contract.FlagContainer) && r.cfg.Container != "" {
		return r.cfg.Container, true
	}
	return r.lookupEnv(name)
}

// restartFromPod starts the plan with what detection read from the pod about restarting this
// container, and says it when no setting does.
func (r *resolver) restartFromPod(res detect.Result) plan {
	p := plan{restart: res.Restart, restartFrom: res.RestartFrom}
	switch {
	case r.cfg.Restart.Known():
	case res.RestartNote != "":
		r.log.Info(res.RestartNote, "fix", "set --container (SIDESYNC_CONTAINER) to this container's name, or SIDESYNC_RESTART_POLICY and SIDESYNC_RESTART_RULES")
	case res.Restart.Known():
		r.log.Debug("restart rules read from the pod", "from", res.RestartFrom, "policy", res.Restart.Policy, "rules", len(res.Restart.Rules))
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
func (r *resolver) describeSidecars(scs []sidecar.Sidecar) {
	handled := len(scs) > 0
	for _, sc := range scs {
		r.log.Debug("sidecar", "sidecar", sc.Name, "ready", urlOf(sc.Ready), "quit", quitURLOf(sc.Quit), "native", sc.Native)
		if sc.Native {
			r.log.Info("native sidecar: the kubelet stops it after the job, so it will not be told to quit", "sidecar", sc.Name)
		}
		handled = handled && sc.Native && (sc.StartupProbe || sc.Ready == nil)
	}
	if handled {
		// Said plainly: Kubernetes already orders these sidecars before the job and stops them
		// after it; what sidesync still adds is exit codes, signals and reaping.
		r.log.Info("every sidecar is native with a startup probe: Kubernetes already starts the job after them and stops them after it, so sidesync has nothing to wait for or quit")
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
