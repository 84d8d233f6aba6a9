package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/pod/detect"
	"github.com/sidesync/sidesync/internal/shared/config"
)

// session is one sidesync invocation: its validated configuration and its surroundings. Nothing
// in it changes once the run begins but the downward-API volume, read once when first needed;
// what happens is carried by each phase's result.
type session struct {
	cfg                   *config.Config
	log                   *slog.Logger
	stdin, stdout, stderr *os.File
	lookupEnv             func(string) (string, bool)
	start                 time.Time
	signals               *signals        // the one owner of signal delivery
	reaper                *child.Reaper   // the one caller of wait(2)
	podInfo               *detect.PodInfo // the downward-API volume, once read (readPodInfo)
}

// outcome is what every phase of a run returned; the exit code and the summary are computed
// from it, each in one place (exitCode, summaryOf).
type outcome struct {
	sub  subcmd
	plan plan
	wait waitOutcome
	run  runOutcome
	quit quitOutcome
	stop *signalError // a stop signal ended the run before the command started
}

// wrap is sidesync's main job, the story of one run: find the sidecars, wait until they are
// ready, run the command, tell the sidecars to quit (unless the kubelet restarts this container
// in place after this exit, or another wrapped container of the pod still runs), and exit with
// the command's code. A stop signal cancels ctx; the quit phase runs on regardless, so that the
// pod can complete.
func (s *session) wrap(ctx context.Context, o outcome) int {
	s.becomeReaper()
	team := s.joinPeers(ctx)
	o.plan = s.resolve(ctx)
	if !o.plan.missing {
		o.wait = s.waitPhase(ctx, o.plan)
		if o.wait.letsStart() {
			o.run = s.runPhase(ctx)
		}
	}
	o.stop = stopSignal(ctx)
	skip := s.peersLetQuit(team, o, quitWanted(s.cfg.QuitPolicy, s.restartRulesFor(o.plan), o))
	o.quit = s.quitPhase(context.WithoutCancel(ctx), o.plan, skip)
	return s.finish(o)
}

// waitOnly is "sidesync wait": find the sidecars and wait until they are ready.
func (s *session) waitOnly(ctx context.Context, o outcome) int {
	o.plan = s.resolve(ctx)
	if !o.plan.missing {
		o.wait = s.waitPhase(ctx, o.plan)
	}
	o.stop = stopSignal(ctx)
	return exitCode(o)
}

// quitOnly is "sidesync quit": find the sidecars and tell them to quit, whatever --quit and the
// restart rules say.
func (s *session) quitOnly(ctx context.Context, o outcome) int {
	o.plan = s.resolve(ctx)
	o.quit = s.quitPhase(context.WithoutCancel(ctx), o.plan, quitSkip{})
	return exitCode(o)
}

// becomeReaper makes sidesync the waiter for orphans too when it is PID 1, or when asked to be
// a subreaper. There is nothing to undo at the end: the process exits.
func (s *session) becomeReaper() {
	switch {
	case os.Getpid() == 1:
		s.log.Debug("running as PID 1: reaping orphaned processes")
	case s.cfg.Subreaper:
		if err := child.BecomeSubreaper(); err != nil {
			s.log.Warn("cannot become a child subreaper; orphans will not be reaped here", "err", err)
		}
	}
}

// restartRulesFor is what says whether the kubelet restarts this container in place: the settings
// (--restart-policy, --restart-rules) when given, else what detection read from the pod.
func (s *session) restartRulesFor(p plan) restartRules {
	if s.cfg.Restart.Known() {
		return restartRules{s.cfg.Restart, "--restart-policy, --restart-rules or their variables"}
	}
	return restartRules{p.restart, p.restartFrom}
}

// stopSignal is the stop signal that cancelled ctx, if any.
func stopSignal(ctx context.Context) *signalError {
	se, _ := context.Cause(ctx).(*signalError)
	return se
}
