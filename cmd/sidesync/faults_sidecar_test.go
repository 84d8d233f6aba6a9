package main

// Sidecar faults of docs/FAULTS.md: a sidecar that turns unready again, dies while the command
// runs, or answers its readiness or quit endpoint slowly, with garbage, an endless body, a
// redirect or a refusal. Each runs the real sidesync against an emulated sidecar process.

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends one POST to the emulator's admin, as an operator (or a test) would.
func post(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// TestFaultReadyThenNotReady: readiness is what the sidecar says now. An Envoy that was LIVE and
// then failed its health checks (DRAINING, 503) is not ready: sidesync keeps waiting, and goes
// on once it is LIVE again. Once the command has started, readiness is no longer watched: a
// sidecar that turns unready then neither stops the command nor changes the exit code, and is
// still told to quit.
func TestFaultReadyThenNotReady(t *testing.T) {
	t.Parallel()
	t.Run("during the wait", func(t *testing.T) {
		e := startEmu(t)
		post(t, e.admin()+"/healthcheck/fail") // LIVE, then DRAINING
		r := startSidesync(t, nil, "--admin", e.admin(), "--", bin.testcmd, "exit", "0")
		r.stderr.await(t, "503 Service Unavailable: DRAINING")
		post(t, e.admin()+"/healthcheck/ok")
		if code := r.exit(); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
		}
		mustContain(t, r.stderr.String(), "sidecar ready", "command started", "sidecar quit")
	})
	t.Run("while the command runs", func(t *testing.T) {
		e := startEmu(t)
		r := startSidesync(t, nil, "--admin", e.admin(), "--", bin.testcmd, "block")
		if l := next(t, r.stdout, "started"); l != "started" {
			t.Fatalf("command said %q", l)
		}
		// The ready answer's event comes after every earlier probe's: from here on, a new
		// request event would be a probe after the start.
		e.await("request", func(f map[string]string) bool { return isReady(f) && f["status"] == "200" })
		probes := e.requests("/ready")
		post(t, e.admin()+"/healthcheck/fail")
		r.stdin.Close()
		if code := r.exit(); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
		}
		if e.waitExit() != 0 || e.quits() != 1 {
			t.Errorf("quits %d, want 1", e.quits())
		}
		if got := e.requests("/ready"); got != probes {
			t.Errorf("probed %d times after the command started", got-probes)
		}
	})
}

// TestFaultSidecarDiesWhileCommandRuns: the sidecar process dies (SIGKILL) while the command
// runs: the command is not disturbed, its exit code is sidesync's, and the quit that finds
// nothing listening is retried, logged as failed, and bounded.
func TestFaultSidecarDiesWhileCommandRuns(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r := startSidesync(t, nil, "--admin", e.admin(), "--", bin.testcmd, "block")
	next(t, r.stdout, "started")
	e.Kill()
	e.waitExit()
	r.stdin.Close()
	start := time.Now()
	if code := r.exit(); code != 0 {
		t.Errorf("exit %d, want the command's 0; stderr:\n%s", code, r.stderr)
	}
	t.Logf("quit phase and exit after the sidecar died: %v", time.Since(start))
	mustContain(t, r.stderr.String(), "command ended", "sidecar quit failed", "connection refused", "after 4 attempts", "done exit=0", "quit=failed")
}

// TestFaultReadyAnswers: readiness answers that are slow, garbage, endless or a redirect. Each
// ends bounded: slow within the probe timeout is ready; slower is a timed-out probe; garbage is
// a protocol error; a redirect is not followed (the emulator sees no request for its target)
// and is not ready; an endless 200 is read up to the 64 KiB cap and counts as the 200 it is.
func TestFaultReadyAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		knobs []string
		args  []string
		code  int
		log   []string
	}{
		{"slow within the probe timeout", []string{"--ready-behaviour", "slow", "--slow-by", "50ms"}, nil, 0, []string{"sidecar ready"}},
		{"slower than the probe timeout", []string{"--ready-behaviour", "slow", "--slow-by", "1h"},
			[]string{"--probe-timeout", "100ms", "--timeout", "500ms"}, 69, []string{"a sidecar never became ready", "deadline exceeded"}},
		{"garbage", []string{"--ready-behaviour", "garbage"}, []string{"--timeout", "2s"}, 69, []string{"a sidecar never became ready", "malformed"}},
		{"redirect", []string{"--ready-behaviour", "redirect"}, []string{"--timeout", "2s"}, 69, []string{"a sidecar never became ready", "302 Found"}},
		{"endless body", []string{"--ready-behaviour", "endless"}, nil, 0, []string{"sidecar ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, tt.knobs...)
			args := append(append([]string{"--admin", e.admin(), "--quit", "never"}, tt.args...), "--", bin.testcmd, "exit", "0")
			start := time.Now()
			r := sidesync(t, nil, args...)
			t.Logf("sidesync took %v", time.Since(start))
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			mustContain(t, r.stderr, tt.log...)
			if strings.ContainsAny(r.stderr, "\x00\x1b") {
				t.Errorf("the sidecar's bytes reached the log unquoted:\n%q", r.stderr)
			}
			if n := e.requests("/followed-redirect"); n != 0 {
				t.Errorf("sidesync followed the redirect %d times", n)
			}
		})
	}
}

// TestFaultQuitAnswers: whatever the quit endpoint answers, sidesync exits with the command's
// code within the quit limits and says what happened. Refusals (403, 404, 405) and a redirect
// fail at once, without a retry and without following; a slow answer within the request
// timeout is a success, a slower one a timeout retried within the budget; garbage and an
// endless body are bounded.
func TestFaultQuitAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		knobs []string
		log   []string
	}{
		{"403", []string{"--quit-behaviour", "403"}, []string{"sidecar quit failed", "403 Forbidden: forbidden", "after 1 attempts"}},
		{"404", []string{"--quit-behaviour", "404"}, []string{"sidecar quit failed", "404 Not Found: not found", "after 1 attempts"}},
		{"405", []string{"--quit-behaviour", "405"}, []string{"sidecar quit failed", "405 Method Not Allowed", "after 1 attempts"}},
		{"redirect", []string{"--quit-behaviour", "redirect"}, []string{"sidecar quit failed", "302 Found", "after 1 attempts"}},
		{"slow within the request timeout", []string{"--quit-behaviour", "slow", "--slow-by", "50ms"}, []string{"sidecar quit sidecar=envoy", "status=200"}},
		{"slower than the request timeout", []string{"--quit-behaviour", "slow", "--slow-by", "1h"}, []string{"sidecar quit failed", "deadline exceeded"}},
		// The garbage comes with the sidecar going away: the retry finds it gone, which is the quit.
		{"garbage", []string{"--quit-behaviour", "garbage"}, []string{`malformed status line \"\\x00\\xff`, "sidecar quit: it closed the connection after the request"}},
		{"endless body", []string{"--quit-behaviour", "endless"}, []string{"sidecar quit sidecar=envoy", "status=200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, tt.knobs...)
			start := time.Now()
			// A request timeout far above any answer's time, even under load, except where the
			// test is the timeout.
			timeout := "5s"
			if strings.HasPrefix(tt.name, "slower") {
				timeout = "200ms"
			}
			r := sidesync(t, nil, "--admin", e.admin(), "--no-wait", "--quit-request-timeout", timeout, "--quit-timeout", "2s",
				"--", bin.testcmd, "exit", "7")
			t.Logf("sidesync took %v", time.Since(start))
			if r.code != 7 {
				t.Errorf("exit %d, want the command's 7; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, tt.log...)
			if strings.ContainsAny(r.stderr, "\x00\x1b") {
				t.Errorf("the sidecar's bytes reached the log unquoted:\n%q", r.stderr)
			}
			if n := e.requests("/followed-redirect"); n != 0 {
				t.Errorf("sidesync followed the redirect %d times", n)
			}
			if strings.Contains(tt.name, "40") {
				// The emulator logs a request once it has answered it: sidesync may have read the
				// answer and exited before the line is read here, so wait for it first. (The log's
				// "after 1 attempts" above says the same from sidesync's side.)
				e.await("request", func(f map[string]string) bool { return f["path"] == "/quitquitquit" })
				if n := e.requests("/quitquitquit"); n != 1 {
					t.Errorf("a refusal was retried: %d requests", n)
				}
			}
		})
	}
}
