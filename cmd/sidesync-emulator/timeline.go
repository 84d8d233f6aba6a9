package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// timeline prints what happened, one line each, as the offset from the demo's start.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) say(at time.Time, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	offset := "+" + strconv.FormatFloat(at.Sub(t.start).Seconds(), 'f', 3, 64) + "s"
	fmt.Fprintf(t.w, "%9s  %s\n", offset, fmt.Sprintf(format, args...))
}

// relayLog turns sidesync's JSON log lines into timeline lines until r ends. A line that is not
// JSON (the job's own stderr) is shown as it is.
func relayLog(t *timeline, r io.Reader) {
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		at, text, ok := renderLogLine(lines.Bytes())
		if !ok {
			at, text = time.Now(), lines.Text()
		}
		t.say(at, "%s", text)
	}
}

// renderLogLine renders one slog JSON record as "LEVEL: msg key=value ...", keeping the
// attributes in the order sidesync wrote them (INFO is left out, as in sidesync's text log).
func renderLogLine(line []byte) (time.Time, string, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return time.Time{}, "", false
	}
	var at time.Time
	var level, msg string
	var attrs strings.Builder
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return time.Time{}, "", false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return time.Time{}, "", false
		}
		switch key {
		case "time":
			at, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(v))
		case "level":
			level = fmt.Sprint(v)
		case "msg":
			msg = fmt.Sprint(v)
		default:
			attrs.WriteString(" " + fmt.Sprint(key) + "=" + quoteIfNeeded(fmt.Sprint(v)))
		}
	}
	if level != "" && level != "INFO" {
		msg = level + ": " + msg
	}
	return at, msg + attrs.String(), !at.IsZero()
}

// quoteIfNeeded quotes a value that would not read as one word.
func quoteIfNeeded(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		return strconv.Quote(v)
	}
	return v
}
