package main

import (
	"context"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/sidecar"
)

// quitOutcome is the result of the quit phase.
type quitOutcome struct {
	// state is "ok", "failed", or why nothing was sent: "none to quit", "skipped (never)",
	// "skipped (on-success)"; "" when the phase did not run.
	state string
	took  time.Duration
}

// quitWanted applies the quit policy to what happened: on-success quits only after the command
// exited 0.
func quitWanted(policy config.QuitPolicy, o outcome) bool {
	switch policy {
	case config.QuitNever:
		return false
	case config.QuitOnSuccess:
		return o.run.started && o.run.status.Signal == 0 && o.run.status.Code == 0
	}
	return true
}

// quitPhase tells the sidecars to quit when wanted. Failures are logged and never change the
// exit code of the wrapper. ctx does not end with a stop signal: the quit is what lets the pod
// complete, so it runs whatever happened before; each call is bounded by the quit timeout.
func (s *session) quitPhase(ctx context.Context, p plan, wanted bool) quitOutcome {
	targets := s.quitTargets(p.sidecars)
	switch {
	case s.cfg.Disabled || len(targets) == 0:
		return quitOutcome{state: "none to quit"}
	case !wanted && s.cfg.QuitPolicy == config.QuitNever:
		s.log.Info("not telling the sidecars to quit", "policy", s.cfg.QuitPolicy)
		return quitOutcome{state: "skipped (never)"}
	case !wanted:
		s.log.Info("not telling the sidecars to quit: the command did not succeed", "policy", s.cfg.QuitPolicy)
		return quitOutcome{state: "skipped (on-success)"}
	}
	started := time.Now()
	q := quitOutcome{state: "ok"}
	if !s.quitAll(ctx, targets) {
		q.state = "failed"
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
		Backoff:        sidecar.Limit(sidecar.Exponential{Initial: 100 * time.Millisecond, Factor: 2, Max: time.Second}, s.cfg.QuitRetries),
		Logger:         log,
	})
	switch {
	case err != nil:
		log.Warn("sidecar quit failed", "url", quitURLOf(sc.Quit), "err", err)
		return false
	case res.Closed:
		log.Info("sidecar quit: it closed the connection after the request", "url", res.URL, "took", res.Took, "attempts", res.Attempts)
	default:
		log.Info("sidecar quit", "url", res.URL, "status", res.StatusCode, "took", res.Took, "attempts", res.Attempts)
	}
	return true
}
