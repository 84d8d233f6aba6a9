package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/sidecar"
)

// errOtherFailed stops the waits of the other sidecars once one has failed: the command will
// not start on time either way.
var errOtherFailed = errors.New("another sidecar never became ready")

// waitOutcome is the result of the wait phase.
type waitOutcome struct {
	state  waitState
	err    error // the first sidecar that did not become ready, naming it
	waited time.Duration
	// tolerated is set when a sidecar did not become ready and --on-timeout start-anyway says
	// to go on regardless.
	tolerated bool
}

// letsStart reports whether the command may start as far as the sidecars are concerned.
func (w waitOutcome) letsStart() bool { return w.err == nil || w.tolerated }

// waiter is the phase that waits until the sidecars are ready, before the command starts.
type waiter struct {
	cfg *config.Config
	log *slog.Logger
}

func newWaiter(s *session) *waiter { return &waiter{cfg: s.cfg, log: s.log} }

// wait waits for the sidecars unless told not to: all at once, each bounded by the policy. A
// stop signal cancels ctx and so every wait.
func (w *waiter) wait(ctx context.Context, p plan) waitOutcome {
	switch {
	case w.cfg.Disabled:
		return waitOutcome{state: waitDisabled}
	case !w.cfg.Wait:
		w.log.Info("not waiting for the sidecars", "sidecars", len(p.sidecars))
		return waitOutcome{state: waitNotWaited}
	}
	targets := w.targets(p.sidecars)
	if len(targets) == 0 {
		return waitOutcome{state: waitNothing}
	}
	start := time.Now()
	err := w.all(ctx, targets)
	out := waitOutcome{state: waitReady, err: err, waited: time.Since(start)}
	switch se := stopSignal(ctx); {
	case se != nil:
		out.state, out.err = waitStopped, se
		w.log.Warn("stopped waiting for the sidecars", "signal", child.SignalName(se.sig))
	case err == nil:
	case w.cfg.StartAnyway:
		out.state, out.tolerated = waitNotReady, true
		w.log.Warn("starting the command without the sidecars", "err", err)
	default:
		out.state = waitNotReady
		w.log.Error("a sidecar never became ready; not starting the command", "err", err, "exit", exitUnavailable)
	}
	return out
}

// all waits for every target at once and returns the first failure, naming the sidecar.
func (w *waiter) all(ctx context.Context, targets []sidecar.Sidecar) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make(chan error, len(targets))
	for _, sc := range targets {
		go func() { errs <- w.one(ctx, sc) }()
	}
	var first error
	for range targets {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel(errOtherFailed)
		}
	}
	return first
}

// one waits for one sidecar, logging under its name.
func (w *waiter) one(ctx context.Context, sc sidecar.Sidecar) error {
	log := w.log.With("sidecar", sc.Name)
	log.Info("waiting for the sidecar", "url", urlOf(sc.Ready), "policy", w.cfg.Backoff.String(), "timeout", w.cfg.Timeout)
	res, err := sidecar.WaitReady(ctx, *sc.Ready, sidecar.WaitOptions{
		Backoff: w.cfg.Backoff, Timeout: w.cfg.Timeout, ProbeTimeout: w.cfg.ProbeTimeout, Logger: log,
	})
	switch {
	case err == nil:
		log.Info("sidecar ready", "url", res.Last.URL, "waited", res.Waited, "probes", res.Probes)
		return nil
	case errors.Is(err, errOtherFailed):
		log.Info("stopped waiting: another sidecar never became ready", "waited", res.Waited)
	}
	return fmt.Errorf("%s: %w", sc.Name, err)
}

// targets are the sidecars to wait for: those with a readiness check, except native
// sidecars whose startup probe Kubernetes already waited for.
func (w *waiter) targets(scs []sidecar.Sidecar) []sidecar.Sidecar {
	var out []sidecar.Sidecar
	for _, sc := range scs {
		switch {
		case sc.Ready == nil:
			w.log.Debug("nothing to wait for: no readiness check", "sidecar", sc.Name)
		case sc.Native && sc.StartupProbe:
			w.log.Info("not waiting: a native sidecar whose startup probe Kubernetes waited for", "sidecar", sc.Name)
		default:
			if sc.Native {
				w.log.Info("waiting for a native sidecar: without a startup probe Kubernetes does not wait for it", "sidecar", sc.Name)
			}
			out = append(out, sc)
		}
	}
	return out
}
