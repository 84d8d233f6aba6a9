// Package child starts the wrapped command, forwards signals to it, and owns wait(2): one Reaper
// reaps every child of the process (orphans too, when sidesync is PID 1 or a child subreaper) and
// hands each started command its Status. Exit codes follow the shell/tini convention that the
// project's exit-code contract (README, "Exit codes") documents: N, 128+signal, 126, 127.
package child

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exit codes of the contract that this package produces.
const (
	// ExitNotExecutable is returned when the command exists but cannot be executed.
	ExitNotExecutable = 126
	// ExitNotFound is returned when the command cannot be found.
	ExitNotFound = 127
	// signalBase is added to the number of the signal that killed a process.
	signalBase = 128
)

// Status is how a process ended.
type Status struct {
	Pid        int
	Code       int            // exit code when it exited; -1 when a signal killed it
	Signal     syscall.Signal // the signal that killed it; 0 when it exited
	CoreDumped bool
}

// statusOf converts a raw wait status.
func statusOf(pid int, ws unix.WaitStatus) Status {
	if ws.Signaled() {
		return Status{Pid: pid, Code: -1, Signal: ws.Signal(), CoreDumped: ws.CoreDump()}
	}
	return Status{Pid: pid, Code: ws.ExitStatus()}
}

// ExitCode is the code a wrapper should exit with to report this status: the exit code, or
// 128+N when signal N killed the process. Unlike os.ProcessState.ExitCode (-1, which os.Exit
// turns into 255), this keeps the signal visible to Kubernetes' podFailurePolicy.
func (s Status) ExitCode() int {
	if s.Signal != 0 {
		return signalBase + int(s.Signal)
	}
	return s.Code
}

// String describes the status for logs: "exited 3" or "killed by SIGTERM".
func (s Status) String() string {
	if s.Signal == 0 {
		return fmt.Sprintf("exited %d", s.Code)
	}
	str := "killed by " + SignalName(s.Signal)
	if s.CoreDumped {
		str += " (core dumped)"
	}
	return str
}

// SignalName returns the conventional name of sig, such as "SIGTERM".
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// StartError is a command that could not be started; Code is 127 (not found) or 126 (found but
// not executable), as in shells, tini and dumb-init.
type StartError struct {
	Path string
	Code int
	Err  error
	// Interpreter is set when Path exists but the interpreter its "#!" line names does not:
	// the kernel reports that as ENOENT, which alone would read "command not found".
	Interpreter string
	// Loader is set when Path is a dynamically linked program whose loader is missing (a
	// glibc program in a scratch or musl image, say): ENOENT again.
	Loader bool
}

func (e *StartError) Error() string {
	switch {
	case e.Interpreter != "":
		// As shells say it: "./job.sh: /nonexistent/sh: bad interpreter: no such file or directory".
		return fmt.Sprintf("%s: %s: bad interpreter: %v", e.Path, e.Interpreter, e.Err)
	case e.Loader:
		return fmt.Sprintf("%s: cannot execute: required file not found (a dynamically linked program whose loader is missing from this image; build it statically or add its libc)", e.Path)
	case e.Code == ExitNotFound:
		return fmt.Sprintf("%s: command not found: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: cannot execute: %v", e.Path, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }
