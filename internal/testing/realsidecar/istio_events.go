package realsidecar

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventPrefix starts every event line of the stand-in Envoy (envoystandin/main.go).
const eventPrefix = "envoy-standin "

// Line is one line of the agent's output (its log, or a stand-in event), with when it was read.
type Line struct {
	Text string
	At   time.Time
}

// StandInEvent is one event line of the stand-in Envoy: "envoy-standin NAME key=value ...".
// Names: started (pid, admin, agent, status, drain-time-s), stats (kind: update or ready; n: the
// count of such polls; shown: name=value,...), status (one request on the status listener: n,
// its count; method, path, status, body: the agent's answer as forwarded), admin (method, path, status,
// query) and exit (code, why).
type StandInEvent struct {
	Name   string
	Fields map[string]string
	Line
}

// parseEvent parses an event line; ok is false for the agent's own lines.
func parseEvent(l Line) (ev StandInEvent, ok bool) {
	rest, ok := strings.CutPrefix(l.Text, eventPrefix)
	if !ok {
		return ev, false
	}
	name, rest, _ := strings.Cut(rest, " ")
	ev = StandInEvent{Name: name, Fields: map[string]string{}, Line: l}
	for rest != "" {
		key, after, found := strings.Cut(rest, "=")
		if !found {
			break
		}
		value := after
		if strings.HasPrefix(after, `"`) {
			if q, err := strconv.QuotedPrefix(after); err == nil {
				value, _ = strconv.Unquote(q)
				after = after[len(q):]
			}
		} else {
			value, after, _ = strings.Cut(after, " ")
		}
		ev.Fields[key] = value
		rest = strings.TrimPrefix(after, " ")
	}
	return ev, true
}

// lineLog is the agent's stdout and stderr: every byte for Output, and whole lines for those
// who wait on them. It is safe for one writer and concurrent readers.
type lineLog struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	lines   []Line
	changed chan struct{} // closed, and replaced, whenever lines grows or the log closes
	closed  bool
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

// Write appends p and splits off the complete lines.
func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	now, added := time.Now(), false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, Line{Text: string(l.partial[:i]), At: now})
		l.partial, added = l.partial[i+1:], true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

// close marks the end of the output: waiters stop waiting.
func (l *lineLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.lines = append(l.lines, Line{Text: string(l.partial), At: time.Now()})
		l.partial = nil
	}
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// await returns the first line that satisfies match, waiting for it until the output ends
// (ok false) or exitTimeout passes (a failure of the test).
func (l *lineLog) await(t testing.TB, what string, match func(Line) bool) (Line, bool) {
	t.Helper()
	deadline := time.NewTimer(exitTimeout)
	defer deadline.Stop()
	seen := 0
	for {
		l.mu.Lock()
		lines, changed, closed := l.lines[seen:], l.changed, l.closed
		l.mu.Unlock()
		for _, line := range lines {
			if match(line) {
				return line, true
			}
		}
		seen += len(lines)
		if closed {
			return Line{}, false
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("realsidecar: no %s within %v; output so far:\n%s", what, exitTimeout, l.String())
		}
	}
}

// Await waits for the first event of the stand-in named name that satisfies match (nil: any)
// and returns it. It fails the test if the agent's output ends first or after 30 s.
func (a *IstioAgent) Await(t testing.TB, name string, match func(StandInEvent) bool) StandInEvent {
	t.Helper()
	var ev StandInEvent
	_, ok := a.out.await(t, "stand-in event "+name, func(l Line) bool {
		e, isEvent := parseEvent(l)
		if !isEvent || e.Name != name || (match != nil && !match(e)) {
			return false
		}
		ev = e
		return true
	})
	if !ok {
		t.Fatalf("realsidecar: the agent exited (code %d) without the stand-in event %s; output:\n%s", a.code, name, a.Output())
	}
	return ev
}

// AwaitForwarded waits for the stand-in's status event of the n-th request (from 1) on its
// status listener and returns it. The stand-in writes that event before it answers, and the
// output is one pipe: once the event is read, so is everything that the agent and the stand-in
// wrote while handling that request and those before it (the agent's "NOT ready" lines, say).
func (a *IstioAgent) AwaitForwarded(t testing.TB, n int) StandInEvent {
	t.Helper()
	want := strconv.Itoa(n)
	return a.Await(t, "status", func(ev StandInEvent) bool { return ev.Fields["n"] == want })
}

// AwaitLog waits for the first line of the agent's own log that contains sub and returns it.
// It fails the test if the agent's output ends first or after 30 s.
func (a *IstioAgent) AwaitLog(t testing.TB, sub string) Line {
	t.Helper()
	line, ok := a.out.await(t, "agent log line with "+strconv.Quote(sub), func(l Line) bool {
		return !strings.HasPrefix(l.Text, eventPrefix) && strings.Contains(l.Text, sub)
	})
	if !ok {
		t.Fatalf("realsidecar: the agent exited (code %d) without logging %q; output:\n%s", a.code, sub, a.Output())
	}
	return line
}

// Events returns the stand-in's events named name so far, in order.
func (a *IstioAgent) Events(name string) []StandInEvent {
	a.out.mu.Lock()
	lines := append([]Line(nil), a.out.lines...)
	a.out.mu.Unlock()
	var evs []StandInEvent
	for _, l := range lines {
		if ev, ok := parseEvent(l); ok && ev.Name == name {
			evs = append(evs, ev)
		}
	}
	return evs
}

// LogLines returns the agent's own log lines so far that contain sub.
func (a *IstioAgent) LogLines(sub string) []string {
	a.out.mu.Lock()
	defer a.out.mu.Unlock()
	var out []string
	for _, l := range a.out.lines {
		if !strings.HasPrefix(l.Text, eventPrefix) && strings.Contains(l.Text, sub) {
			out = append(out, l.Text)
		}
	}
	return out
}
