package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReapOrphans: an orphaned grandchild that exits is reaped by sidesync when it is a child
// subreaper or PID 1, while the command still runs; no zombie is left behind.
func TestReapOrphans(t *testing.T) {
	t.Parallel()
	t.Run("subreaper", func(t *testing.T) {
		testReap(t, nil, "--subreaper")
	})
	t.Run("PID 1 in a new PID namespace", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to create a PID namespace")
		}
		testReap(t, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID})
	})
}

func testReap(t *testing.T, attr *syscall.SysProcAttr, flags ...string) {
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	args := append(append([]string{"--disabled", "--log-level", "debug"}, flags...), "--", bin.testcmd, "orphan", pidFile)
	r := launch(t, nil, attr, args...)
	if l := next(t, r.stdout, "orphaned"); l != "orphaned" {
		t.Fatalf("testcmd said %q", l)
	}
	pid := readWhenPresent(t, pidFile)
	// The orphan exits at once. Until it is reaped it stays in /proc as a zombie.
	deadline := time.Now().Add(guard)
	for {
		state, err := procState(pid)
		if errors.Is(err, os.ErrNotExist) {
			break // reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %s still exists in state %q after %v: not reaped", pid, state, guard)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition; the guard bounds it
	}
	r.stdin.Close()
	if code := r.exit(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, r.stderr)
	}
	mustContain(t, r.stderr.String(), "reaped orphan")
	if !strings.Contains(r.stderr.String(), "running as PID 1") && attr != nil {
		t.Errorf("sidesync did not know it was PID 1:\n%s", r.stderr)
	}
}

// readWhenPresent waits for a file written with a rename, and returns its contents.
func readWhenPresent(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written within %v", path, guard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procState returns the state letter of a process from /proc ("Z" for a zombie).
func procState(pid string) (string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3], nil
	}
	return s, nil
}
