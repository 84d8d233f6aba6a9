// Package logfmt holds sidesync's log handlers: one line per event on stderr, as text (the
// default), as JSON, or as a timeline of offsets from the start (the demo's output).
package logfmt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/shared/redact"
)

// Round keeps durations readable: 1.234s, 12.35ms, 456µs.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// New returns a logger writing to w in format "text", "json" or "timeline" (timeline lines
// start with the time since start).
func New(w io.Writer, format string, level slog.Leveler, start time.Time) *slog.Logger {
	w = redacting{w}
	if format == "json" {
		return slog.New(&jsonHandler{w: w, mu: new(sync.Mutex), level: level})
	}
	return slog.New(&lineHandler{w: w, mu: new(sync.Mutex), level: level, timeline: format == "timeline", start: start})
}

// redacting removes credentials from URLs in every line before it is written: a sidecar URL
// may carry a user and password, and a log line may quote that URL anywhere (in an attribute, or
// inside an error's message). Both handlers write each record with one Write.
type redacting struct{ w io.Writer }

func (r redacting) Write(p []byte) (int, error) {
	s := redact.String(string(p))
	if len(s) == len(p) && s == string(p) {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// lineHandler writes "2026-12-02T09:00:00.123Z sidesync INFO sidecar ready waited=1.2s": the
// name tells sidesync's lines apart from the wrapped command's, which share stderr.
type lineHandler struct {
	w        io.Writer
	mu       *sync.Mutex
	level    slog.Leveler
	timeline bool
	start    time.Time
	attrs    string // preformatted attributes from WithAttrs
	group    string // key prefix from WithGroup
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if h.timeline {
		fmt.Fprintf(&b, "%9s  ", "+"+strconv.FormatFloat(r.Time.Sub(h.start).Seconds(), 'f', 3, 64)+"s")
	} else {
		b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
		b.WriteString(" sidesync ")
		b.WriteString(r.Level.String())
		b.WriteByte(' ')
	}
	if h.timeline && r.Level >= slog.LevelWarn {
		b.WriteString(r.Level.String() + ": ")
	}
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	var b strings.Builder
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	h2.attrs += b.String()
	return &h2
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.group += name + "."
	return &h2
}

// appendAttr writes " key=value", quoting values that would not read as one word.
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			appendAttr(b, group+a.Key+".", g)
		}
		return
	}
	var v string
	switch a.Value.Kind() {
	case slog.KindDuration:
		v = Round(a.Value.Duration()).String()
	case slog.KindAny:
		if a.Value.Any() == nil {
			return // an absent error, say
		}
		v = fmt.Sprint(a.Value.Any())
	default:
		v = a.Value.String()
	}
	if v == "" || strings.ContainsAny(v, " \t\n\r\"=") || !strconv.CanBackquote(v) {
		v = strconv.Quote(v)
	}
	b.WriteString(" " + group + a.Key + "=" + v)
}
