package main

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestExitCodes runs every row of the exit-code contract (README, "Exit codes") with real child
// processes against a real emulated Envoy, and checks that the sidecar was told to quit each
// time.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	noInterp := filepath.Join(dir, "no-interpreter")
	os.WriteFile(noInterp, []byte("#!/nonexistent/interpreter\n"), 0o755)
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("\x00\x01\x02 not a program"), 0o755)
	sig := func(s syscall.Signal) string { return strconv.Itoa(int(s)) }
	tests := []struct {
		name string
		cmd  []string
		want int
	}{
		{"exit 0", []string{bin.testcmd, "exit", "0"}, 0},
		{"exit 3", []string{bin.testcmd, "exit", "3"}, 3},
		{"exit 255", []string{bin.testcmd, "exit", "255"}, 255},
		{"killed by SIGTERM", []string{bin.testcmd, "kill", sig(syscall.SIGTERM)}, 143},
		{"killed by SIGKILL", []string{bin.testcmd, "kill", sig(syscall.SIGKILL)}, 137},
		{"killed by SIGINT", []string{bin.testcmd, "kill", sig(syscall.SIGINT)}, 130},
		{"killed by SIGHUP", []string{bin.testcmd, "kill", sig(syscall.SIGHUP)}, 129},
		{"killed by SIGUSR1", []string{bin.testcmd, "kill", sig(syscall.SIGUSR1)}, 138},
		{"not found in PATH", []string{"sidesync-no-such-command"}, 127},
		{"not found by path", []string{filepath.Join(dir, "missing")}, 127},
		{"script interpreter missing", []string{noInterp}, 127},
		{"not executable", []string{notExec}, 126},
		{"a directory", []string{dir}, 126},
		{"not a program", []string{garbage}, 126},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t)
			r := sidesync(t, nil, append([]string{"--admin", e.admin(), "--"}, tt.cmd...)...)
			if r.code != tt.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if got := e.waitExit(); got != 0 || e.quits() != 1 {
				t.Errorf("emulator: %d quit requests, exit %d; want 1 and 0", e.quits(), got)
			}
			mustContain(t, r.stderr, "exit="+strconv.Itoa(tt.want))
		})
	}
}

// TestExitCodeNotFoundInPathWithNonExecutable: a name found in PATH only as a non-executable
// file is 126, as with execvp and shells; not 127.
func TestExitCodeFoundButNotExecutable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job"), []byte("#!/bin/sh\n"), 0o644)
	r := sidesync(t, []string{"PATH=" + dir + ":" + os.Getenv("PATH")}, "--disabled", "--", "job")
	if r.code != 126 {
		t.Errorf("exit code %d, want 126; stderr:\n%s", r.code, r.stderr)
	}
}

func TestUsageExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"bad flag value", nil, []string{"--timeout", "soon", "--", "true"}, []string{`--timeout "soon"`}},
		{"bad variable", []string{"SIDESYNC_QUIT=sometimes"}, []string{"--", "true"}, []string{`SIDESYNC_QUIT="sometimes"`}},
		{"bad article variable", []string{"PROXY=true", "interval=soon"}, []string{"--", "true"}, []string{`interval="soon"`}},
		{"bad scuttle variable", []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "NEVER_KILL_ISTIO=maybe"}, []string{"--", "true"}, []string{`NEVER_KILL_ISTIO="maybe"`}},
		{"no command", nil, nil, []string{"no command given"}},
		{"several at once", []string{"SIDESYNC_MAX_RETRIES=-2"}, []string{"--backoff=random", "--", "true"}, []string{"SIDESYNC_MAX_RETRIES", "--backoff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			args := tt.args
			if len(args) > 0 {
				args = append(args[:len(args)-1:len(args)-1], bin.testcmd, "touch", marker)
			}
			r := sidesync(t, tt.env, args...)
			if r.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, tt.want...)
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran despite the usage error")
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}
