package main

import (
	"context"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/sidecar"
)

// quitPhase tells the sidecars to quit, as the policy says, given whether the command
// succeeded (exited 0). Failures are logged and never change sidesync's exit code.
func (a *app) quitPhase(success bool) {
	targets := a.quitTargets()
	switch {
	case a.cfg.Disabled || len(targets) == 0:
		a.sum.quit = "none to quit"
		return
	case a.cfg.QuitPolicy == config.QuitNever:
		a.log.Info("not telling the sidecars to quit", "policy", a.cfg.QuitPolicy)
		a.sum.quit = "skipped (never)"
		return
	case a.cfg.QuitPolicy == config.QuitOnSuccess && !success:
		a.log.Info("not telling the sidecars to quit: the command did not succeed", "policy", a.cfg.QuitPolicy)
		a.sum.quit = "skipped (on-success)"
		return
	}
	started := time.Now()
	ok := a.quitAll(targets)
	a.sum.quitTook = time.Since(started)
	a.sum.quit = "ok"
	if !ok {
		a.sum.quit = "failed"
	}
}

// quitTargets are the sidecars to tell to quit: those with a quit call, except native
// sidecars, which the kubelet stops after the main containers (asking them would only make the
// kubelet restart them).
func (a *app) quitTargets() []sidecar.Sidecar {
	var out []sidecar.Sidecar
	for _, sc := range a.cfg.Sidecars {
		switch {
		case sc.Quit == nil:
			a.log.Debug("cannot be told to quit", "sidecar", sc.Name)
		case sc.Native:
			a.log.Info("not telling a native sidecar to quit: the kubelet stops it after the job", "sidecar", sc.Name)
		default:
			out = append(out, sc)
		}
	}
	return out
}

// quitAll sends every quit call at once, each bounded by the quit timeout, so that one slow
// sidecar never delays another's quit (kvij/scuttle ran them one after another under one shared
// deadline). It reports whether all succeeded.
func (a *app) quitAll(targets []sidecar.Sidecar) bool {
	var wg sync.WaitGroup
	results := make([]bool, len(targets))
	for i, sc := range targets {
		wg.Go(func() { results[i] = a.quitOne(sc) })
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
func (a *app) quitOne(sc sidecar.Sidecar) bool {
	log := a.log.With("sidecar", sc.Name)
	log.Info("telling the sidecar to quit", "url", sc.Quit.URL)
	res, err := sidecar.Quit(context.Background(), *sc.Quit, sidecar.QuitOptions{
		RequestTimeout: a.cfg.QuitRequestTimeout,
		Timeout:        a.cfg.QuitTimeout,
		Backoff:        sidecar.Limit(sidecar.Exponential{Initial: 100 * time.Millisecond, Factor: 2, Max: time.Second}, a.cfg.QuitRetries),
		Logger:         log,
	})
	switch {
	case err != nil:
		log.Warn("sidecar quit failed", "url", sc.Quit.URL, "err", err)
		return false
	case res.Closed:
		log.Info("sidecar quit: it closed the connection after the request", "url", res.URL, "took", res.Took, "attempts", res.Attempts)
	default:
		log.Info("sidecar quit", "url", res.URL, "status", res.StatusCode, "took", res.Took, "attempts", res.Attempts)
	}
	return true
}

// quitOnly is "sidesync quit": 0 when every sidecar took the request, 69 otherwise.
func (a *app) quitOnly() int {
	if !a.resolve() {
		return exitUnavailable
	}
	targets := a.quitTargets()
	if a.cfg.Disabled || len(targets) == 0 {
		a.log.Info("no sidecar to quit")
		return 0
	}
	if !a.quitAll(targets) {
		return exitUnavailable
	}
	return 0
}
