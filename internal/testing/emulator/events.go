package emulator

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// eventLog writes event lines (see the package documentation). Each line
// goes out in one Write, under a mutex, so lines never interleave and their
// t= values never go backwards.
type eventLog struct {
	mu sync.Mutex
	w  io.Writer
}

func newEventLog(w io.Writer) *eventLog {
	if w == nil {
		w = io.Discard
	}
	return &eventLog{w: w}
}

// emit writes one event; kv holds key, value pairs. A failed write is
// ignored: a closed stdout must not stop the sidecar.
func (l *eventLog) emit(name string, kv ...string) {
	var b strings.Builder
	b.WriteString(name)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(" " + kv[i] + "=" + escapeValue(kv[i+1]))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b.WriteString(" t=" + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	io.WriteString(l.w, b.String())
	if f, ok := l.w.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// escapeValue keeps a value free of spaces and control bytes so that lines
// split on spaces; "-" stands for the empty value.
func escapeValue(v string) string {
	if v == "" {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= 0x20 || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Event is one parsed event line.
type Event struct {
	// Name is the first word: address, listening, state, request, quit or
	// exit.
	Name string
	// Fields maps each key to its value as written (escaped, "-" for empty).
	Fields map[string]string
	// Time is the t= value.
	Time time.Time
}

// Get returns the value of key, or "" when the event has none.
func (e Event) Get(key string) string {
	return e.Fields[key]
}

// ParseEvent parses one event line, with or without its trailing newline.
func ParseEvent(line string) (Event, error) {
	words := strings.Fields(line)
	if len(words) < 2 {
		return Event{}, errors.New("emulator: event line too short: " + strconv.Quote(line))
	}
	ev := Event{Name: words[0], Fields: make(map[string]string, len(words)-1)}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return Event{}, fmt.Errorf("emulator: malformed field %q in event line", w)
		}
		ev.Fields[k] = v
	}
	last := words[len(words)-1]
	ns, err := strconv.ParseInt(strings.TrimPrefix(last, "t="), 10, 64)
	if !strings.HasPrefix(last, "t=") || err != nil {
		return Event{}, fmt.Errorf("emulator: event line does not end in t=<unix nanoseconds>: %q", line)
	}
	ev.Time = time.Unix(0, ns)
	return ev, nil
}
