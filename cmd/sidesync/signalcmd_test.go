package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startBlocked starts testcmd MODE (block, ignore-term), a real process that waits for its stdin
// to close, and returns it once it has said "started" (its signal handling is then set up).
func startBlocked(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin.testcmd, mode)
	cmd.Env = testEnv(nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		t.Fatalf("testcmd %s said %q, want started", mode, line)
	}
	return cmd
}

// TestSignal: "sidesync signal" sends its signal to a real process and reports whether it
// ended, within its --timeout; each exit code of its contract.
func TestSignal(t *testing.T) {
	t.Parallel()
	t.Run("the process ends", func(t *testing.T) {
		p := startBlocked(t, "block")
		pid := strconv.Itoa(p.Process.Pid)
		r := sidesync(t, nil, "signal", "--timeout", "15s", "TERM", pid)
		if r.code != 0 || !strings.Contains(r.stderr, "sent SIGTERM to PID "+pid+" ("+bin.testcmd+" block)") || !strings.Contains(r.stderr, "ended") {
			t.Errorf("exit %d, stderr %q; want 0, naming the process, and ended", r.code, r.stderr)
		}
		if err := p.Wait(); err == nil || p.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("the process ended with %v, want by SIGTERM", p.ProcessState)
		}
	})
	t.Run("the process ignores the signal", func(t *testing.T) {
		p := startBlocked(t, "ignore-term")
		r := sidesync(t, nil, "signal", "--timeout=300ms", "SIGTERM", strconv.Itoa(p.Process.Pid))
		if r.code != 69 || !strings.Contains(r.stderr, "still runs 300ms after SIGTERM") {
			t.Errorf("exit %d, stderr %q; want 69 and still runs", r.code, r.stderr)
		}
		if err := p.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the process is gone: %v", err)
		}
	})
	t.Run("a number", func(t *testing.T) {
		p := startBlocked(t, "block")
		if r := sidesync(t, nil, "signal", "--timeout=15s", "9", strconv.Itoa(p.Process.Pid)); r.code != 0 {
			t.Errorf("exit %d, stderr %q; want 0", r.code, r.stderr)
		}
		p.Wait()
		if ws := p.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
			t.Errorf("the process ended with %v, want by SIGKILL", p.ProcessState)
		}
	})
	t.Run("no such process", func(t *testing.T) {
		p := exec.Command(bin.testcmd, "exit", "0")
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		r := sidesync(t, nil, "signal", "TERM", strconv.Itoa(p.Process.Pid))
		if r.code != 69 || !strings.Contains(r.stderr, "no process") {
			t.Errorf("exit %d, stderr %q; want 69 and no process", r.code, r.stderr)
		}
	})
	t.Run("another user's process", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to run as another user")
		}
		p := startBlocked(t, "block")
		_, copied := worldReadableCopy(t)
		r := runAs(t, &syscall.Credential{Uid: nonRoot, Gid: nonRoot}, copied, "signal", "TERM", strconv.Itoa(p.Process.Pid))
		if r.code != 77 || !strings.Contains(r.stderr, "runAsUser") {
			t.Errorf("exit %d, stderr %q; want 77 naming runAsUser", r.code, r.stderr)
		}
		if err := p.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the process is gone: %v", err)
		}
	})
	for _, args := range [][]string{{"FOO"}, {"TERM", "x"}, {"TERM", "0"}, {"TERM", "1", "2"}, {"--timeout", "-1s"}, {"--wait=1s"}, {"0"}} {
		t.Run("usage "+strings.Join(args, " "), func(t *testing.T) {
			if r := sidesync(t, nil, append([]string{"signal"}, args...)...); r.code != 2 || !strings.Contains(r.stderr, "sidesync: signal: ") {
				t.Errorf("exit %d, stderr %q; want 2", r.code, r.stderr)
			}
		})
	}
}
