package main

import (
	"context"
	"os/signal"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/sidecar"
)

// quitPhase tells the sidecars to quit, as the policy says, given whether the command
// succeeded (exited 0). Failures are logged and never change sidesync's exit code.
func (a *app) quitPhase(success bool) {
	switch {
	case a.cfg.Disabled || len(a.cfg.Quit) == 0:
		a.sum.quit = "none configured"
		return
	case a.cfg.QuitPolicy == config.QuitNever:
		a.log.Info("not telling the sidecar to quit", "policy", a.cfg.QuitPolicy)
		a.sum.quit = "skipped (never)"
		return
	case a.cfg.QuitPolicy == config.QuitOnSuccess && !success:
		a.log.Info("not telling the sidecar to quit: the command did not succeed", "policy", a.cfg.QuitPolicy)
		a.sum.quit = "skipped (on-success)"
		return
	}
	started := time.Now()
	ok := a.quitAll()
	a.sum.quitTook = time.Since(started)
	a.sum.quit = "ok"
	if !ok {
		a.sum.quit = "failed"
	}
}

// quitAll sends every quit call at once, each bounded by the quit timeout, so that one slow
// sidecar never delays another's quit (kvij/scuttle ran them one after another under one shared
// deadline). It reports whether all succeeded.
func (a *app) quitAll() bool {
	opts := sidecar.QuitOptions{
		RequestTimeout: a.cfg.QuitRequestTimeout,
		Timeout:        a.cfg.QuitTimeout,
		Backoff:        sidecar.Limit(sidecar.Exponential{Initial: 100 * time.Millisecond, Factor: 2, Max: time.Second}, a.cfg.QuitRetries),
		Logger:         a.log,
	}
	var wg sync.WaitGroup
	results := make([]bool, len(a.cfg.Quit))
	for i, c := range a.cfg.Quit {
		wg.Go(func() {
			a.log.Info("telling the sidecar to quit", "url", c.URL)
			res, err := sidecar.Quit(context.Background(), c, opts)
			if err != nil {
				a.log.Warn("sidecar quit failed", "url", c.URL, "err", err)
				return
			}
			results[i] = true
			if res.Closed {
				a.log.Info("sidecar quit: it closed the connection after the request", "url", res.URL, "took", res.Took, "attempts", res.Attempts)
				return
			}
			a.log.Info("sidecar quit", "url", res.URL, "status", res.StatusCode, "took", res.Took, "attempts", res.Attempts)
		})
	}
	wg.Wait()
	for _, ok := range results {
		if !ok {
			return false
		}
	}
	return true
}

// waitOnly is "sidesync wait": 0 when ready (or start-anyway), 69 when not, 128+N on a signal.
func (a *app) waitOnly() int {
	a.listen()
	defer signal.Stop(a.sigs)
	if code, ok := a.waitPhase(); !ok {
		return code
	}
	return 0
}

// quitOnly is "sidesync quit": 0 when every sidecar took the request, 69 otherwise.
func (a *app) quitOnly() int {
	if a.cfg.Disabled || len(a.cfg.Quit) == 0 {
		a.log.Info("no sidecar to quit")
		return 0
	}
	if !a.quitAll() {
		return exitUnavailable
	}
	return 0
}
