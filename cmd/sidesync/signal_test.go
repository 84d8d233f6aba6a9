package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// running is a sidesync started in the background.
type running struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout <-chan string
	stderr *logBuf
	done   chan struct{}
}

// logBuf collects a process's stderr as it comes, so that a test can wait for a log line: the
// only safe way to know that sidesync has reached a point, whatever the machine's load.
type logBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLogBuf() *logBuf { return &logBuf{changed: make(chan struct{})} }

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// await waits until the log holds sub, failing the test at the guard.
func (l *logBuf) await(t *testing.T, sub string) {
	t.Helper()
	deadline := time.After(guard)
	for {
		l.mu.Lock()
		has, changed := strings.Contains(l.b.String(), sub), l.changed
		l.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %q in the log within %v; log:\n%s", sub, guard, l.String())
		}
	}
}

func startSidesync(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	return launch(t, env, nil, args...)
}

// launch starts sidesync with extra environment variables and process attributes.
func launch(t *testing.T, env []string, attr *syscall.SysProcAttr, args ...string) *running {
	t.Helper()
	r := &running{t: t, cmd: exec.Command(bin.sidesync, args...), stderr: newLogBuf(), done: make(chan struct{})}
	r.cmd.Env = testEnv(env)
	r.cmd.SysProcAttr = attr
	r.cmd.Stderr = r.stderr
	in, err := r.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// An os.Pipe rather than StdoutPipe: Wait, which runs concurrently, would close the latter
	// before everything was read.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = w
	r.stdin = in
	err = r.cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	r.stdout = lines(out)
	// After a failure, the command (testcmd block, say) may outlive a killed sidesync and hold
	// stderr open: closing stdin ends it, and the delay bounds the wait for the rest.
	r.cmd.WaitDelay = guard
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		r.stdin.Close()
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

func (r *running) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %v: %v", sig, err)
	}
}

// exit waits for sidesync to end and returns its exit code.
func (r *running) exit() int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(guard):
		// SIGABRT, which sidesync does not catch: the runtime prints every goroutine's stack.
		r.cmd.Process.Signal(syscall.SIGABRT)
		select {
		case <-r.done:
		case <-time.After(guard):
		}
		r.t.Fatalf("sidesync still running after %v; stderr (ending with its stacks):\n%s", guard, r.stderr)
	}
	return -1
}

// TestForwardedSignals sends each forwarded signal to sidesync and reads the command's echo of
// it; SIGURG and SIGCHLD sent in between must never arrive.
func TestForwardedSignals(t *testing.T) {
	t.Parallel()
	for _, group := range []bool{false, true} {
		name := "to the command"
		if group {
			name = "to the process group"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--disabled"}
			if group {
				args = append(args, "--signal-group")
			}
			r := startSidesync(t, nil, append(args, "--", bin.testcmd, "signals")...)
			if l := next(t, r.stdout, "ready line"); !strings.HasPrefix(l, "ready") {
				t.Fatalf("testcmd said %q", l)
			}
			for _, s := range forwarded {
				sig := s.(syscall.Signal)
				r.signal(syscall.SIGURG)
				r.signal(syscall.SIGCHLD)
				r.signal(sig)
				if got, want := next(t, r.stdout, child.SignalName(sig)), child.SignalName(sig); got != want {
					t.Errorf("command got %s, want %s", got, want)
				}
			}
			r.stdin.Close()
			if code := r.exit(); code != 0 {
				t.Errorf("exit code %d, want 0; stderr:\n%s", code, r.stderr)
			}
			for l := range r.stdout {
				t.Errorf("unexpected output after the last signal: %q", l)
			}
		})
	}
}

// TestSignalGroup: with --signal-group every process of the command's group gets the signal;
// without it, only the command.
func TestSignalGroup(t *testing.T) {
	t.Parallel()
	for _, group := range []bool{false, true} {
		t.Run(map[bool]string{false: "command only", true: "whole group"}[group], func(t *testing.T) {
			args := []string{"--disabled", "--signal-group=" + map[bool]string{false: "false", true: "true"}[group], "--", bin.testcmd, "group"}
			r := startSidesync(t, nil, args...)
			next(t, r.stdout, "first ready line")
			next(t, r.stdout, "second ready line")
			r.signal(syscall.SIGUSR1)
			if got := next(t, r.stdout, "SIGUSR1"); got != "SIGUSR1" {
				t.Fatalf("got %q", got)
			}
			// A second signal orders things: the grandchild's echo of SIGUSR1, if any, comes first.
			r.signal(syscall.SIGUSR2)
			var got []string
			for len(got) < map[bool]int{false: 1, true: 3}[group] {
				got = append(got, next(t, r.stdout, "echo"))
			}
			r.stdin.Close()
			r.exit()
			for l := range r.stdout {
				got = append(got, l)
			}
			want := map[bool][]string{false: {"SIGUSR2"}, true: {"SIGUSR1", "SIGUSR2", "SIGUSR2"}}[group]
			if strings.Join(sorted(got), " ") != strings.Join(sorted(want), " ") {
				t.Errorf("after the first echo the processes printed %q, want %q", got, want)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestSignalDuringWait: SIGTERM or SIGINT while waiting stops at once, without running the
// command, tells the sidecar to quit, and exits 128+N.
func TestSignalDuringWait(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(child.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, "--never-ready")
			marker := filepath.Join(t.TempDir(), "ran")
			r := startSidesync(t, nil, "--admin", e.admin(), "--timeout", "0", "--", bin.testcmd, "touch", marker)
			e.await("request", func(f map[string]string) bool { return f["path"] == "/ready" })
			r.signal(syscall.SIGUSR1) // ignored while waiting
			// Linux delivers lower-numbered pending signals first: wait until SIGUSR1 was seen
			// before sending SIGINT (2), SIGHUP (1) or SIGQUIT (3).
			r.stderr.await(t, "ignoring signal")
			r.signal(sig)
			if code, want := r.exit(), 128+int(sig); code != want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, want, r.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
			if e.waitExit() != 0 || e.quits() != 1 {
				t.Errorf("emulator got %d quit requests, want 1", e.quits())
			}
			mustContain(t, r.stderr.String(), "stopped waiting for the sidecar", "ignoring signal")
		})
	}
}

// TestSignalDuringWaitQuitPolicy: with --quit on-success a signal during the wait is not a
// success, so the sidecar is left alone.
func TestSignalDuringWaitQuitPolicy(t *testing.T) {
	t.Parallel()
	e := startEmu(t, "--never-ready")
	r := startSidesync(t, nil, "--admin", e.admin(), "--quit", "on-success", "--", bin.testcmd, "exit", "0")
	e.await("request", func(f map[string]string) bool { return f["path"] == "/ready" })
	r.signal(syscall.SIGTERM)
	if code := r.exit(); code != 143 {
		t.Errorf("exit code %d, want 143", code)
	}
	if e.quits() != 0 {
		t.Errorf("emulator got %d quit requests, want 0", e.quits())
	}
}
