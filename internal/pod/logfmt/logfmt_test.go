package logfmt

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestText(t *testing.T) {
	var b strings.Builder
	l := New(&b, "text", slog.LevelInfo, time.Now())
	l.Debug("hidden")
	l.With("sidecar", "envoy").Info("sidecar ready", "waited", 1234567890*time.Nanosecond, "url", "http://x/ready", "err", nil, "reason", "503 Service Unavailable")
	got := b.String()
	if strings.Contains(got, "hidden") {
		t.Errorf("debug line shown at info level: %q", got)
	}
	want := ` sidesync INFO sidecar ready sidecar=envoy waited=1.235s url=http://x/ready reason="503 Service Unavailable"` + "\n"
	if !strings.HasSuffix(got, want) || len(got) != len("2006-01-02T15:04:05.000Z")+len(want) {
		t.Errorf("got %q, want a timestamp then %q", got, want)
	}
}

func TestTimeline(t *testing.T) {
	var b strings.Builder
	start := time.Now().Add(-1500 * time.Millisecond)
	l := New(&b, "timeline", slog.LevelInfo, start)
	l.Warn("stopped", "err", errors.New("boom"))
	if got := b.String(); !strings.HasPrefix(got, "  +1.5") || !strings.Contains(got, "WARN: stopped err=boom") {
		t.Errorf("got %q", got)
	}
}

func TestJSON(t *testing.T) {
	var b strings.Builder
	New(&b, "json", slog.LevelInfo, time.Now()).Info("done", "ran", 1500*time.Microsecond, "exit", 0)
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatalf("not JSON: %q", b.String())
	}
	if m["ran"] != "1.5ms" || m["exit"] != float64(0) || m["msg"] != "done" {
		t.Errorf("got %v", m)
	}
}

func TestRound(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567890 * time.Nanosecond: "1.235s", 12345678: "12.35ms", 456789: "457µs", 0: "0s",
	} {
		if got := Round(d).String(); got != want {
			t.Errorf("Round(%d) = %s, want %s", d, got, want)
		}
	}
}

// TestNoCredentials: a URL's user and password never reach the log, in any format, whether the
// URL is an attribute, part of an error, or the message itself (issue 7, fault 12).
func TestNoCredentials(t *testing.T) {
	for _, format := range []string{"text", "json", "timeline"} {
		t.Run(format, func(t *testing.T) {
			var b strings.Builder
			l := New(&b, format, slog.LevelDebug, time.Now()).With("base", "http://admin:s3cret@127.0.0.1:15000")
			l.Info("waiting for http://u:s3cret@127.0.0.1/ready", "url", "http://user:s3cret@127.0.0.1:15000/ready",
				"err", errors.New("GET http://user:s3cret@127.0.0.1:15000/ready: dial: refused"))
			got := b.String()
			if strings.Contains(got, "s3cret") || strings.Contains(got, "user:") {
				t.Errorf("credentials in the log: %s", got)
			}
			if !strings.Contains(got, "http://xxxxx@127.0.0.1:15000/ready") {
				t.Errorf("the URL is gone altogether: %s", got)
			}
		})
	}
}
