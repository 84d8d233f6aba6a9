package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/shared/config"
)

// command is the command line that runs, as runner.command decided it.
type command struct {
	argv     []string
	platform string // the entry of --platform-commands it comes from; "" when typed after "--"
}

// typed reports whether the command was typed after "--", where its first word may be a
// misspelt subcommand.
func (c command) typed() bool { return c.platform == "" && len(c.argv) > 0 }

// runOutcome is the result of the run phase.
type runOutcome struct {
	cmd      command // what ran, or was to run
	started  bool
	status   child.Status // how the command ended, when started
	startErr error        // why it could not start (a *child.StartError: 126, 127)
	ran      time.Duration
}

// runner is the phase that runs the command: it starts it, with the standard files, under the
// one owner of signal delivery and the one caller of wait(2), and supervises it until it ends.
type runner struct {
	cfg                   *config.Config
	log                   *slog.Logger
	stdin, stdout, stderr *os.File
	signals               *signals
	reaper                *child.Reaper
}

func newRunner(s *session) *runner {
	return &runner{cfg: s.cfg, log: s.log, stdin: s.stdin, stdout: s.stdout, stderr: s.stderr, signals: s.signals, reaper: s.reaper}
}

// becomeReaper makes sidesync the waiter for orphans too when it is PID 1, or when asked to be
// a subreaper. There is nothing to undo at the end: the process exits.
func (r *runner) becomeReaper() {
	switch {
	case os.Getpid() == 1:
		r.log.Debug("running as PID 1: reaping orphaned processes")
	case r.cfg.Subreaper:
		if err := child.BecomeSubreaper(); err != nil {
			r.log.Warn("cannot become a child subreaper; orphans will not be reaped here", "err", err)
		}
	}
}

// run starts the command, unless a stop signal came first, and supervises it until it ends;
// signals are forwarded to it meanwhile (see signals).
func (r *runner) run(ctx context.Context) runOutcome {
	cmd, err := r.command()
	if err != nil {
		r.logStartError(err, cmd)
		return runOutcome{startErr: err}
	}
	started := time.Now()
	p, stopped, err := r.signals.startCommand(ctx, func() (*child.Process, error) {
		return r.reaper.Start(cmd.argv, child.Options{Stdin: r.stdin, Stdout: r.stdout, Stderr: r.stderr, NewGroup: true})
	})
	switch {
	case stopped != nil:
		r.log.Warn("not starting the command", "signal", child.SignalName(stopped.sig))
		return runOutcome{cmd: cmd}
	case err != nil:
		r.logStartError(err, cmd)
		return runOutcome{cmd: cmd, startErr: err}
	}
	r.log.Info("command started", "cmd", cmd.argv[0], "pid", p.Pid)
	st := <-p.Done()
	out := runOutcome{cmd: cmd, started: true, status: st, ran: time.Since(started)}
	r.log.Info("command ended", "status", st.String(), "ran", out.ran, "exit", st.ExitCode())
	return out
}

// logStartError says why the command could not start, with a hint when its name is a
// misspelt subcommand.
func (r *runner) logStartError(err error, cmd command) {
	var se *child.StartError
	errors.As(err, &se)
	code := startErrorCode(err)
	if hint := notFoundHint(se, cmd); hint != "" {
		r.log.Error("cannot start the command", "err", err, "exit", code, "hint", hint)
		return
	}
	r.log.Error("cannot start the command", "err", err, "exit", code)
}

// startErrorCode is the exit code for a command that could not start: 127 or 126 as shells
// say (127 too when no platform command fits this platform), or 70 when sidesync itself failed.
func startErrorCode(err error) int {
	var se *child.StartError
	var np *noPlatformError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.As(err, &np):
		return child.ExitNotFound
	}
	return exitSoftware
}

// notFoundHint suggests a subcommand when the command that was not found looks like a
// misspelt one: "sidesync verison" runs a program called verison, which does not exist.
func notFoundHint(se *child.StartError, cmd command) string {
	if se == nil || se.Code != child.ExitNotFound || se.Interpreter != "" || se.Loader || !cmd.typed() {
		return "" // a platform command was not typed after sidesync: no misspelt subcommand
	}
	if sub := nearSubcommand(cmd.argv[0]); sub != "" {
		return fmt.Sprintf("did you mean %q? (%q is not a subcommand, so it was run as a program)", "sidesync "+sub, cmd.argv[0])
	}
	return ""
}
