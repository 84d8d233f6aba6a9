package child

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options says how to start a command.
type Options struct {
	Env    []string // the environment; nil means this process's
	Stdin  *os.File // nil means /dev/null, as with os.StartProcess
	Stdout *os.File
	Stderr *os.File
	// NewGroup puts the command in a process group of its own, so that signals sent to the
	// wrapper's group (a terminal's Ctrl-C, a supervisor's kill(-pgid)) reach the command only once,
	// through forwarding; and so that signals can be forwarded to the command's whole group.
	NewGroup bool
}

// Process is a started command.
type Process struct {
	Pid   int
	Path  string // the file that was executed
	group bool
	tty   *terminal // non-nil while the command's group owns the terminal
	done  chan Status

	mu     sync.Mutex
	pidfd  int  // -1 without pidfd support, or once reaped
	reaped bool // without a pidfd, signals must not go to a PID that may be reused
}

// errProcessDone is returned when signalling a command that has been reaped.
var errProcessDone = os.ErrProcessDone

// Start starts argv[0] with arguments argv[1:], resolving argv[0] through PATH as execvp(3)
// does: 127 if nothing is found, 126 if only non-executable files are.
func (r *Reaper) Start(argv []string, o Options) (*Process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &StartError{Code: ExitNotFound, Err: unix.ENOENT}
	}
	path, err := lookPath(argv[0], os.Getenv("PATH"))
	if err != nil {
		return nil, startError(argv[0], err)
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{fdOf(o.Stdin), fdOf(o.Stdout), fdOf(o.Stderr)},
		Sys:   &syscall.SysProcAttr{Setpgid: o.NewGroup},
	}
	tty := foregroundTerminal(o.Stdin)
	if o.NewGroup && tty != nil {
		// Hand the terminal to the command's group, as a shell (and tini) does, so that it can
		// read from it and gets Ctrl-C itself. Ctty is fd 0 in the child.
		attr.Sys.Foreground, attr.Sys.Ctty = true, 0
	} else {
		tty = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// syscall.ForkExec rather than os.StartProcess: the latter forks an extra process on first
	// use to check that pidfds work, which costs milliseconds where forks are slow (gVisor).
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return nil, startError(path, err)
	}
	p := &Process{Pid: pid, Path: path, pidfd: openPidfd(pid), group: o.NewGroup, tty: tty, done: make(chan Status, 1)}
	r.waiting[p.Pid] = p
	r.startedChild()
	return p, nil
}

// fdOf is the descriptor to pass for f; -1 closes it in the child, as os.StartProcess does.
func fdOf(f *os.File) uintptr {
	if f == nil {
		return ^uintptr(0)
	}
	return f.Fd()
}

// openPidfd returns a pidfd for pid, or -1 where the kernel has none (before Linux 5.3). It is
// opened while the Reaper's lock is held, so pid cannot have been reaped and reused yet.
func openPidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// Done delivers the command's Status once, when it has been reaped.
func (p *Process) Done() <-chan Status { return p.done }

func (p *Process) finish(st Status) {
	if p.tty != nil {
		p.tty.reclaim()
	}
	// Close the pidfd with the lock held, so that a concurrent Signal never uses a descriptor
	// number that something else may reuse.
	p.mu.Lock()
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
	p.reaped = true
	p.mu.Unlock()
	p.done <- st
}

// Signal sends sig to the command, or to its whole process group when toGroup is set and the
// command was started in a group of its own. Signalling the process uses its pidfd where the
// kernel has one, so a reaped process whose PID was reused is never hit.
func (p *Process) Signal(sig syscall.Signal, toGroup bool) error {
	if toGroup && p.group {
		return unix.Kill(-p.Pid, sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.reaped:
		return errProcessDone
	case p.pidfd >= 0:
		return unix.PidfdSendSignal(p.pidfd, sig, nil, 0)
	default:
		return unix.Kill(p.Pid, sig)
	}
}

// lookPath finds file the way execvp does: a name with a slash is used as is; otherwise each PATH
// entry is tried, skipping non-executable matches but remembering them, so that the caller can
// tell "not found" (ENOENT) from "found, not executable" (EACCES).
func lookPath(file, path string) (string, error) {
	if file == "" {
		return "", unix.ENOENT
	}
	if strings.Contains(file, "/") {
		return file, nil // execve reports ENOENT, EACCES, ENOEXEC as they are
	}
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	denied := false
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		candidate := filepath.Join(dir, file)
		fi, err := os.Stat(candidate)
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() && unix.Access(candidate, unix.X_OK) == nil {
			if !strings.Contains(candidate, "/") {
				candidate = "./" + candidate
			}
			return candidate, nil
		}
		denied = true
	}
	if denied {
		return "", unix.EACCES
	}
	return "", unix.ENOENT
}

// startError maps an exec failure to the exit-code contract: ENOENT (no such file, or a
// script's interpreter is missing) is 127, everything else (EACCES, ENOEXEC, EISDIR, ...) 126.
func startError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	code := ExitNotExecutable
	if errors.Is(err, unix.ENOENT) {
		code = ExitNotFound
	}
	se := &StartError{Path: path, Code: code, Err: err}
	if code == ExitNotFound {
		se.Interpreter, se.Loader = missingInterpreter(path)
	}
	return se
}

// missingInterpreter tells why execve said ENOENT for a file that exists: the interpreter named
// on a script's "#!" line is missing (returned), or the file is a dynamically linked program
// whose loader is missing (loader true). It returns "", false when the file itself is missing.
func missingInterpreter(path string) (interp string, loader bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("#!")):
		line, _, _ := bytes.Cut(head[2:], []byte("\n"))
		if fields := strings.Fields(string(line)); len(fields) > 0 {
			return fields[0], false
		}
		return "(none)", false
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "", true
	}
	return "", false
}
