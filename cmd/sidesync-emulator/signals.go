package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// stoppedBy is the cause of the demo's context when a signal stopped it.
type stoppedBy struct{ sig syscall.Signal }

func (s stoppedBy) Error() string { return "stopped by " + s.sig.String() }

// onStopSignal returns a context that the first SIGINT or SIGTERM cancels, with the signal as its
// cause (stopSignal reads it: the demo passes that signal on to sidesync and exits 128+N, which
// signal.NotifyContext's cause, a string, cannot say), and the function that stops listening.
func onStopSignal() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(stoppedBy{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// stopSignal returns the signal that stopped ctx, if one did.
func stopSignal(ctx context.Context) (syscall.Signal, bool) {
	var s stoppedBy
	if errors.As(context.Cause(ctx), &s) {
		return s.sig, true
	}
	return 0, false
}
