package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/child"
	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/sidecar"
)

// forwarded are the signals passed on to the command: an explicit list, so that the Go
// runtime's own SIGURG (preemption) and SIGCHLD never reach it (scuttle issue 44, kvij/scuttle
// issue 110, kubexit).
var forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

// stopsWait reports whether sig, arriving before the command started, ends sidesync: the
// signals whose default action is to terminate a process and that supervisors use to stop one.
// SIGUSR1, SIGUSR2 and SIGWINCH are usually requests (reopen logs, resize) and are ignored then.
func stopsWait(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// signalError is the cause of a wait cut short by a signal.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "received " + child.SignalName(e.sig) }

// app runs one sidesync invocation.
type app struct {
	cfg                   *config.Config
	log                   *slog.Logger
	stdin, stdout, stderr *os.File
	start                 time.Time
	lookupEnv             func(string) (string, bool)
	sigs                  chan os.Signal
	reaper                *child.Reaper
	sum                   summary
	// waitOneFunc replaces waitOne in tests that must order a sidecar's verdict against a
	// signal; nil in production.
	waitOneFunc func(context.Context, sidecar.Sidecar) waitResult
}

// run is the wrapper: wait, run the command, quit, exit with the command's code.
func (a *app) run() int {
	a.listen()
	defer signal.Stop(a.sigs)
	a.startReaper()
	defer a.reaper.Close()
	code := a.lifecycle()
	a.finish(code)
	return code
}

// lifecycle waits, runs the command and quits, and returns the exit code.
func (a *app) lifecycle() int {
	if !a.resolve() {
		return exitUnavailable
	}
	if code, ok := a.waitPhase(); !ok {
		a.quitPhase(false)
		return code
	}
	if sig, ok := a.pendingStop(); ok {
		a.log.Warn("not starting the command", "signal", child.SignalName(sig))
		a.sum.outcome = "received " + child.SignalName(sig) + " before the command started"
		a.quitPhase(false)
		return 128 + int(sig)
	}
	st, err := a.runCommand()
	if err != nil {
		var se *child.StartError
		code := exitSoftware
		if errors.As(err, &se) {
			code = se.Code
		}
		if hint := a.notFoundHint(se); hint != "" {
			a.log.Error("cannot start the command", "err", err, "exit", code, "hint", hint)
		} else {
			a.log.Error("cannot start the command", "err", err, "exit", code)
		}
		a.sum.outcome = err.Error()
		a.quitPhase(false)
		return code
	}
	a.quitPhase(st.Code == 0)
	return st.ExitCode()
}

// notFoundHint suggests a subcommand when the command that was not found looks like a
// misspelt one: "sidesync verison" runs a program called verison, which does not exist.
func (a *app) notFoundHint(se *child.StartError) string {
	if se == nil || se.Code != child.ExitNotFound || se.Interpreter != "" || se.Loader {
		return ""
	}
	if s := nearSubcommand(a.cfg.Command[0]); s != "" {
		return fmt.Sprintf("did you mean %q? (%q is not a subcommand, so it was run as a program)", "sidesync "+s, a.cfg.Command[0])
	}
	return ""
}

// listen starts catching the forwarded signals; until the command runs they stop the wait.
func (a *app) listen() {
	a.sigs = make(chan os.Signal, 16)
	signal.Notify(a.sigs, forwarded...)
}

// startReaper makes sidesync the one waiter for its children, and for orphans when it is PID 1
// or asked to be a subreaper.
func (a *app) startReaper() {
	a.reaper = child.NewReaper(a.log)
	switch {
	case os.Getpid() == 1:
		a.log.Debug("running as PID 1: reaping orphaned processes")
	case a.cfg.Subreaper:
		if err := child.BecomeSubreaper(); err != nil {
			a.log.Warn("cannot become a child subreaper; orphans will not be reaped here", "err", err)
		}
	}
}

// waitPhase waits for the sidecars unless told not to. It reports false with the exit code
// when sidesync must stop without running the command.
func (a *app) waitPhase() (int, bool) {
	switch {
	case a.cfg.Disabled:
		a.sum.sidecar = "disabled"
		return 0, true
	case !a.cfg.Wait:
		a.log.Info("not waiting for the sidecars", "sidecars", len(a.cfg.Sidecars))
		a.sum.sidecar = "not waited for"
		return 0, true
	}
	err := a.waitAll()
	var se *signalError
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &se):
		a.log.Warn("stopped waiting for the sidecars", "signal", child.SignalName(se.sig))
		a.sum.outcome = se.Error() + " while waiting"
		return 128 + int(se.sig), false
	case a.cfg.StartAnyway:
		a.log.Warn("starting the command without the sidecars", "err", err)
		return 0, true
	default:
		a.log.Error("a sidecar never became ready; not starting the command", "err", err, "exit", exitUnavailable)
		a.sum.outcome = "sidecar never became ready"
		return exitUnavailable, false
	}
}

// runCommand starts the command and supervises it until it ends, forwarding signals.
func (a *app) runCommand() (child.Status, error) {
	started := time.Now()
	p, err := a.reaper.Start(a.cfg.Command, child.Options{
		Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, NewGroup: true,
	})
	if err != nil {
		return child.Status{}, err
	}
	a.log.Info("command started", "cmd", a.cfg.Command[0], "pid", p.Pid)
	for {
		select {
		case s := <-a.sigs:
			a.forward(p, s.(syscall.Signal))
		case st := <-p.Done():
			a.sum.ran = time.Since(started)
			a.sum.outcome = "command " + st.String()
			a.log.Info("command ended", "status", st.String(), "ran", a.sum.ran, "exit", st.ExitCode())
			return st, nil
		}
	}
}

func (a *app) forward(p *child.Process, sig syscall.Signal) {
	a.log.Info("forwarding signal", "signal", child.SignalName(sig), "group", a.cfg.SignalGroup)
	if err := p.Signal(sig, a.cfg.SignalGroup); err != nil {
		a.log.Debug("signal not delivered", "signal", child.SignalName(sig), "err", err)
	}
}
