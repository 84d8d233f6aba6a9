package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/shared/config"
)

// session is what one sidesync invocation shares among the phases of its run: the validated
// configuration and the process's surroundings, none of which changes once the run begins. It
// has no behaviour: each phase is a type of its own (resolver, peering, waiter, runner,
// quitter, reporter), built from the session by its constructor with only the fields it needs,
// and holding whatever state it keeps; what happens is carried by each phase's result, gathered
// in an outcome.
type session struct {
	cfg                   *config.Config
	log                   *slog.Logger
	stdin, stdout, stderr *os.File
	lookupEnv             func(string) (string, bool)
	start                 time.Time
	signals               *signals      // the one owner of signal delivery
	reaper                *child.Reaper // the one caller of wait(2)
}

// outcome is what every phase of a run returned; the exit code and the summary are computed
// from it, each in one place (exitCode, reporter.finish).
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
func wrap(ctx context.Context, s *session, o outcome) int {
	pod := &podVolume{dir: s.cfg.PodInfoDir}
	r, q := newRunner(s), newQuitter(s)
	r.becomeReaper()
	team := newPeering(s, pod)
	team.join(ctx)
	o.plan = newResolver(s, pod).resolve(ctx)
	if !o.plan.missing {
		o.wait = newWaiter(s).wait(ctx, o.plan)
		if o.wait.letsStart() {
			o.run = r.run(ctx)
		}
	}
	o.stop = stopSignal(ctx)
	skip := team.letQuit(o, q.wanted(o), q.hasTargets(o.plan))
	o.quit = q.quit(context.WithoutCancel(ctx), o.plan, skip)
	return newReporter(s).finish(o)
}

// waitOnly is "sidesync wait": find the sidecars and wait until they are ready.
func waitOnly(ctx context.Context, s *session, o outcome) int {
	o.plan = newResolver(s, &podVolume{dir: s.cfg.PodInfoDir}).resolve(ctx)
	if !o.plan.missing {
		o.wait = newWaiter(s).wait(ctx, o.plan)
	}
	o.stop = stopSignal(ctx)
	return exitCode(o)
}

// quitOnly is "sidesync quit": find the sidecars and tell them to quit, whatever --quit and the
// restart rules say.
func quitOnly(ctx context.Context, s *session, o outcome) int {
	o.plan = newResolver(s, &podVolume{dir: s.cfg.PodInfoDir}).resolve(ctx)
	o.quit = newQuitter(s).quit(context.WithoutCancel(ctx), o.plan, quitSkip{})
	return exitCode(o)
}

// stopSignal is the stop signal that cancelled ctx, if any.
func stopSignal(ctx context.Context) *signalError {
	se, _ := context.Cause(ctx).(*signalError)
	return se
}
