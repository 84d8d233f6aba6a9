package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sidesync/sidesync/internal/shared/contract"
)

// exitCantCreate is sysexits' EX_CANTCREAT: "sidesync install" could not create the binary in
// its directory. It is not the usage error 2, because a missing directory is a missing volume
// in the pod, not a mistyped command line, and `kubectl describe pod` should tell them apart.
const exitCantCreate = 73

// installMain is "sidesync install DIR" (issue 9): the init container of the init-copy mode
// runs it to fill the emptyDir that the wrapped containers mount. The image holds nothing but
// this binary, so the copy is done here, without a shell or cp.
func installMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		return help([]string{"install"}, stdout, stderr)
	}
	if len(args) != 1 || args[0] == "" || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "sidesync: install takes exactly one argument, the directory to install into; got %q\n", args)
		fmt.Fprintln(stderr, "sidesync: run 'sidesync install --help' for usage")
		return exitUsage
	}
	dir := args[0]
	n, err := install(dir)
	if err != nil {
		fmt.Fprintf(stderr, "sidesync: install: %v\n", err)
		return exitCantCreate
	}
	fmt.Fprintf(stderr, "sidesync: installed %s (%.1f MB)\n", filepath.Join(dir, contract.BinaryName), float64(n)/1e6)
	return 0
}

// install copies the running binary to dir/sidesync (contract.BinaryName: the wrapped containers
// run it as contract.Binary, from the volume the install container mounts at
// contract.InstallDir), mode 0555, and returns its size. The copy is written to
// dir/.sidesync.tmp-PID, synced, and renamed over dir/sidesync, so that a container never sees
// half a binary, and a restarted init container replaces the copy of its earlier run (rename
// needs write permission on dir only, not on the 0555 file it replaces).
func install(dir string) (int64, error) {
	if err := checkInstallDir(dir); err != nil {
		return 0, err
	}
	src, err := openSelf()
	if err != nil {
		return 0, err
	}
	defer src.Close()
	tmp := filepath.Join(dir, fmt.Sprintf(".sidesync.tmp-%d", os.Getpid()))
	n, err := writeExecutable(tmp, src)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, contract.BinaryName))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return n, syncDir(dir)
}

// checkInstallDir refuses a dir that does not exist rather than create it: dir is meant to be
// a volume, and a copy made into the container's own filesystem because the volume is not
// mounted would vanish with the container while the init container reports success. It also
// refuses a dir whose "sidesync" is a directory, before copying anything: the rename would fail
// with a bare "file exists" that does not say which file is in the way.
func checkInstallDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: mount the volume to install into there (install does not create it)", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	target := filepath.Join(dir, contract.BinaryName)
	if fi, err := os.Lstat(target); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory, not the binary: remove it, or install into another directory", target)
	}
	return nil
}

// openSelf opens the running binary. /proc/self/exe is the file the kernel ran, whatever path
// or symlink it was started by; os.Executable is the fallback where /proc is not mounted.
func openSelf() (*os.File, error) {
	f, err := os.Open("/proc/self/exe")
	if err == nil {
		return f, nil
	}
	path, perr := os.Executable()
	if perr != nil {
		return nil, fmt.Errorf("cannot find the running binary: %w", errors.Join(err, perr))
	}
	return os.Open(path)
}

// writeExecutable writes src to the new file path, mode 0555, synced, and returns its size.
func writeExecutable(path string, src *os.File) (int64, error) {
	// A leftover of an earlier run: in a container the init process often has the same PID
	// every time, and O_EXCL would fail on it forever.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, src)
	if err != nil {
		err = fmt.Errorf("copying the running binary to %s: %w", path, err)
	}
	if err == nil {
		err = f.Chmod(0o555) // explicitly: the umask must not decide
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// syncDir makes the rename durable. A file system that cannot sync a directory (EINVAL) has
// nothing to make durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}
