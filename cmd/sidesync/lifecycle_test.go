package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func isReady(f map[string]string) bool { return f["path"] == "/ready" }

// TestWaitThenRun: the command starts only after the sidecar turned LIVE, and the sidecar is
// told to quit after it ends and exits 0.
func TestWaitThenRun(t *testing.T) {
	t.Parallel()
	// Ready after three "not ready" answers, not after a time: under load the first probe may
	// come late, and the test must still see the sidecar become ready while probed.
	e := startEmu(t, "--ready-after-probes", "3")
	marker := filepath.Join(t.TempDir(), "ran")
	r := sidesync(t, nil, "--admin", e.admin(), "--", bin.testcmd, "touch", marker)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the command did not run")
	}
	if code := e.waitExit(); code != 0 {
		t.Errorf("emulator exit code %d, want 0", code)
	}
	ready := e.count("request", func(f map[string]string) bool { return isReady(f) && f["status"] == "200" })
	notReady := e.count("request", func(f map[string]string) bool { return isReady(f) && f["status"] == "503" })
	if ready != 1 || notReady != 3 {
		t.Errorf("emulator answered /ready 200 x%d and 503 x%d, want 1 and 3", ready, notReady)
	}
	mustContain(t, r.stderr, "sidecar ready", "command started", "command ended", "sidecar quit", "done exit=0")
}

// TestNeverReady covers each policy for a sidecar that never turns ready. The waits are 2 s: the
// log must show the sidecar's answer (503 INITIALIZING), so at least one probe must be answered
// within the wait, and under CI's load a probe's round trip has taken over 200 ms.
func TestNeverReady(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantRan   bool
		wantQuits int
		wantProbe int // exact number of probes, 0 for "any"
	}{
		{"timeout fails with 69 and still quits", []string{"--timeout", "2s"}, 69, false, 1, 0},
		{"retries fail with 69", []string{"--max-retries", "3", "--interval", "5ms"}, 69, false, 1, 4},
		{"on-success leaves the sidecar alone", []string{"--timeout", "2s", "--quit", "on-success"}, 69, false, 0, 0},
		{"never leaves the sidecar alone", []string{"--timeout", "2s", "--quit", "never"}, 69, false, 0, 0},
		{"start-anyway runs the command", []string{"--timeout", "2s", "--on-timeout", "start-anyway"}, 0, true, 1, 0},
		{"polly retries", []string{"--backoff", "polly", "--interval", "10ms", "--max-retries", "2"}, 69, false, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, "--never-ready")
			marker := filepath.Join(t.TempDir(), "ran")
			args := append(append([]string{"--admin", e.admin()}, tt.args...), "--", bin.testcmd, "touch", marker)
			r := sidesync(t, nil, args...)
			if r.code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if _, err := os.Stat(marker); (err == nil) != tt.wantRan {
				t.Errorf("command ran: %v, want %v", err == nil, tt.wantRan)
			}
			if tt.wantQuits > 0 {
				e.waitExit() // every event has been read once it has exited
			}
			if e.quits() != tt.wantQuits {
				t.Errorf("quit requests %d, want %d", e.quits(), tt.wantQuits)
			}
			if n := e.requests("/ready"); tt.wantProbe != 0 && n != tt.wantProbe {
				t.Errorf("probes %d, want %d", n, tt.wantProbe)
			}
			mustContain(t, r.stderr, "503 Service Unavailable: INITIALIZING")
		})
	}
}

// TestProbeFailureModes: a readiness endpoint that hangs, resets, closes, answers 404 or 500,
// or is not there at all, ends in a bounded, documented outcome: exit 69 after the timeout, with
// the last problem in the log.
func TestProbeFailureModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour string
		wantLog   string
	}{
		{"hang", "deadline exceeded"},
		{"reset", "reset"},
		{"eof", "EOF"},
		{"404", "404 Not Found"},
		{"500", "500 Internal Server Error"},
		{"refused", "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			admin := closedAdmin(t)
			if tt.behaviour != "refused" {
				admin = startEmu(t, "--ready-behaviour", tt.behaviour).admin()
			}
			// Only the hanging endpoint needs a short probe timeout to be done soon; the others
			// answer at once, but under load (CI's busy loops) not within 100 ms, and a probe cut
			// short would log the deadline instead of what the endpoint did.
			limits := []string{"--timeout", "3s", "--probe-timeout", "2s"}
			if tt.behaviour == "hang" {
				limits = []string{"--timeout", "300ms", "--probe-timeout", "100ms"}
			}
			r := sidesync(t, nil, append(append([]string{"--admin", admin}, limits...), "--quit", "never", "--", bin.testcmd, "exit", "0")...)
			if r.code != 69 {
				t.Errorf("exit code %d, want 69; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "a sidecar never became ready", tt.wantLog)
		})
	}
}

// TestQuitFailureModes: whatever the quit endpoint does, sidesync exits with the command's code
// within the quit limits, and says what happened.
func TestQuitFailureModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour string
		wantLog   []string
	}{
		{"ok", []string{"sidecar quit sidecar=envoy url=", "status=200"}},
		{"reset", []string{"closed the connection after the request"}},
		{"eof", []string{"closed the connection after the request"}},
		{"500", []string{"sidecar quit failed", "500 Internal Server Error: internal error", "after 4 attempts"}},
		{"hang", []string{"sidecar quit failed", "deadline exceeded"}},
		// Not waited for (--no-wait), a sidecar that refuses may not have started yet: it gets
		// --timeout to listen, then the retries (docs/FAULTS.md).
		{"refused", []string{"nothing listens yet", "sidecar quit failed", "connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			admin := closedAdmin(t)
			if tt.behaviour != "refused" {
				admin = startEmu(t, "--quit-behaviour", tt.behaviour).admin()
			}
			// As above: a short request timeout only for the hanging endpoint.
			limits := []string{"--quit-request-timeout", "5s", "--quit-timeout", "20s"}
			if tt.behaviour == "hang" {
				limits = []string{"--quit-request-timeout", "200ms", "--quit-timeout", "2s"}
			}
			r := sidesync(t, nil, append(append([]string{"--admin", admin, "--no-wait", "--timeout", "300ms"}, limits...), "--", bin.testcmd, "exit", "7")...)
			if r.code != 7 {
				t.Errorf("exit code %d, want the command's 7; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, tt.wantLog...)
		})
	}
}

// closedAdmin is an admin URL where nothing listens.
func closedAdmin(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// TestLateListen: connection refused while the sidecar is not listening yet is "not ready".
// The emulator starts only once sidesync has logged a refused probe, so the order does not
// depend on timing.
func TestLateListen(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens here until the emulator below
	cmd := exec.Command(bin.sidesync, "--admin", "http://"+addr, "--", bin.testcmd, "exit", "0")
	cmd.Env = testEnv(nil)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	log := lines(stderr)
	var seen []string
	for l := next(t, log, "a refused probe"); !strings.Contains(l, "connection refused"); l = next(t, log, "a refused probe") {
		seen = append(seen, l)
	}
	e := startProfile(t, "envoy", "--listen", addr)
	for l := range log {
		seen = append(seen, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sidesync: %v; stderr:\n%s", err, strings.Join(seen, "\n"))
	}
	mustContain(t, strings.Join(seen, "\n"), "sidecar ready")
	if e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("quits %d, want 1", e.quits())
	}
}

// TestStdio: stdout carries the command's bytes and nothing else, even with debug logs, and
// stdin reaches the command.
func TestStdio(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	payload := "line one\n\tbinary \xff\x01\nno newline at the end"
	r := sidesync(t, nil, "--admin", e.admin(), "--log-level", "debug", "--", bin.testcmd, "print", payload)
	if r.stdout != payload {
		t.Errorf("stdout %q, want exactly %q", r.stdout, payload)
	}
	mustContain(t, r.stderr, "DEBUG probe")

	in := strings.Repeat("stdin data\n", 10000)
	r2 := runWithStdin(t, in, "--disabled", "--", bin.testcmd, "cat")
	if r2 != in {
		t.Errorf("stdin passthrough: got %d bytes, want %d", len(r2), len(in))
	}
}

func runWithStdin(t *testing.T, in string, args ...string) string {
	t.Helper()
	r := startSidesync(t, nil, args...)
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		for l := range r.stdout {
			out.WriteString(l + "\n")
		}
		close(done)
	}()
	if _, err := io.WriteString(r.stdin, in); err != nil {
		t.Fatal(err)
	}
	r.stdin.Close()
	if code := r.exit(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, r.stderr)
	}
	<-done
	return out.String()
}

// TestJSONLogs: every stderr line is a JSON object with a message, durations readable.
func TestJSONLogs(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r := sidesync(t, nil, "--admin", e.admin(), "--log-format", "json", "--", bin.testcmd, "exit", "0")
	var last map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if last["msg"] == nil || last["level"] == nil {
			t.Errorf("line without msg or level: %q", l)
		}
	}
	if last["msg"] != "done" || last["exit"] != float64(0) {
		t.Errorf("last line %v, want the summary", last)
	}
	if w, ok := last["waited"].(string); !ok || !strings.HasSuffix(w, "s") {
		t.Errorf("waited = %v, want a duration string", last["waited"])
	}
}

// TestTerminationLog: the summary is appended to the termination-message file, after whatever
// the command wrote there.
func TestTerminationLog(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	path := filepath.Join(t.TempDir(), "termination-log")
	os.WriteFile(path, nil, 0o644)
	r := sidesync(t, []string{"SIDESYNC_TERMINATION_LOG=" + path}, "--admin", e.admin(), "--",
		"/bin/sh", "-c", "echo 'the job failed: no input' > "+path+"; exit 4")
	if r.code != 4 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	if !strings.HasPrefix(got, "the job failed: no input\n\nsidesync: exit 4 (command exited 4); sidecar ready after ") ||
		!strings.Contains(got, "quit ok in") {
		t.Errorf("termination log:\n%s", got)
	}
	missing := filepath.Join(t.TempDir(), "absent")
	sidesync(t, []string{"SIDESYNC_TERMINATION_LOG=" + missing}, "--disabled", "--", bin.testcmd, "exit", "0")
	if _, err := os.Stat(missing); err == nil {
		t.Error("a missing termination log was created")
	}
}
