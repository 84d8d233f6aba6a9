//go:build linux

package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// logTailLines is how many of a process's last log lines a failing test shows.
const logTailLines = 40

// errPortInUse reports a process that could not bind a port that was free a moment before.
var errPortInUse = errors.New("address already in use")

// startRetrying calls start with fresh ports until it succeeds, retrying only on a bind failure,
// and fails the test otherwise.
func startRetrying(t testing.TB, name string, start func(attempt int) (*process, string, error)) (string, *process) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, addr, err := start(attempt)
		if err == nil {
			return addr, p
		}
		if p != nil {
			p.stop(t)
		}
		if errors.Is(err, errPortInUse) && attempt < startTries {
			t.Logf("kubetest: %s: %v; retrying with other ports", name, err)
			continue
		}
		if p != nil {
			p.logTail(t, logTailLines)
		}
		t.Fatalf("kubetest: starting %s: %v", name, err)
	}
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment ago. The flags of
// etcd and kube-apiserver take no port 0, so a later bind can still lose a race: callers retry.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a started etcd or kube-apiserver.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited; err is then set
	err     error
}

// startProcess starts bin with args, its output going to logPath. Linux's parent-death signal
// kills the process should the test binary die without running its cleanups (a panic, a
// timeout, a kill).
func startProcess(logPath, bin string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitFor polls ready until it reports true, the process exits, or the deadline passes.
func (p *process) waitFor(deadline time.Time, ready func() bool) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return p.exitedEarly()
		case <-timeout.C:
			return fmt.Errorf("%s not ready after %s", p.name, readyTimeout)
		case <-tick.C:
		}
	}
}

// exitedEarly describes a process that exited before it was ready. A bind failure, found in its
// log, wraps errPortInUse so that startRetrying tries again with other ports.
func (p *process) exitedEarly() error {
	log, _ := os.ReadFile(p.logPath)
	if bytes.Contains(log, []byte("address already in use")) {
		return fmt.Errorf("%s exited (%v): %w", p.name, p.err, errPortInUse)
	}
	return fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
}

// stop sends SIGTERM, then SIGKILL if the process has not exited within stopTimeout, and waits.
func (p *process) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		t.Logf("kubetest: %s did not exit within %s of SIGTERM; killing it", p.name, stopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail logs the last n lines of the process's output.
func (p *process) logTail(t testing.TB, n int) {
	if tail := lastLines(p.logPath, n); tail != "" {
		t.Logf("kubetest: last lines of %s:\n%s", filepath.Base(p.logPath), tail)
	}
}

// lastLines returns the last n lines of a log file, or "" if it is empty or cannot be read.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
