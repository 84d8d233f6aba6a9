package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/logfmt"
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
	if err := appendTerminationLog(a.cfg.TerminationLog, s.line(code)); err != nil {
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

// appendTerminationLog appends line to Kubernetes' termination-message file if it exists
// (it does in every container; it is never created here). It appends, rather than overwrites,
// so that a message the command wrote stays; the kubelet shows the last 4096 bytes, which end
// with this summary.
func appendTerminationLog(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		line = "\n" + line
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		return err
	}
	return f.Close()
}
