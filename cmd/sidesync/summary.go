package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sidesync/sidesync/internal/logfmt"
	"github.com/sidesync/sidesync/internal/redact"
)

// summary collects what happened, for the final log line and the termination message.
type summary struct {
	sidecar  string        // ready, not ready, not waited for, disabled
	waited   time.Duration // time spent waiting
	probes   int
	outcome  string        // "command exited 0", "sidecar never became ready", ...
	ran      time.Duration // time the command ran
	quit     string        // ok, failed, skipped (...), none configured
	quitTook time.Duration
}

// finish logs the one-line summary and appends it to the termination log.
func (a *app) finish(code int) {
	s := a.sum
	a.log.Info("done", "exit", code, "outcome", s.outcome, "sidecar", s.sidecar,
		"waited", s.waited, "ran", s.ran, "quit", s.quit, "quit_took", s.quitTook, "total", time.Since(a.start))
	if a.cfg.TerminationLog == "" {
		return
	}
	if err := writeTerminationLog(a.cfg.TerminationLog, redact.String(s.line(code)), terminationLogBound); err != nil {
		a.log.Warn("cannot write the termination message", "path", a.cfg.TerminationLog, "err", err)
	}
}

// line is the summary as one sentence for `kubectl describe pod`.
func (s summary) line(code int) string {
	parts := []string{fmt.Sprintf("sidesync: exit %d (%s)", code, s.outcome)}
	if s.sidecar != "" {
		parts = append(parts, fmt.Sprintf("sidecar %s after %v", s.sidecar, logfmt.Round(s.waited)))
	}
	parts = append(parts, fmt.Sprintf("ran %v", logfmt.Round(s.ran)))
	if s.quit != "" {
		parts = append(parts, fmt.Sprintf("quit %s in %v", s.quit, logfmt.Round(s.quitTook)))
	}
	return strings.Join(parts, "; ")
}

// terminationLogBound is how long the termination message may hold up sidesync's exit: the
// write never blocks on a pipe, so this only matters on a file system that hangs.
const terminationLogBound = 50 * time.Millisecond

// errTerminationLogSlow reports a termination log that did not take the message in time.
var errTerminationLogSlow = errors.New("no answer from the file system in time; message dropped")

// writeTerminationLog appends line to path in the background and waits at most bound for it:
// sidesync's exit code matters more than its termination message.
func writeTerminationLog(path, line string, bound time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- appendTerminationLog(path, line) }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errTerminationLogSlow
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
