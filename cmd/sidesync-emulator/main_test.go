package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary re-executes itself as sidesync-emulator (its emulated Envoy and its demo job
// are this program), found under that name through a symlink.
var emulatorBin string

// guard bounds every run; reaching it is a failure, never a synchronisation.
const guard = 2 * time.Minute

func TestMain(m *testing.M) {
	// The demo re-executes os.Executable(), which resolves the symlink to this test binary under
	// its own name: its subcommands cannot be mistaken for test flags, which start with -test.
	selfCall := len(os.Args) > 1 && (os.Args[1] == "emulate" || os.Args[1] == "demo-job")
	if filepath.Base(os.Args[0]) == "sidesync-emulator" || selfCall {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "sidesync-emulator-test-")
	if err == nil {
		var self string
		if self, err = os.Executable(); err == nil {
			emulatorBin = filepath.Join(dir, "sidesync-emulator")
			err = os.Symlink(self, emulatorBin)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// runEmulator runs sidesync-emulator with args and waits for it.
func runEmulator(t *testing.T, args ...string) result {
	t.Helper()
	return runEmulatorEnv(t, nil, args...)
}

// runEmulatorEnv runs sidesync-emulator with args and env added to this process's environment,
// and waits for it.
func runEmulatorEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	return runEmulatorTo(t, env, &stdout, &stderr, nil, args...)
}

// output keeps what a process writes.
type output interface {
	io.Writer
	String() string
}

// runEmulatorTo runs sidesync-emulator with its output to stdout and stderr, calls started, when
// set, once it runs, and waits for it.
func runEmulatorTo(t *testing.T, env []string, stdout, stderr output, started func(*exec.Cmd), args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, emulatorBin, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 10 * time.Second // the demo's emulated Envoy shares its stderr
	err := cmd.Start()
	if err == nil {
		if started != nil {
			started(cmd)
		}
		err = cmd.Wait()
	}
	if ctx.Err() != nil {
		t.Fatalf("sidesync-emulator %q did not finish within %v; stderr:\n%s", args, guard, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// demoTmp returns a temporary directory for a demo, as its TMPDIR, and checks when the test ends
// that the demo left nothing there: neither the sidesync it built nor the go command's files.
func demoTmp(t *testing.T) (env []string) {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		left, err := os.ReadDir(dir)
		if err != nil || len(left) > 0 {
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			t.Errorf("the demo left %q in its TMPDIR (%v)", names, err)
		}
	})
	return []string{"TMPDIR=" + dir}
}

// TestDemo runs the README's first command: it builds sidesync from this checkout, starts an
// emulated Envoy, and shows sidesync waiting, running the job, and quitting the sidecar.
func TestDemo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo builds sidesync with the go command: put go on PATH to run it")
	}
	r := runEmulatorEnv(t, demoTmp(t), "demo")
	if r.code != 0 {
		t.Fatalf("demo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "hello from the job") || !strings.Contains(r.stdout, "job done") {
		t.Errorf("stdout %q lacks the job's output", r.stdout)
	}
	mustContain(t, r.stderr, "building sidesync from this checkout", "built sidesync from this checkout", "envoy: state LIVE", "sidecar ready sidecar=envoy",
		"command started", "envoy: got POST /quitquitquit, answered 200", "sidecar quit sidecar=envoy", "done exit=0",
		"sidesync exited 0", "emulated Envoy exited 0")
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "+") {
			t.Errorf("timeline line without an offset: %q", l)
		}
	}
	if strings.Index(r.stderr, "envoy: state LIVE") > strings.Index(r.stderr, "command started") {
		t.Errorf("the job started before the sidecar was LIVE:\n%s", r.stderr)
	}
	if !strings.HasPrefix(strings.TrimSpace(r.stderr), "+0.") || !strings.Contains(strings.SplitN(r.stderr, "\n", 2)[0], "building sidesync") {
		t.Errorf("the demo does not first say what it builds:\n%s", r.stderr)
	}
}

// TestDemoStopped: SIGINT or SIGTERM stops the demo wherever it is, during the build or while
// sidesync waits for an Envoy that is not ready; sidesync gets the signal and still tells the
// Envoy to quit; the demo exits 128+N and leaves nothing behind.
func TestDemoStopped(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo builds sidesync with the go command: put go on PATH to run it")
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
		at   string // the timeline line that the signal follows
		want []string
	}{
		{"SIGINT during the build", syscall.SIGINT, nil, "building sidesync", []string{"stopped by signal 2 (interrupt)"}},
		{"SIGTERM while sidesync waits", syscall.SIGTERM, []string{"--ready-after", "1h"}, "sidecar not ready yet",
			[]string{"received SIGTERM while waiting", "envoy: got POST /quitquitquit, answered 200", "sidesync exited 143", "emulated Envoy exited 0", "stopped by signal 15 (terminated)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout bytes.Buffer
			stderr := &signalAfter{text: tc.at, sig: tc.sig}
			r := runEmulatorTo(t, demoTmp(t), &stdout, stderr, stderr.start, append([]string{"demo"}, tc.args...)...)
			if !stderr.signalled() {
				t.Fatalf("the demo never said %q; exit %d, stderr:\n%s", tc.at, r.code, r.stderr)
			}
			if want := 128 + int(tc.sig); r.code != want {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, want, r.stderr)
			}
			mustContain(t, r.stderr, tc.want...)
		})
	}
}

// signalAfter is a demo's stderr that sends sig to the demo once it has written a line containing
// text.
type signalAfter struct {
	text string
	sig  syscall.Signal

	mu   sync.Mutex
	buf  bytes.Buffer
	cmd  *exec.Cmd
	sent bool
}

func (w *signalAfter) start(cmd *exec.Cmd) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cmd = cmd
	w.signalIfDue()
}

func (w *signalAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.signalIfDue()
	return len(p), nil
}

// signalIfDue sends the signal once the text was written and the process is known.
func (w *signalAfter) signalIfDue() {
	if !w.sent && w.cmd != nil && strings.Contains(w.buf.String(), w.text) {
		w.sent = w.cmd.Process.Signal(w.sig) == nil
	}
}

func (w *signalAfter) signalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent
}

func (w *signalAfter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDemoFlags: sidesync's own flags pass through (here the article's policy), and the demo's
// flags are checked.
func TestDemoFlags(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo builds sidesync with the go command: put go on PATH to run it")
	}
	r := runEmulatorEnv(t, demoTmp(t), "demo", "--ready-after", "100ms", "--backoff", "polly", "--interval", "20ms")
	if r.code != 0 {
		t.Fatalf("demo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "decorrelated jitter", "turns LIVE after 100ms")
	if r := runEmulator(t, "demo", "--ready-after", "soon"); r.code != 2 || !strings.Contains(r.stderr, "--ready-after") {
		t.Errorf("bad --ready-after: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestUsage: help exits 0 on stdout; mistakes exit 2.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"demo", "--help"}} {
		if r := runEmulator(t, args...); r.code != 0 || !strings.Contains(r.stdout, "sidesync-emulator emulate PROFILE") {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	if r := runEmulator(t, "emulate", "--help"); r.code != 0 || !strings.Contains(r.stdout, "cloudsql") {
		t.Errorf("emulate --help: exit %d, stdout %q", r.code, r.stdout)
	}
	for _, args := range [][]string{nil, {"bogus"}, {"emulate", "bogus"}} {
		if r := runEmulator(t, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
	}
}

func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("output does not contain %q:\n%s", sub, s)
		}
	}
}
