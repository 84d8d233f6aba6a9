package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// nonRoot is the user of the image (USER 65532:65532 in the Dockerfile, internal/cluster/image.User).
const nonRoot = 65532

// TestInstall (issue 9): "sidesync install DIR" copies the running binary to DIR/sidesync, mode
// 0555, and the copy runs.
func TestInstall(t *testing.T) {
	t.Parallel()
	self := selfBytes(t)
	t.Run("copies the running binary", func(t *testing.T) {
		dir := t.TempDir()
		r := sidesync(t, nil, "install", dir)
		if r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		want := regexp.MustCompile(`^sidesync: installed ` + regexp.QuoteMeta(filepath.Join(dir, "sidesync")) + ` \(\d+\.\d MB\)\n$`)
		if !want.MatchString(r.stderr) || r.stdout != "" {
			t.Errorf("stdout %q, stderr %q; want nothing and one line matching %s", r.stdout, r.stderr, want)
		}
		checkInstalled(t, dir, self)
		v := runProgram(t, nil, filepath.Join(dir, "sidesync"), "version")
		if v.code != 0 || !strings.HasPrefix(v.stdout, "sidesync ") {
			t.Errorf("the copy: version exited %d, printed %q", v.code, v.stdout)
		}
	})
	t.Run("replaces an earlier copy", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "sidesync"), []byte("an older sidesync"), 0o555); err != nil {
			t.Fatal(err)
		}
		if r := sidesync(t, nil, "install", dir); r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		checkInstalled(t, dir, self)
	})
}

// TestInstallRefuses: a directory that is not there is refused (73), and so is a command line
// that does not name one (2).
func TestInstallRefuses(t *testing.T) {
	t.Parallel()
	t.Run("what it cannot install into", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for arg, msg := range map[string]string{filepath.Join(dir, "missing"): "does not exist", file: "is not a directory"} {
			r := sidesync(t, nil, "install", arg)
			if r.code != 73 || !strings.Contains(r.stderr, arg+" "+msg) {
				t.Errorf("install %s: exit %d, stderr %q; want 73 and %q", arg, r.code, r.stderr, msg)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("install left %d files behind, want only the one there before", len(entries)-1)
		}
	})
	t.Run("DIR/sidesync is a directory", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "sidesync")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		r := sidesync(t, nil, "install", dir)
		want := "sidesync: install: " + target + " is a directory, not the binary: remove it, or install into another directory\n"
		if r.code != 73 || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want 73 and %q", r.code, r.stderr, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("install left %d files behind, want only the directory there before", len(entries)-1)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{}, {"a", "b"}, {"--dir=x"}, {""}} {
			if r := sidesync(t, nil, append([]string{"install"}, args...)...); r.code != 2 || !strings.Contains(r.stderr, "one argument") {
				t.Errorf("install %q: exit %d, stderr %q; want 2", args, r.code, r.stderr)
			}
		}
		r := sidesync(t, nil, "install", "--help")
		if r.code != 0 {
			t.Errorf("install --help: exit %d", r.code)
		}
		mustContain(t, r.stdout, "Usage:\n  sidesync install DIR", "0555", "73")
	})
}

// TestInstallAsNonRootOnReadOnlyRoot runs install as the image runs it: as user 65532, with the
// root file system read-only and only DIR writable, into a DIR whose earlier copy belongs to
// another user. It needs root (to mount and change user), unshare and setpriv.
func TestInstallAsNonRootOnReadOnlyRoot(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to change user; as a non-root user, TestInstall covers it")
	}
	root, copied := worldReadableCopy(t)
	vol := filepath.Join(root, "vol") // an emptyDir: world-writable
	if err := os.Mkdir(vol, 0o777); err != nil || os.Chmod(vol, 0o777) != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "sidesync"), []byte("root's older copy"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Run("a directory the user may not write", func(t *testing.T) {
		r := runAs(t, &syscall.Credential{Uid: nonRoot, Gid: nonRoot}, copied, "install", root)
		if r.code != 73 || !strings.Contains(r.stderr, "permission denied") {
			t.Errorf("exit %d, stderr %q; want 73 and permission denied", r.code, r.stderr)
		}
	})
	for _, tool := range []string{"unshare", "mount", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs util-linux's", tool, "on PATH")
		}
	}
	// In a mount namespace of its own: keep vol writable, make / read-only, prove that the
	// directory around vol is read-only, then run install as 65532.
	script := `mount --bind "$2" "$2" && mount -o remount,bind,ro / || exit 98
		touch "$1/probe" 2>/dev/null && exit 99
		exec setpriv --reuid ` + fmt.Sprint(nonRoot) + ` --regid ` + fmt.Sprint(nonRoot) + ` --clear-groups "$3" install "$2"`
	r := runAs(t, nil, "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", root, vol, copied)
	switch r.code {
	case 98:
		t.Skip("needs a mount namespace with a read-only root, which this machine refused:", strings.Join(strings.Fields(r.stderr), " "))
	case 99:
		t.Skip("needs the temporary directory on the root file system: set TMPDIR to a directory on / to run it")
	case 0:
	default:
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	checkInstalled(t, vol, selfBytes(t))
	if fi, err := os.Stat(filepath.Join(vol, "sidesync")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != nonRoot {
		t.Errorf("the copy is not 65532's: %v", err)
	}
}

// worldReadableCopy installs the test binary, as root, into a directory that user 65532 may
// read but not write (t.TempDir and the go command's build directory are private to root).
func worldReadableCopy(t *testing.T) (root, copied string) {
	t.Helper()
	root, err := os.MkdirTemp("", "sidesync-install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := filepath.Join(root, "bin")
	if err := os.Chmod(root, 0o755); err != nil || os.Mkdir(bin, 0o755) != nil {
		t.Fatal("cannot make a world-readable directory:", err)
	}
	if r := sidesync(t, nil, "install", bin); r.code != 0 {
		t.Fatalf("install as root: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	return root, filepath.Join(bin, "sidesync")
}

// runAs runs a program as the user cred (nil: this process's), and waits for it.
func runAs(t *testing.T, cred *syscall.Credential, program string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = testEnv(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return result{ee.ExitCode(), stdout.String(), stderr.String()}
	} else if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return result{0, stdout.String(), stderr.String()}
}

// selfBytes is the test binary: what sidesync, its symlink, runs.
func selfBytes(t *testing.T) []byte {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkInstalled checks that dir holds the copy alone: a regular file, mode 0555, want's bytes.
func checkInstalled(t *testing.T, dir string, want []byte) {
	t.Helper()
	path := filepath.Join(dir, "sidesync")
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o555 {
		t.Errorf("%s has mode %v, want -r-xr-xr-x", path, fi.Mode())
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not the running binary (%d bytes, want %d): %v", path, len(got), len(want), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "sidesync" {
			t.Errorf("install left %s in %s", e.Name(), dir)
		}
	}
}
