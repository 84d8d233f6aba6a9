package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// command is the command line that runs, as session.command decided it.
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

// runPhase starts the command, unless a stop signal came first, and supervises it until it
// ends; signals are forwarded to it meanwhile (see signals).
func (s *session) runPhase(ctx context.Context) runOutcome {
	cmd, err := s.command()
	if err != nil {
		s.logStartError(err, cmd)
		return runOutcome{startErr: err}
	}
	started := time.Now()
	p, stopped, err := s.signals.startCommand(ctx, func() (*child.Process, error) {
		return s.reaper.Start(cmd.argv, child.Options{Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stderr, NewGroup: true})
	})
	switch {
	case stopped != nil:
		s.log.Warn("not starting the command", "signal", child.SignalName(stopped.sig))
		return runOutcome{cmd: cmd}
	case err != nil:
		s.logStartError(err, cmd)
		return runOutcome{cmd: cmd, startErr: err}
	}
	s.log.Info("command started", "cmd", cmd.argv[0], "pid", p.Pid)
	st := <-p.Done()
	r := runOutcome{cmd: cmd, started: true, status: st, ran: time.Since(started)}
	s.log.Info("command ended", "status", st.String(), "ran", r.ran, "exit", st.ExitCode())
	return r
}

// logStartError says why the command could not start, with a hint when its name is a
// misspelt subcommand.
func (s *session) logStartError(err error, cmd command) {
	var se *child.StartError
	errors.As(err, &se)
	code := startErrorCode(err)
	if hint := notFoundHint(se, cmd); hint != "" {
		s.log.Error("cannot start the command", "err", err, "exit", code, "hint", hint)
		return
	}
	s.log.Error("cannot start the command", "err", err, "exit", code)
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
