package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sidesync/sidesync/internal/pod/logfmt"
	"github.com/sidesync/sidesync/internal/shared/redact"
)

// exitCode is the one mapping from what happened to sidesync's exit code (the table in the
// README, "Exit codes"): the command's own code when it ran, 128+N for a stop signal before it
// started, 126/127 when it could not start, 69 when a sidecar was not there.
func exitCode(o outcome) int {
	switch {
	case o.plan.missing:
		return exitUnavailable
	case o.stop != nil:
		return 128 + int(o.stop.sig)
	case o.run.startErr != nil:
		return startErrorCode(o.run.startErr)
	case o.run.started:
		return o.run.status.ExitCode()
	case o.wait.err != nil && !o.wait.tolerated:
		return exitUnavailable
	case o.sub.name == "quit" && o.quit.state == quitFailed:
		return exitUnavailable
	}
	return 0
}

// what says in a few words how the run ended, for the summary.
func what(o outcome) string {
	switch {
	case o.plan.missing:
		return "no sidecar found (--require-sidecar)"
	case o.stop != nil && o.wait.state == waitStopped:
		return o.stop.Error() + " while waiting"
	case o.stop != nil:
		return o.stop.Error() + " before the command started"
	case o.run.startErr != nil:
		return o.run.startErr.Error()
	case o.run.started:
		return "command " + o.run.status.String()
	case o.wait.err != nil:
		return "sidecar never became ready"
	}
	return "nothing ran"
}

// sidecarState is the sidecars' part of the summary: "ready", "not ready", "none found", ...
func sidecarState(o outcome) string {
	if o.plan.detected == detectNoneFound {
		return o.plan.detected.String()
	}
	return o.wait.state.String()
}

// reporter ends a run: it says how the run went, once, in the log and in the termination
// message.
type reporter struct {
	log            *slog.Logger
	terminationLog string    // the file Kubernetes reads the termination message from; "" for none
	start          time.Time // when sidesync started, for the total
}

func newReporter(s *session) reporter {
	return reporter{log: s.log, terminationLog: s.cfg.TerminationLog, start: s.start}
}

// finish logs the one-line summary, appends it to the termination log, and returns the exit
// code.
func (r reporter) finish(o outcome) int {
	code := exitCode(o)
	r.log.Info("done", "exit", code, "outcome", what(o), "sidecar", sidecarState(o), "waited", o.wait.waited,
		"ran", o.run.ran, "quit", o.quit.state.String(), "quit_took", o.quit.took, "total", time.Since(r.start))
	if r.terminationLog == "" {
		return code
	}
	if err := writeTerminationLog(r.terminationLog, redact.String(summaryLine(o, code)), terminationLogBound); err != nil {
		r.log.Warn("cannot write the termination message", "path", r.terminationLog, "err", err)
	}
	return code
}

// summaryLine is the summary as one sentence for `kubectl describe pod`.
func summaryLine(o outcome, code int) string {
	parts := []string{fmt.Sprintf("sidesync: exit %d (%s)", code, what(o))}
	if st := sidecarState(o); st != "" {
		parts = append(parts, fmt.Sprintf("sidecar %s after %v", st, logfmt.Round(o.wait.waited)))
	}
	parts = append(parts, fmt.Sprintf("ran %v", logfmt.Round(o.run.ran)))
	if o.quit.state != quitNotRun {
		parts = append(parts, fmt.Sprintf("quit %s in %v", o.quit.state, logfmt.Round(o.quit.took)))
	}
	return strings.Join(parts, "; ")
}

// terminationLogBound is how long the termination message may hold up sidesync's exit: the
// write never blocks on a pipe, so this only matters on a file system that hangs. It is not
// shorter because a process starved of CPU (a node at load 20) can wait that long for the
// goroutine that writes, on a file system that answers at once.
const terminationLogBound = 500 * time.Millisecond

// errTerminationLogSlow reports a termination log that did not take the message in time.
var errTerminationLogSlow = errors.New("no answer from the file system in time; message dropped")

// writeTerminationLog appends line to path in the background and waits at most bound for it:
// sidesync's exit code matters more than its termination message.
func writeTerminationLog(path, line string, bound time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- appendTerminationLog(path, line) }()
	t := time.NewTimer(bound)
	defer t.Stop()
	return firstAnswer(done, t.C)
}

// firstAnswer returns the write's answer, or errTerminationLogSlow if the bound passed first.
// After a stall (a process starved of CPU) both may be ready at once, and select picks either:
// the write's answer then wins, since it came in time as far as the file system is concerned.
func firstAnswer(done <-chan error, bound <-chan time.Time) error {
	select {
	case err := <-done:
		return err
	case <-bound:
		select {
		case err := <-done:
			return err
		default:
			return errTerminationLogSlow
		}
	}
}

// appendTerminationLog appends line to Kubernetes' termination-message file if it exists
// (it does in every container; it is never created here). It appends, rather than overwrites,
// so that a message the command wrote stays; the kubelet shows the last 4096 bytes, which end
// with this summary.
//
// The file is opened and written without blocking, with raw system calls (os.File would park on
// the poller): a FIFO with no reader fails the open at once (ENXIO) and a full pipe fails the
// write (EAGAIN), where a blocking open would hold sidesync's exit forever (issue 7, fault 3).
func appendTerminationLog(path, line string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ENXIO):
		return errors.New("a pipe that nobody reads")
	case err != nil:
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 {
		line = "\n" + line
	}
	b := []byte(line + "\n")
	n, err := unix.Write(fd, b)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return errors.New("a pipe that is full; message dropped")
	case err != nil:
		return err
	case n < len(b):
		return fmt.Errorf("wrote %d of %d bytes", n, len(b))
	}
	return nil
}
