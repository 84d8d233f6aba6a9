package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, emulatorBin, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
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

// TestDemo runs the README's first command: it builds sidesync from this checkout, starts an
// emulated Envoy, and shows sidesync waiting, running the job, and quitting the sidecar.
func TestDemo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo builds sidesync with the go command")
	}
	r := runEmulator(t, "demo")
	if r.code != 0 {
		t.Fatalf("demo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "hello from the job") || !strings.Contains(r.stdout, "job done") {
		t.Errorf("stdout %q lacks the job's output", r.stdout)
	}
	mustContain(t, r.stderr, "built sidesync from this checkout", "envoy: state LIVE", "sidecar ready sidecar=envoy",
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
}

// TestDemoFlags: sidesync's own flags pass through (here the article's policy), and the demo's
// flags are checked.
func TestDemoFlags(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo builds sidesync with the go command")
	}
	r := runEmulator(t, "demo", "--ready-after", "100ms", "--backoff", "polly", "--interval", "20ms")
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
