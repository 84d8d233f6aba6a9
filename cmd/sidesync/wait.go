package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/child"
	"github.com/sidesync/sidesync/sidecar"
)

// errOtherFailed stops the waits of the other sidecars once one has failed: the command will
// not start on time either way.
var errOtherFailed = errors.New("another sidecar never became ready")

// waitResult is one sidecar's wait.
type waitResult struct {
	name string
	res  sidecar.WaitResult
	err  error
}

// waitAll waits for every sidecar that needs it, all at once, while watching for signals that
// stop the wait. It returns the first failure, naming the sidecar.
func (a *app) waitAll() error {
	targets := a.waitTargets()
	if len(targets) == 0 {
		a.sum.sidecar = "nothing to wait for"
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	start := time.Now()
	results := make(chan waitResult, len(targets))
	for _, sc := range targets {
		go func() { results <- a.waitFor(ctx, sc) }()
	}
	var first error
	var stop *signalError // the first stop signal; it wins over any verdict, even "ready"
	for pending := len(targets); pending > 0; {
		select {
		case s := <-a.sigs:
			sig := s.(syscall.Signal)
			switch {
			case !stopsWait(sig):
				a.log.Info("ignoring signal: the command has not started", "signal", child.SignalName(sig))
			case stop == nil:
				stop = &signalError{sig}
				cancel(stop)
			}
		case r := <-results:
			pending--
			a.sum.probes += r.res.Probes
			if r.err != nil && first == nil {
				first = fmt.Errorf("%s: %w", r.name, r.err)
				cancel(errOtherFailed)
			}
		}
	}
	a.sum.waited = time.Since(start)
	switch {
	case stop != nil:
		// A stop signal taken from the channel is never dropped, even when the probe in flight
		// then answered ready (issue 7, fault 1): the command must not start.
		a.sum.sidecar = "wait stopped"
		return stop
	case first != nil:
		a.sum.sidecar = "not ready"
	default:
		a.sum.sidecar = "ready"
	}
	return first
}

// waitFor waits for one sidecar: waitOne, unless a test stands in for it.
func (a *app) waitFor(ctx context.Context, sc sidecar.Sidecar) waitResult {
	if a.waitOneFunc != nil {
		return a.waitOneFunc(ctx, sc)
	}
	return a.waitOne(ctx, sc)
}

// waitOne waits for one sidecar, logging under its name.
func (a *app) waitOne(ctx context.Context, sc sidecar.Sidecar) waitResult {
	log := a.log.With("sidecar", sc.Name)
	log.Info("waiting for the sidecar", "url", sc.Ready.URL, "policy", a.cfg.Backoff.String(), "timeout", a.cfg.Timeout)
	res, err := sidecar.WaitReady(ctx, *sc.Ready, sidecar.WaitOptions{
		Backoff: a.cfg.Backoff, Timeout: a.cfg.Timeout, ProbeTimeout: a.cfg.ProbeTimeout, Logger: log,
	})
	switch {
	case err == nil:
		log.Info("sidecar ready", "url", res.Last.URL, "waited", res.Waited, "probes", res.Probes)
	case errors.Is(err, errOtherFailed):
		log.Info("stopped waiting: another sidecar never became ready", "waited", res.Waited)
	}
	return waitResult{sc.Name, res, err}
}

// waitTargets are the sidecars to wait for: those with a readiness check, except native
// sidecars whose startup probe Kubernetes already waited for.
func (a *app) waitTargets() []sidecar.Sidecar {
	var out []sidecar.Sidecar
	for _, sc := range a.cfg.Sidecars {
		switch {
		case sc.Ready == nil:
			a.log.Debug("nothing to wait for: no readiness check", "sidecar", sc.Name)
		case sc.Native && sc.StartupProbe:
			a.log.Info("not waiting: a native sidecar whose startup probe Kubernetes waited for", "sidecar", sc.Name)
		default:
			if sc.Native {
				a.log.Info("waiting for a native sidecar: without a startup probe Kubernetes does not wait for it", "sidecar", sc.Name)
			}
			out = append(out, sc)
		}
	}
	return out
}

// pendingStop reports a stopping signal that arrived after the wait ended and before the
// command started (other signals are dropped, as while waiting).
func (a *app) pendingStop() (syscall.Signal, bool) {
	for {
		select {
		case s := <-a.sigs:
			if sig := s.(syscall.Signal); stopsWait(sig) {
				return sig, true
			}
		default:
			return 0, false
		}
	}
}

// waitOnly is "sidesync wait": 0 when ready (or start-anyway), 69 when not, 128+N on a signal.
func (a *app) waitOnly() int {
	a.listen()
	defer signal.Stop(a.sigs)
	if !a.resolve() {
		return exitUnavailable
	}
	if code, ok := a.waitPhase(); !ok {
		return code
	}
	return 0
}
