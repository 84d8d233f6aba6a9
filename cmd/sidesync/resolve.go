package main

import (
	"context"
	"strings"

	"github.com/sidesync/sidesync/internal/detect"
	"github.com/sidesync/sidesync/sidecar"
)

// resolve finds the pod's sidecars when none is configured, and logs what sidesync will
// wait for and quit, so that a pod's log says what happened and why.
func (a *app) resolve() {
	if a.cfg.Detect {
		r := detect.Detect(context.Background(), detect.Options{
			PodInfoDir: a.cfg.PodInfoDir, KubeAPI: a.cfg.KubeAPI, ServiceAccountDir: a.cfg.ServiceAccountDir,
			LookupEnv: a.lookupEnv,
		})
		if len(r.Found) == 0 {
			a.log.Info("no sidecar configured or detected: running the command without waiting", "tried", strings.Join(r.Tried, "; "))
			a.sum.sidecar = "none found"
			return
		}
		for _, f := range r.Found {
			a.cfg.Sidecars = append(a.cfg.Sidecars, f.Sidecar)
			a.log.Info("detected sidecar", "sidecar", f.Sidecar.Name, "from", r.Source, "by", f.Why)
			for _, n := range f.Notes {
				a.log.Warn(n, "sidecar", f.Sidecar.Name)
			}
		}
	}
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

func urlOf(c *sidecar.Check) string {
	if c == nil {
		return "-"
	}
	return c.URL
}

func quitURLOf(c *sidecar.Call) string {
	if c == nil {
		return "-"
	}
	return c.URL
}
