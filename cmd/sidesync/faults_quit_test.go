package main

import (
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// quitBound is how long the tests below let a quit run whose --quit-timeout is 1s. It is
// generous, so that load cannot fail them, and far below what the settings give when the quit
// is not bounded by --quit-timeout: four requests of --quit-request-timeout 1m each, minutes.
const quitBound = 60 * time.Second

// quitBoundArgs put --quit-timeout and the longer bounds minutes apart: a quit that ends within
// quitBound was bounded by --quit-timeout and by nothing else.
var quitBoundArgs = []string{"--quit-timeout", "1s", "--timeout", "5m", "--quit-request-timeout", "1m"}

// hangingSidecar listens on addr (127.0.0.1:0 for any port), accepts every connection and never
// answers; it counts the connections it accepted.
func hangingSidecar(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var conns []net.Conn // held open, unanswered, until the test ends
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), &accepted
}

// exitWithin waits up to bound for sidesync to end and returns its exit code; past the bound it
// fails the test with sidesync's stacks (SIGABRT).
func (r *running) exitWithin(bound time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		r.cmd.Process.Signal(syscall.SIGABRT)
		<-r.done
		r.t.Fatalf("sidesync still running after %v, with --quit-timeout 1s; stderr (ending with its stacks):\n%s", bound, r.stderr)
	}
	return -1
}

// TestFaultQuitTimeoutBoundsAHang: a sidecar that accepts the quit's connection and never
// answers holds sidesync no longer than --quit-timeout, for "sidesync quit" and for a sidecar
// nothing waited for (--no-wait), whose grace for a sidecar that has not started yet
// (--timeout) covers refused connections only. It took --timeout or four request timeouts
// before (8.8 s with --quit-timeout 1s and the defaults).
func TestFaultQuitTimeoutBoundsAHang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string // before the quit URL and quitBoundArgs
		command  []string
		wantCode int
	}{
		{"sidesync quit", []string{"quit"}, nil, exitUnavailable},
		{"sidesync --no-wait", []string{"--no-wait"}, []string{"--", bin.testcmd, "exit", "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr, accepted := hangingSidecar(t, "127.0.0.1:0")
			args := append(append(append(tt.args, "--quit-url", "http://"+addr+"/quitquitquit"), quitBoundArgs...), tt.command...)
			start := time.Now()
			r := startSidesync(t, nil, args...)
			if code := r.exitWithin(quitBound); code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, r.stderr)
			}
			t.Logf("sidesync ended after %v", time.Since(start))
			mustContain(t, r.stderr.String(), "sidecar quit failed", "after 1 attempts", "deadline exceeded")
			if n := accepted.Load(); n != 1 {
				t.Errorf("the sidecar accepted %d connections, want the one quit request", n)
			}
		})
	}
}

// TestFaultQuitSidecarListensLate: a sidecar nothing waited for (--no-wait) that starts listening
// only after the command ended is still told to quit: a refused quit is tried again for up to
// --timeout. Once it listens, --quit-timeout bounds the quit again: one that accepts and never
// answers holds sidesync about a second, not minutes.
func TestFaultQuitSidecarListensLate(t *testing.T) {
	t.Parallel()
	t.Run("it answers", func(t *testing.T) {
		t.Parallel()
		addr := strings.TrimPrefix(closedAdmin(t), "http://")
		r := lateQuit(t, addr)
		e := startProfile(t, "envoy", "--listen", addr)
		if code := r.exitWithin(quitBound); code != 0 {
			t.Errorf("exit %d, want the command's 0; stderr:\n%s", code, r.stderr)
		}
		mustContain(t, r.stderr.String(), "sidecar quit sidecar=envoy", "status=200", "quit=ok")
		if code := e.waitExit(); code != 0 || e.quits() != 1 {
			t.Errorf("the sidecar exited %d after %d quits, want 0 after 1", code, e.quits())
		}
	})
	t.Run("it never answers", func(t *testing.T) {
		t.Parallel()
		addr := strings.TrimPrefix(closedAdmin(t), "http://")
		r := lateQuit(t, addr)
		_, accepted := hangingSidecar(t, addr)
		listened := time.Now()
		if code := r.exitWithin(quitBound); code != 0 {
			t.Errorf("exit %d, want the command's 0; stderr:\n%s", code, r.stderr)
		}
		t.Logf("sidesync ended %v after the sidecar started listening", time.Since(listened))
		mustContain(t, r.stderr.String(), "sidecar quit failed", "deadline exceeded", "quit=failed")
		if n := accepted.Load(); n != 1 {
			t.Errorf("the sidecar accepted %d connections, want the one quit request", n)
		}
	})
}

// lateQuit starts sidesync with a sidecar at addr that nothing waited for, and returns once its
// command has ended and its quit has found nothing listening there.
func lateQuit(t *testing.T, addr string) *running {
	t.Helper()
	args := append([]string{"--no-wait", "--quit-url", "http://" + addr + "/quitquitquit"}, quitBoundArgs...)
	r := startSidesync(t, nil, append(args, "--", bin.testcmd, "exit", "0")...)
	r.stderr.await(t, "nothing listens yet")
	mustContain(t, r.stderr.String(), "command ended")
	return r
}

// TestFaultQuitLost: a sidecar that closes the quit's connection with no answer and runs on, as
// Istio's pilot-agent does while its Envoy has not started (its handler fails; a rescue met it
// on the test node), is asked again until it takes the quit: "sidesync quit", as a rescue's
// container runs it, ends 0 and the sidecar exits. One that never takes it fails the quit within
// --quit-timeout (exit 69), where a closed connection used to count as a quit and left it
// running for good.
func TestFaultQuitLost(t *testing.T) {
	t.Parallel()
	t.Run("taken at the third", func(t *testing.T) {
		t.Parallel()
		e := startProfile(t, "istio", "--quit-lost", "2")
		r := sidesync(t, nil, "quit", "--sidecar", "istio:quit-port="+e.port("status"), "--quit-retries", "0")
		if r.code != 0 {
			t.Errorf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
		}
		if code := e.waitExit(); code != 0 || e.quits() != 1 || e.count("quit-lost", anyEvent) != 2 {
			t.Errorf("the sidecar exited %d after %d quits and %d lost ones, want 0 after 1 and 2", code, e.quits(), e.count("quit-lost", anyEvent))
		}
		mustContain(t, r.stderr, "closed the connection with no answer; asking again", "sidecar quit sidecar=istio", "status=200", "attempts=3")
	})
	t.Run("never taken", func(t *testing.T) {
		t.Parallel()
		e := startProfile(t, "istio", "--quit-lost", "1000000")
		start := time.Now()
		r := startSidesync(t, nil, append([]string{"quit", "--sidecar", "istio:quit-port=" + e.port("status")}, quitBoundArgs...)...)
		if code := r.exitWithin(quitBound); code != exitUnavailable {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnavailable, r.stderr)
		}
		t.Logf("sidesync ended after %v", time.Since(start))
		mustContain(t, r.stderr.String(), "sidecar quit failed", "still listens: it did not take the quit")
		if e.quits() != 0 || e.count("quit-lost", anyEvent) < 2 {
			t.Errorf("%d quits and %d lost ones, want 0 and at least 2", e.quits(), e.count("quit-lost", anyEvent))
		}
	})
}
