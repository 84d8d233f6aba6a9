package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestSignalBurstKeepsStop: a burst of one signal while sidesync is busy must not push out the
// SIGTERM that follows it. os/signal drops what does not fit in a channel; with one shared
// channel of 16 slots, the 17th SIGWINCH and everything after it, SIGTERM included, were lost,
// and a pod being deleted waited for its grace period to end in SIGKILL.
//
// The test holds the lock deliver needs, so the signal loop is stuck as if logging were slow,
// and sends this process 40 SIGWINCHes and then a SIGTERM. Each send is known to have been
// processed by os/signal (kept or dropped) through a probe channel: os/signal hands one signal
// at a time to every channel that wants it, so once the probe has the next signal, the previous
// one has been offered to sidesync's channels too.
func TestSignalBurstKeepsStop(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	s := listen(stop)
	s.await()
	probe := make(chan os.Signal, 1)
	signal.Notify(probe, syscall.SIGWINCH, syscall.SIGTERM, syscall.SIGPWR)
	t.Cleanup(func() {
		signal.Stop(probe)
		for _, c := range s.chans {
			signal.Stop(c)
		}
	})
	send := func(sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-probe:
			if got != sig {
				t.Fatalf("probe got %v, want %v", got, sig)
			}
		case <-time.After(guard):
			t.Fatalf("%v not processed within %v", sig, guard)
		}
	}

	s.mu.Lock()
	for range 40 {
		send(syscall.SIGWINCH)
	}
	send(syscall.SIGTERM)
	send(syscall.SIGPWR) // SIGTERM has been offered to sidesync's channel once the probe has this
	if ctx.Err() != nil {
		t.Fatal("the run stopped while the signal loop was held")
	}
	s.mu.Unlock()

	select {
	case <-ctx.Done():
	case <-time.After(guard):
		t.Fatalf("SIGTERM after a burst of SIGWINCH did not stop the run within %v: it was dropped", guard)
	}
	if se := stopSignal(ctx); se == nil || se.sig != syscall.SIGTERM {
		t.Errorf("the run stopped with cause %v, want SIGTERM", context.Cause(ctx))
	}
}
