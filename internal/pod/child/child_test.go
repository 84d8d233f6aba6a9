package child

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// testReaper is the one Reaper of this test process, shared by every test. A Reaper reaps
// every child of the process (waitid on all of them), so a second one steals the first's
// statuses: with a Reaper per test, an idle one from an earlier test reaped the sleep that
// TestSignalForwarding waited for, and the test hung until its timeout (seen once, under load
// in CI). The product makes one per process, as the Reaper's documentation says.
var testReaper = NewReaper(nil)

func TestExitCode(t *testing.T) {
	tests := []struct {
		st       Status
		wantCode int
		wantStr  string
	}{
		{Status{Code: 0}, 0, "exited 0"},
		{Status{Code: 3}, 3, "exited 3"},
		{Status{Code: -1, Signal: syscall.SIGTERM}, 143, "killed by SIGTERM"},
		{Status{Code: -1, Signal: syscall.SIGKILL}, 137, "killed by SIGKILL"},
		{Status{Code: -1, Signal: syscall.SIGSEGV, CoreDumped: true}, 139, "killed by SIGSEGV (core dumped)"},
	}
	for _, tt := range tests {
		if got := tt.st.ExitCode(); got != tt.wantCode {
			t.Errorf("%+v.ExitCode() = %d, want %d", tt.st, got, tt.wantCode)
		}
		if got := tt.st.String(); got != tt.wantStr {
			t.Errorf("%+v.String() = %q, want %q", tt.st, got, tt.wantStr)
		}
	}
}

// TestStatusOf decodes raw wait statuses as the kernel encodes them.
func TestStatusOf(t *testing.T) {
	if st := statusOf(7, unix.WaitStatus(3<<8)); st.ExitCode() != 3 || st.Pid != 7 {
		t.Errorf("exit 3: got %+v", st)
	}
	if st := statusOf(7, unix.WaitStatus(15)); st.Signal != syscall.SIGTERM || st.ExitCode() != 143 {
		t.Errorf("SIGTERM: got %+v", st)
	}
	if st := statusOf(7, unix.WaitStatus(11|0x80)); !st.CoreDumped || st.ExitCode() != 139 {
		t.Errorf("SIGSEGV with core: got %+v", st)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "plain"), []byte("#!/bin/sh\n"), 0o755)
	tests := []struct {
		name, file, path string
		want             string
		wantErr          error
	}{
		{"found", "exe", dir, exe, nil},
		{"slash is used as is", "./whatever", dir, "./whatever", nil},
		{"not found", "missing", dir, "", unix.ENOENT},
		{"only non-executable", "plain", dir, "", unix.EACCES},
		{"directory is not executable", "sub", dir, "", unix.EACCES},
		{"later executable wins over earlier non-executable", "plain", dir + ":" + other, filepath.Join(other, "plain"), nil},
		{"empty file name", "", dir, "", unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookPath(tt.file, tt.path)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("lookPath(%q) = %q, %v; want %q, %v", tt.file, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	r := testReaper
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "badinterp"), []byte("#!/nonexistent/sh -e\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "emptyinterp"), []byte("#!\n"), 0o755)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	tests := []struct {
		name    string
		argv    []string
		want    int
		wantMsg string
	}{
		{"not in PATH", []string{"sidesync-no-such-command"}, ExitNotFound, "sidesync-no-such-command: command not found: no such file or directory"},
		{"missing path", []string{filepath.Join(dir, "missing")}, ExitNotFound, "missing: command not found"},
		{"not executable", []string{filepath.Join(dir, "plain")}, ExitNotExecutable, "plain: cannot execute: permission denied"},
		{"directory", []string{dir}, ExitNotExecutable, "cannot execute"},
		{"empty argv", nil, ExitNotFound, "command not found"},
		// Issue 7, fault 4: the script exists; its interpreter does not. Shells say so.
		{"missing interpreter", []string{filepath.Join(dir, "badinterp")}, ExitNotFound,
			"badinterp: /nonexistent/sh: bad interpreter: no such file or directory"},
		{"missing interpreter through PATH", []string{"badinterp"}, ExitNotFound,
			"badinterp: /nonexistent/sh: bad interpreter: no such file or directory"},
		{"empty #! line", []string{filepath.Join(dir, "emptyinterp")}, ExitNotExecutable, "emptyinterp: cannot execute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Start(tt.argv, Options{})
			var se *StartError
			if !errors.As(err, &se) || se.Code != tt.want {
				t.Fatalf("Start(%q) = %v, want a StartError with code %d", tt.argv, err, tt.want)
			}
			if got := err.Error(); !strings.Contains(got, tt.wantMsg) {
				t.Errorf("Start(%q) error %q, want it to contain %q", tt.argv, got, tt.wantMsg)
			}
		})
	}
}

// TestStartMissingLoader: a dynamically linked program whose loader is missing gets ENOENT from
// execve too; the message must not say "command not found". The program is a copy of a
// dynamically linked binary of this machine with its PT_INTERP path pointed elsewhere.
func TestStartMissingLoader(t *testing.T) {
	src, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip("no /bin/true:", err)
	}
	i := bytes.Index(src, []byte("/lib64/ld-linux-x86-64.so.2"))
	if i < 0 {
		i = bytes.Index(src, []byte("/lib/ld-linux-aarch64.so.1"))
	}
	if i < 0 {
		t.Skip("/bin/true names no known loader")
	}
	copy(src[i:], "/nonexistent/")
	prog := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(prog, src, 0o755); err != nil {
		t.Fatal(err)
	}
	r := testReaper
	_, err = r.Start([]string{prog}, Options{})
	var se *StartError
	if !errors.As(err, &se) || se.Code != ExitNotFound || !se.Loader {
		t.Fatalf("Start = %v, want a StartError with code 127 and Loader set", err)
	}
	if msg := err.Error(); strings.Contains(msg, "command not found") || !strings.Contains(msg, "required file not found") {
		t.Errorf("message %q", msg)
	}
}

// TestStartAndReap starts real processes through the Reaper and gets their statuses.
func TestStartAndReap(t *testing.T) {
	r := testReaper
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 42", 42},
		{"kill -TERM $$", 143},
		{"kill -KILL $$", 137},
	}
	for _, tt := range tests {
		p, err := r.Start([]string{"/bin/sh", "-c", tt.script}, Options{NewGroup: true})
		if err != nil {
			t.Fatal(err)
		}
		if st := <-p.Done(); st.ExitCode() != tt.want || st.Pid != p.Pid {
			t.Errorf("%q: got %+v (exit %d), want exit %d", tt.script, st, st.ExitCode(), tt.want)
		}
	}
}

// TestSignalForwarding signals a started process, and its group.
func TestSignalForwarding(t *testing.T) {
	r := testReaper
	for _, group := range []bool{false, true} {
		// "exec sleep" so that the signalled process is the one waited for.
		p, err := r.Start([]string{"/bin/sh", "-c", "exec sleep 60"}, Options{NewGroup: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Signal(syscall.SIGTERM, group); err != nil {
			t.Fatalf("Signal: %v", err)
		}
		if st := <-p.Done(); st.Signal != syscall.SIGTERM {
			t.Errorf("group=%v: got %+v, want killed by SIGTERM", group, st)
		}
		if err := p.Signal(syscall.SIGTERM, false); err == nil {
			t.Error("signalling a reaped process succeeded")
		}
	}
}
