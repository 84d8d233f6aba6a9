package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// exitNoPerm is sysexits' EX_NOPERM: "sidesync signal" may not signal the process (another user,
// and no CAP_KILL).
const exitNoPerm = 77

// signalWait is how long "sidesync signal" waits, by default, for the process to end after the
// signal.
const signalWait = 30 * time.Second

// signalNames are the signals "sidesync signal" sends: those that ask a process to end.
var signalNames = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT,
	"KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// signalMain is "sidesync signal [SIGNAL [PID]]": it sends SIGNAL (TERM) to PID (1) and waits,
// bounded, for that process to end. `kubectl sidesync rescue --signal` runs it in an ephemeral
// container that shares the PID namespace of a sidecar without a quit endpoint (a log shipper):
// PID 1 there is the sidecar's main process. It needs no shell and no kill(1) in the image.
//
// The kernel delivers to a PID namespace's init only the signals it has a handler for
// (pid_namespaces(7)); one it ignores leaves it running, which the bounded wait reports. When
// PID 1 of the namespace ends, the kernel kills every other process in it, this one included:
// then the container's own end (137) is the sign that the signal worked.
func signalMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		return help([]string{"signal"}, stdout, stderr)
	}
	wait, args, err := signalTimeout(args)
	if err != nil {
		fmt.Fprintf(stderr, "sidesync: signal: %v\n", err)
		return exitUsage
	}
	sig, pid, err := signalArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "sidesync: signal: %v\n", err)
		fmt.Fprintln(stderr, "sidesync: run 'sidesync signal --help' for usage")
		return exitUsage
	}
	what := "PID " + strconv.Itoa(pid)
	if cmd := cmdline(pid); cmd != "" {
		what += " (" + cmd + ")"
	}
	// A pidfd names this process and no later one that reuses its PID, and says when it ends.
	fd, fdErr := unix.PidfdOpen(pid, 0)
	if fdErr == nil {
		defer unix.Close(fd)
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(pid, sig)
	}
	switch {
	case errors.Is(err, unix.ESRCH) || errors.Is(fdErr, unix.ESRCH):
		fmt.Fprintf(stderr, "sidesync: signal: no process %d\n", pid)
		return exitUnavailable
	case errors.Is(err, unix.EPERM):
		fmt.Fprintf(stderr, "sidesync: signal: not permitted to signal %s: it runs as another user, and this container must run as its user (runAsUser)\n", what)
		return exitNoPerm
	case err != nil:
		fmt.Fprintf(stderr, "sidesync: signal: %s: %v\n", what, err)
		return exitUnavailable
	}
	fmt.Fprintf(stderr, "sidesync: sent %s to %s; waiting up to %s for it to end\n", child.SignalName(sig), what, wait)
	if ended(fd, fdErr == nil, pid, wait) {
		fmt.Fprintf(stderr, "sidesync: %s ended\n", what)
		return 0
	}
	fmt.Fprintf(stderr, "sidesync: %s still runs %s after %s: a PID namespace's init gets only the signals it handles, so it may ignore this one\n",
		what, wait, child.SignalName(sig))
	return exitUnavailable
}

// signalTimeout reads a leading --timeout D (or --timeout=D) and returns the rest.
func signalTimeout(args []string) (time.Duration, []string, error) {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return signalWait, args, nil
	}
	val, ok := strings.CutPrefix(args[0], "--timeout=")
	switch {
	case ok:
		args = args[1:]
	case args[0] == "--timeout" && len(args) > 1:
		val, args = args[1], args[2:]
	default:
		return 0, nil, fmt.Errorf("unknown flag %q: the only flag is --timeout DURATION", args[0])
	}
	d, err := time.ParseDuration(val)
	if err != nil || d <= 0 {
		return 0, nil, fmt.Errorf("--timeout %q: must be a positive duration such as 30s", val)
	}
	return d, args, nil
}

// signalArgs reads [SIGNAL [PID]]: a name with or without SIG, or a number.
func signalArgs(args []string) (syscall.Signal, int, error) {
	sig, pid := syscall.SIGTERM, 1
	if len(args) > 2 {
		return 0, 0, fmt.Errorf("at most two arguments, SIGNAL and PID; got %q", args)
	}
	if len(args) > 0 {
		name := strings.TrimPrefix(strings.ToUpper(args[0]), "SIG")
		s, ok := signalNames[name]
		if n, err := strconv.Atoi(args[0]); err == nil && n > 0 && n < 65 {
			s, ok = syscall.Signal(n), true
		}
		if !ok {
			return 0, 0, fmt.Errorf("unknown signal %q: give TERM, INT, HUP, QUIT, KILL, USR1, USR2 or a number", args[0])
		}
		sig = s
	}
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("PID %q: must be a whole number above 0", args[1])
		}
		pid = n
	}
	return sig, pid, nil
}

// ended waits, up to d, for the process to end: on its pidfd when there is one, else by asking
// the kernel every 100 ms whether the PID still exists.
func ended(fd int, havefd bool, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		if havefd {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err == nil && n > 0
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
		time.Sleep(min(left, 100*time.Millisecond))
	}
}

// cmdline is the process's command line, for the log, or "" when it cannot be read.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
