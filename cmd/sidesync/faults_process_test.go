package main

// Process-environment faults of docs/FAULTS.md: stdin closed, stdout's reader gone, a
// read-only root file system, a termination log that cannot be written.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultStdinClosed: sidesync started with file descriptor 0 closed (not /dev/null: closed,
// as `cmd <&-` does) still waits, runs the command, quits the sidecar and keeps the exit code.
// The command's stdin is /dev/null (the Go runtime opens it on a closed 0, 1 or 2 at start), at
// EOF at once, and never one of sidesync's own descriptors (a socket to the sidecar, say) that
// took the free number 0.
func TestFaultStdinClosed(t *testing.T) {
	t.Parallel()
	e := startEmu(t, "--ready-after-probes", "2")
	r := runProgram(t, nil, "/bin/sh", "-c", `exec "$@" <&-`, "sh", bin.sidesync, "--admin", e.admin(), "--",
		"/bin/sh", "-c", `echo "stdin is $(readlink /proc/$$/fd/0)"; cat; exit 6`)
	if r.code != 6 {
		t.Errorf("exit %d, want the command's 6; stderr:\n%s", r.code, r.stderr)
	}
	if strings.TrimSpace(r.stdout) != "stdin is /dev/null" {
		t.Errorf("the command's stdin: %q, want /dev/null", r.stdout)
	}
	if e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("quits %d, want 1", e.quits())
	}
}

// TestFaultStdoutReaderGone: when the reader of stdout has gone, the command dies of SIGPIPE at
// its first write, as it would without sidesync (exit 141); sidesync itself never writes to
// stdout, so it is unharmed, tells the sidecar to quit, and reports the command's death. With
// stdout closed altogether (`>&-`), the command writes to /dev/null, which the Go runtime opens
// on a closed descriptor 1 at start, and succeeds.
func TestFaultStdoutReaderGone(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	defer pw.Close()
	cmd := exec.Command(bin.sidesync, "--admin", e.admin(), "--", "/bin/sh", "-c", "echo hello; exit 0")
	cmd.Env = testEnv(nil)
	cmd.Stdout = pw
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 141 {
		t.Errorf("sidesync ended with %v, want exit status 141 (SIGPIPE); stderr:\n%s", err, stderr.String())
	}
	mustContain(t, stderr.String(), `status="killed by SIGPIPE"`, "sidecar quit")
	if e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("quits %d, want 1", e.quits())
	}

	r := runProgram(t, nil, "/bin/sh", "-c", `exec "$@" >&-`, "sh", bin.sidesync, "--disabled", "--", "/bin/sh", "-c", `x=$(readlink /proc/$$/fd/1); echo "stdout is $x" >&2; echo hello || exit 9`)
	if r.code != 0 {
		t.Errorf("stdout closed: exit %d, want the command's 0; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "stdout is /dev/null\n")
}

// TestFaultReadOnlyRoot: sidesync writes nothing but the termination message. In a mount
// namespace where every file system is read-only (the root, /tmp, the test's directories; only
// /proc, /sys and /dev are left alone, as a container runtime does), and with the working
// directory and the termination log's directory read-only, a whole run works: wait, command,
// quit, exit code; the termination message that cannot be written is logged and skipped. Needs
// root (mount namespaces), and skips otherwise: TestFaultTerminationLogUnwritable covers the
// unprivileged half.
func TestFaultReadOnlyRoot(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and util-linux's unshare for a read-only mount namespace")
	}
	e := startEmu(t, "--ready-after-probes", "2")
	dir := t.TempDir()
	termLog := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(termLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Remount every mount but /proc, /sys and /dev read-only, then prove it by failing to write.
	script := `set -e
mount --make-rprivate /
awk '{print $2}' /proc/self/mounts | sort -u | while read -r m; do
	case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac
	mount -o remount,bind,ro "$m" 2>/dev/null || true
done
if touch "$0/probe" 2>/dev/null; then echo "$0 is writable" >&2; exit 111; fi
cd "$0"
exec "$@"`
	r := runProgram(t, nil, unshare, "--mount", "sh", "-c", script, dir,
		bin.sidesync, "--admin", e.admin(), "--termination-log", termLog, "--log-level", "debug", "--", bin.testcmd, "exit", "4")
	if r.code != 4 {
		t.Fatalf("exit %d, want the command's 4; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "sidecar ready", "sidecar quit", "cannot write the termination message", "read-only file system")
	if e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("quits %d, want 1", e.quits())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the termination log alone", len(entries))
	}
}

// TestFaultTerminationLogUnwritable: a termination log that exists but may not be written
// (mode 0444 for a user, a read-only bind mount for root) is logged and skipped; the exit code
// is the command's.
func TestFaultTerminationLogUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	termLog := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(termLog, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	program, args := bin.sidesync, []string{"--disabled", "--termination-log", termLog, "--", bin.testcmd, "exit", "5"}
	want := "permission denied"
	if os.Geteuid() == 0 { // root writes a 0444 file: make the file itself read-only
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("as root this needs util-linux's unshare")
		}
		program, want = unshare, "read-only file system"
		args = append([]string{"--mount", "sh", "-c", `mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"`, termLog, bin.sidesync}, args...)
	}
	r := runProgram(t, nil, program, args...)
	if r.code != 5 {
		t.Errorf("exit %d, want the command's 5; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "cannot write the termination message", want)
	if b, _ := os.ReadFile(termLog); len(b) != 0 {
		t.Errorf("the termination log was written: %q", b)
	}
}
