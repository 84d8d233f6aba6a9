package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/sidecar"
)

// quitOutcome is the result of the quit phase.
type quitOutcome struct {
	state quitState
	took  time.Duration
}

// quitSkip is why the quit phase sends nothing; the zero value sends.
type quitSkip struct {
	state quitState // the summary's quit field (quitSkippedNever, ...); zero when the quit is sent
	msg   string    // the one log line that says why
	attrs []any
}

// sends reports whether nothing stops the quit.
func (q quitSkip) sends() bool { return q.state == quitNotRun }

// restartRules is what says whether the kubelet restarts this container in place after it
// exits, and where it comes from for the log.
type restartRules struct {
	spec restart.Spec
	from string
}

// quitWanted applies the quit policy and the container's restart rules to what happened.
// on-success quits only after the command exited 0. A container that the kubelet restarts in
// place after this exit keeps its sidecars, whatever the policy: the command is about to run
// again, and would run without its proxy (docs/KUBERNETES.md 2; scuttle's
// NEVER_KILL_ISTIO_ON_FAILURE did this by hand for OnFailure). The exit code is the one this
// container exits with, as the kubelet sees it (a signal death is 128+S).
func quitWanted(policy config.QuitPolicy, rr restartRules, o outcome) quitSkip {
	switch {
	case policy == config.QuitNever:
		return quitSkip{quitSkippedNever, "not telling the sidecars to quit", []any{"policy", policy}}
	case policy == config.QuitOnSuccess && !(o.run.started && o.run.status.Signal == 0 && o.run.status.Code == 0):
		return quitSkip{quitSkippedOnSuccess, "not telling the sidecars to quit: the command did not succeed", []any{"policy", policy}}
	}
	code := exitCode(o)
	if restarts, why := rr.spec.Restarts(code); restarts {
		msg := fmt.Sprintf("not telling the sidecars to quit: the kubelet restarts this container in place after exit %d (%s)", code, why)
		return quitSkip{quitSkippedRestart, msg, []any{"from", rr.from}}
	}
	return quitSkip{}
}

// quitPhase tells the sidecars to quit unless skip says why not. Failures are logged and never
// change the exit code of the wrapper. ctx does not end with a stop signal: the quit is what
// lets the pod complete, so it runs whatever happened before; each call is bounded by the quit
// timeout.
func (s *session) quitPhase(ctx context.Context, p plan, skip quitSkip) quitOutcome {
	targets := s.quitTargets(p.sidecars)
	switch {
	case s.cfg.Disabled || len(targets) == 0:
		return quitOutcome{state: quitNone}
	case !skip.sends():
		s.log.Info(skip.msg, skip.attrs...)
		return quitOutcome{state: skip.state}
	}
	started := time.Now()
	q := quitOutcome{state: quitOK}
	if !s.quitAll(ctx, targets) {
		q.state = quitFailed
	}
	q.took = time.Since(started)
	return q
}

// quitTargets are the sidecars to tell to quit: those with a quit call, except native
// sidecars, which the kubelet stops after the main containers (asking them would only make the
// kubelet restart them).
func (s *session) quitTargets(scs []sidecar.Sidecar) []sidecar.Sidecar {
	var out []sidecar.Sidecar
	for _, sc := range scs {
		switch {
		case sc.Quit == nil:
			s.log.Debug("cannot be told to quit", "sidecar", sc.Name)
		case sc.Native:
			s.log.Info("not telling a native sidecar to quit: the kubelet stops it after the job", "sidecar", sc.Name)
		default:
			out = append(out, sc)
		}
	}
	return out
}

// hasQuitTargets reports, without a word in the log, whether the quit phase would tell a sidecar
// to quit, policies aside: a wait for peers is for nothing otherwise.
func (s *session) hasQuitTargets(p plan) bool {
	return !s.cfg.Disabled && slices.ContainsFunc(p.sidecars, func(sc sidecar.Sidecar) bool { return sc.Quit != nil && !sc.Native })
}

// quitAll sends every quit call at once, each bounded by the quit timeout, so that one slow
// sidecar never delays another's quit (kvij/scuttle ran them one after another under one shared
// deadline). It reports whether all succeeded.
func (s *session) quitAll(ctx context.Context, targets []sidecar.Sidecar) bool {
	var wg sync.WaitGroup
	results := make([]bool, len(targets))
	for i, sc := range targets {
		wg.Go(func() { results[i] = s.quitOne(ctx, sc) })
	}
	wg.Wait()
	for _, ok := range results {
		if !ok {
			return false
		}
	}
	return true
}

// quitOne tells one sidecar to quit and logs the outcome under its name.
func (s *session) quitOne(ctx context.Context, sc sidecar.Sidecar) bool {
	log := s.log.With("sidecar", sc.Name)
	log.Info("telling the sidecar to quit", "url", quitURLOf(sc.Quit))
	res, err := sidecar.Quit(ctx, *sc.Quit, sidecar.QuitOptions{
		RequestTimeout: s.cfg.QuitRequestTimeout,
		Timeout:        s.cfg.QuitTimeout,
		Backoff:        sidecar.QuitBackoff(s.cfg.QuitRetries),
		Logger:         log,
		// After a stop signal the pod is being deleted, and the kubelet stops the sidecar at the
		// same moment: nothing listening then means it is gone, not that it must be retried.
		RefusedMeansGone: s.signals.gotStop(),
		NotStartedFor:    s.notStartedFor(sc),
	})
	switch {
	case err != nil:
		log.Warn("sidecar quit failed", "url", quitURLOf(sc.Quit), "err", err)
		return false
	case res.Gone:
		log.Info("sidecar already gone: nothing listens, as the pod is being stopped", "url", res.URL, "took", res.Took)
	case res.Closed:
		log.Info("sidecar quit: it closed the connection after the request", "url", res.URL, "took", res.Took, "attempts", res.Attempts)
	default:
		log.Info("sidecar quit", "url", res.URL, "status", res.StatusCode, "took", res.Took, "attempts", res.Attempts)
	}
	return true
}

// notStartedFor is how long a sidecar that refuses the quit may take to start listening: as
// long as it could have taken to become ready (--timeout), when nothing waited for it to start
// (no readiness check, as Vault Agent's, or waiting off) and no stop signal says the pod is
// going. A command that ends in milliseconds may otherwise quit before the kubelet has even
// started the sidecar, which would then run for good (docs/FAULTS.md).
func (s *session) notStartedFor(sc sidecar.Sidecar) time.Duration {
	if s.signals.gotStop() || sc.Ready != nil && s.cfg.Wait {
		return 0
	}
	return s.cfg.Timeout
}
