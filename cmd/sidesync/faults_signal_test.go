package main

// Signal faults of docs/FAULTS.md: the command killed by each signal, stopped and continued,
// signals after the command ended, and bursts. Real processes; the tests wait on the command's
// output and sidesync's log, never on the order in which the kernel delivers signals.

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// TestFaultKilledBySignal: a command killed by any signal whose default action ends a process
// (every catchable one but SIGCHLD, SIGCONT, SIGURG, SIGWINCH, which are ignored by default, and
// SIGTSTP, SIGTTIN, SIGTTOU, which stop it), or by SIGKILL, makes sidesync exit 128+N, as a shell
// does. The command is a shell that kills itself, with core dumps off.
func TestFaultKilledBySignal(t *testing.T) {
	t.Parallel()
	for sig := syscall.Signal(1); sig < 32; sig++ {
		switch sig {
		case syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGURG, syscall.SIGWINCH, syscall.SIGSTOP,
			syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
			continue
		}
		t.Run(child.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			r := sidesync(t, nil, "--disabled", "--", "/bin/sh", "-c", "ulimit -c 0; kill -"+strconv.Itoa(int(sig))+" $$; exit 99")
			if want := 128 + int(sig); r.code != want {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, want, r.stderr)
			}
			mustContain(t, r.stderr, "status=\"killed by "+child.SignalName(sig))
		})
	}
}

// TestFaultStopAndContinue: SIGSTOP and SIGCONT sent to the command (by a debugger, an
// operator, a cgroup freezer) are not an exit: sidesync keeps waiting for it, forwards signals
// once it runs again, and exits with its real exit code.
func TestFaultStopAndContinue(t *testing.T) {
	t.Parallel()
	r := startSidesync(t, nil, "--disabled", "--", bin.testcmd, "signals")
	l := next(t, r.stdout, "ready line")
	killOnCleanup(t, l)
	pid, err := strconv.Atoi(strings.TrimPrefix(l, "ready "))
	if err != nil {
		t.Fatalf("command said %q", l)
	}
	for range 3 {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		awaitState(t, strconv.Itoa(pid), "T")
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// The command runs again: it echoes a signal forwarded by sidesync.
		r.signal(syscall.SIGUSR1)
		if got := next(t, r.stdout, "SIGUSR1"); got != "SIGUSR1" {
			t.Fatalf("command said %q", got)
		}
	}
	if strings.Contains(r.stderr.String(), "command ended") {
		t.Fatalf("a stop was taken for an exit:\n%s", r.stderr)
	}
	r.stdin.Close()
	if code := r.exit(); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, r.stderr)
	}
	if n := strings.Count(r.stderr.String(), "command ended"); n != 1 {
		t.Errorf("%d \"command ended\" lines, want 1:\n%s", n, r.stderr)
	}
}

// killOnCleanup kills the command whose "ready PID" line is given when the test ends, so that a
// failed test never leaves it holding sidesync's pipes (which would hang the test's Wait).
func killOnCleanup(t *testing.T, readyLine string) {
	if pid, err := strconv.Atoi(strings.TrimPrefix(readyLine, "ready ")); err == nil {
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
}

// awaitState polls /proc until the process is in state (a condition, bounded by the guard).
func awaitState(t *testing.T, pid, state string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		got, err := procState(pid)
		if err != nil {
			t.Fatal(err)
		}
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s in state %q, not %q, after %v", pid, got, state, guard)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFaultSignalAfterCommand: stop signals that arrive after the command ended, while the
// sidecar is being told to quit (here it hangs), neither cut the quit short nor change the exit
// code: the command's 3 stands, and the quit ends within its own limit.
func TestFaultSignalAfterCommand(t *testing.T) {
	t.Parallel()
	e := startEmu(t, "--quit-behaviour", "hang")
	r := startSidesync(t, nil, "--admin", e.admin(), "--quit-request-timeout", "300ms", "--quit-timeout", "1s", "--", bin.testcmd, "exit", "3")
	r.stderr.await(t, "telling the sidecar to quit")
	e.await("request", func(f map[string]string) bool { return f["path"] == "/quitquitquit" })
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1} {
		r.signal(sig)
	}
	if code := r.exit(); code != 3 {
		t.Errorf("exit %d, want the command's 3; stderr:\n%s", code, r.stderr)
	}
	mustContain(t, r.stderr.String(), "sidecar quit failed", "done exit=3")
}

// TestFaultSignalBurst: a burst of signals loses no stop signal. Thousands of SIGUSR1, SIGUSR2,
// SIGWINCH (and SIGURG and SIGCHLD, never forwarded) then one SIGTERM: while waiting, sidesync
// stops with 143; while the command runs, the command gets the SIGTERM. Signals of one kind may
// coalesce, as the kernel's do.
func TestFaultSignalBurst(t *testing.T) {
	t.Parallel()
	burst := func(pid int) {
		for i := range 3000 {
			sig := []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGURG, syscall.SIGCHLD, syscall.SIGWINCH}[i%5]
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Fatal(err)
			}
		}
		syscall.Kill(pid, syscall.SIGTERM)
	}
	t.Run("while waiting", func(t *testing.T) {
		e := startEmu(t, "--never-ready")
		r := startSidesync(t, nil, "--admin", e.admin(), "--timeout", "0", "--", bin.testcmd, "exit", "0")
		e.await("request", func(f map[string]string) bool { return f["path"] == "/ready" })
		burst(r.cmd.Process.Pid)
		if code := r.exit(); code != 143 {
			t.Errorf("exit %d, want 143", code)
		}
	})
	t.Run("while the command runs", func(t *testing.T) {
		// A shell, whose traps never drop a signal of another kind (a Go program's channel can).
		r := startSidesync(t, nil, "--disabled", "--", "/bin/sh", "-c",
			`trap : USR1 USR2 WINCH; trap 'echo got TERM; exit 5' TERM; echo "ready $$"; while :; do sleep 0.05; done`)
		killOnCleanup(t, next(t, r.stdout, "ready line"))
		burst(r.cmd.Process.Pid)
		if l := next(t, r.stdout, "the trap's line"); l != "got TERM" {
			t.Errorf("command said %q", l)
		}
		if code := r.exit(); code != 5 {
			t.Errorf("exit %d, want the trap's 5; stderr:\n%s", code, r.stderr)
		}
	})
}

// TestFaultPodDeletion: deleting a pod stops its sidecar at the same moment sidesync gets
// SIGTERM. A quit that then finds nothing listening is the sidecar already gone: one INFO line,
// no retries, no warning, quit=ok. It was four refused attempts and a WARN. Here the sidecar is
// killed first (the kubelet's order is not known), then sidesync gets SIGTERM, while the command
// runs (forwarded: the command dies of it) and while it waits for the sidecar.
func TestFaultPodDeletion(t *testing.T) {
	t.Parallel()
	t.Run("while the command runs", func(t *testing.T) {
		e := startEmu(t)
		r := startSidesync(t, nil, "--admin", e.admin(), "--", bin.testcmd, "block")
		next(t, r.stdout, "started")
		e.Kill()
		e.waitExit()
		r.signal(syscall.SIGTERM)
		if code := r.exit(); code != 143 {
			t.Errorf("exit %d, want 143 (the command's death by SIGTERM); stderr:\n%s", code, r.stderr)
		}
		checkGone(t, r.stderr.String())
	})
	t.Run("while waiting", func(t *testing.T) {
		r := startSidesync(t, nil, "--admin", closedAdmin(t), "--", bin.testcmd, "exit", "0")
		r.stderr.await(t, "connection refused")
		r.signal(syscall.SIGTERM)
		if code := r.exit(); code != 143 {
			t.Errorf("exit %d, want 143; stderr:\n%s", code, r.stderr)
		}
		checkGone(t, r.stderr.String())
	})
}

// checkGone checks a log for one quit that found the sidecar gone and said so at INFO.
func checkGone(t *testing.T, log string) {
	t.Helper()
	mustContain(t, log, "INFO sidecar already gone: nothing listens, as the pod is being stopped", `quit=ok`)
	for _, bad := range []string{"retrying", "sidecar quit failed", "WARN telling"} {
		if strings.Contains(log, bad) {
			t.Errorf("log has %q:\n%s", bad, log)
		}
	}
}
