// Package realsidecar runs real sidecar programs for tests, so that sidesync's readiness and quit
// logic is exercised against the real thing rather than an imitation of it.
//
// The sidecars are built from source by scripts in .ci/ into a cache directory outside the
// repository; this package only runs them, and skips the test when a binary is missing (or fails
// it, when the matching *_REQUIRED variable is set, as CI may do). It uses only the standard
// library. Istio's pilot-agent runs with a stand-in for Envoy (the envoystandin command, built
// here with go build): see README.md.
package realsidecar

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// awaitExit waits for done (closed once the process's cmd.Wait has returned) and returns code.
// It fails the test, naming the process and showing its output, if that takes exitTimeout.
func awaitExit(t testing.TB, done <-chan struct{}, code *int, name string, pid int, output func() string) int {
	t.Helper()
	select {
	case <-done:
		return *code
	case <-time.After(exitTimeout):
		t.Fatalf("realsidecar: %s (pid %d) still running after %v; output:\n%s", name, pid, exitTimeout, output())
		return -1
	}
}

// closed reports, without blocking, whether done is closed: whether the process has exited.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1. All n listeners are held
// open together so that the ports differ; they are closed before returning, so another process
// could still take one before the sidecar binds it (it then exits with a bind error).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("listener address is not TCP")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer; it is the io.Writer given to a process's stdout and stderr.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
