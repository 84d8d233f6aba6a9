package main

import (
	"context"
	"fmt"
	"log/slog"
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

// quitter is the last phase: it decides whether to tell the sidecars to quit, and tells them.
type quitter struct {
	cfg     *config.Config
	log     *slog.Logger
	signals *signals // after a stop signal the pod is being deleted (one, notStartedFor)
}

func newQuitter(s *session) *quitter { return &quitter{cfg: s.cfg, log: s.log, signals: s.signals} }

// wanted applies the quit policy and the restart rules (the settings, else what detection read
// from the pod) to what happened (quitWanted).
func (q *quitter) wanted(o outcome) quitSkip {
	return quitWanted(q.cfg.QuitPolicy, q.restartRulesFor(o.plan), o)
}

// restartRulesFor is what says whether the kubelet restarts this container in place: the settings
// (--restart-policy, --restart-rules) when given, else what detection read from the pod.
func (q *quitter) restartRulesFor(p plan) restartRules {
	if q.cfg.Restart.Known() {
		return restartRules{q.cfg.Restart, "--restart-policy, --restart-rules or their variables"}
	}
	return restartRules{p.restart, p.restartFrom}
}

// quit tells the sidecars to quit unless skip says why not. Failures are logged and never
// change the exit code of the wrapper. ctx does not end with a stop signal: the quit is what
// lets the pod complete, so it runs whatever happened before; each call is bounded by the quit
// timeout.
func (q *quitter) quit(ctx context.Context, p plan, skip quitSkip) quitOutcome {
	targets := q.targets(p.sidecars)
	switch {
	case q.cfg.Disabled || len(targets) == 0:
		return quitOutcome{state: quitNone}
	case !skip.sends():
		q.log.Info(skip.msg, skip.attrs...)
		return quitOutcome{state: skip.state}
	}
	started := time.Now()
	out := quitOutcome{state: quitOK}
	if !q.all(ctx, targets) {
		out.state = quitFailed
	}
	out.took = time.Since(started)
	return out
}

// targets are the sidecars to tell to quit: those with a quit call, except native
// sidecars, which the kubelet stops after the main containers (asking them would only make the
// kubelet restart them).
func (q *quitter) targets(scs []sidecar.Sidecar) []sidecar.Sidecar {
	var out []sidecar.Sidecar
	for _, sc := range scs {
		switch {
		case sc.Quit == nil:
			q.log.Debug("cannot be told to quit", "sidecar", sc.Name)
		case sc.Native:
			q.log.Info("not telling a native sidecar to quit: the kubelet stops it after the job", "sidecar", sc.Name)
		default:
			out = append(out, sc)
		}
	}
	return out
}

// hasTargets reports, without a word in the log, whether the quit phase would tell a sidecar
// to quit, policies aside: a wait for peers is for nothing otherwise.
func (q *quitter) hasTargets(p plan) bool {
	return !q.cfg.Disabled && slices.ContainsFunc(p.sidecars, func(sc sidecar.Sidecar) bool { return sc.Quit != nil && !sc.Native })
}

// all sends every quit call at once, each bounded by the quit timeout, so that one slow
// sidecar never delays another's quit (kvij/scuttle ran them one after another under one shared
// deadline). It reports whether all succeeded.
func (q *quitter) all(ctx context.Context, targets []sidecar.Sidecar) bool {
	var wg sync.WaitGroup
	results := make([]bool, len(targets))
	for i, sc := range targets {
		wg.Go(func() { results[i] = q.one(ctx, sc) })
	}
	wg.Wait()
	for _, ok := range results {
		if !ok {
			return false
		}
	}
	return true
}

// one tells one sidecar to quit and logs the outcome under its name.
func (q *quitter) one(ctx context.Context, sc sidecar.Sidecar) bool {
	log := q.log.With("sidecar", sc.Name)
	log.Info("telling the sidecar to quit", "url", quitURLOf(sc.Quit))
	res, err := sidecar.Quit(ctx, *sc.Quit, sidecar.QuitOptions{
		RequestTimeout: q.cfg.QuitRequestTimeout,
		Timeout:        q.cfg.QuitTimeout,
		Backoff:        sidecar.QuitBackoff(q.cfg.QuitRetries),
		Logger:         log,
		// After a stop signal the pod is being deleted, and the kubelet stops the sidecar at the
		// same moment: nothing listening then means it is gone, not that it must be retried.
		RefusedMeansGone: q.signals.gotStop(),
		NotStartedFor:    q.notStartedFor(sc),
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
func (q *quitter) notStartedFor(sc sidecar.Sidecar) time.Duration {
	if q.signals.gotStop() || sc.Ready != nil && q.cfg.Wait {
		return 0
	}
	return q.cfg.Timeout
}
