package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// forwarded are the signals passed on to the command: an explicit list, so that the Go
// runtime's own SIGURG (preemption) and SIGCHLD never reach it (scuttle issue 44, kvij/scuttle
// issue 110, kubexit).
var forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

// stopsRun reports whether sig, arriving before the command started, ends sidesync: the signals
// whose default action is to terminate a process and that supervisors use to stop one. SIGUSR1,
// SIGUSR2 and SIGWINCH are usually requests (reopen logs, resize) and are ignored then.
func stopsRun(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// signalError is the cause of a run cut short by a signal before the command started.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "received " + child.SignalName(e.sig) }

// signals is the one owner of signal delivery, from the start of the process to its end: one
// goroutine, fed by one channel per forwarded signal. Before the command starts, a stop signal
// cancels the run's context (with a *signalError as its cause): the wait stops, the command never
// starts, the sidecars are still told to quit. Once the command has started, every forwarded
// signal goes to it. The hand-over between the two happens under one lock (startCommand), so no
// signal falls between them (issue 7, fault 1). SIGCHLD is not needed (the reaper waits with
// waitid), nor SIGPIPE (sidesync's own messages go to a duplicate of stderr, on which a broken
// pipe is a write error, not a signal: see ownStderr).
//
// os/signal drops a signal when its channel is full. With one shared channel, a burst of one
// signal (a resize storm, a supervisor repeating SIGHUP) could fill it and push out a SIGTERM
// that came next. With one channel of one slot per signal, a signal is dropped only when the
// same signal is already waiting: it coalesces, as the kernel coalesces a pending standard
// signal, and no kind of signal is ever lost (TestSignalBurstKeepsStop).
type signals struct {
	chans []chan os.Signal // one per forwarded signal, of one slot each
	ready chan struct{}    // closed once signals are caught
	// stopped is closed at the first stop signal, whenever it comes: before the command started
	// (the run stops) or while it runs (it is forwarded). Either way the pod is being deleted.
	stopped  chan struct{}
	stopOnce sync.Once

	mu     sync.Mutex
	log    *slog.Logger
	group  bool // forward to the command's whole process group
	stop   context.CancelCauseFunc
	target *child.Process // the command, once started
}

// listen starts catching the forwarded signals for a run whose context stop cancels. Until
// configure, nothing is logged. signal.Notify costs a round trip to the runtime's signal-mask
// thread per signal (about 0.2 ms each on a small VM), so it runs alongside the parsing of the
// configuration and the resolve phase; await is called before the wait and the start.
func listen(stop context.CancelCauseFunc) *signals {
	s := newSignals(stop)
	go func() {
		for i, sig := range forwarded {
			signal.Notify(s.chans[i], sig)
		}
		close(s.ready)
		s.loop()
	}()
	return s
}

// newSignals is the owner of signal delivery for a run whose context stop cancels, before it
// catches anything (listen).
func newSignals(stop context.CancelCauseFunc) *signals {
	s := &signals{stop: stop, log: slog.New(slog.DiscardHandler), ready: make(chan struct{}), stopped: make(chan struct{})}
	for range forwarded {
		s.chans = append(s.chans, make(chan os.Signal, 1))
	}
	return s
}

// await waits until signals are caught.
func (s *signals) await() { <-s.ready }

// stopRequested is closed once a stop signal (TERM, INT, HUP or QUIT) has come, before the
// command started or while it ran: on a kubelet, the pod is being deleted and its sidecars are
// being stopped too.
func (s *signals) stopRequested() <-chan struct{} { return s.stopped }

// gotStop reports whether a stop signal has come (see stopRequested).
func (s *signals) gotStop() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// configure sets what the configuration decides: the log, and whether to forward to the
// command's whole process group.
func (s *signals) configure(log *slog.Logger, group bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log, s.group = log, group
}

// loop runs until the process exits: stopping signal delivery before exit would only cost time.
// Of the signals waiting at once, select takes any: the kernel does not keep their order either.
func (s *signals) loop() {
	cases := make([]reflect.SelectCase, len(s.chans))
	for i, c := range s.chans {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)}
	}
	for {
		_, v, _ := reflect.Select(cases)
		s.deliver(v.Interface().(syscall.Signal))
	}
}

// deliver acts on one signal: forward it to the command, stop the run, or ignore it.
func (s *signals) deliver(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stopsRun(sig) {
		s.stopOnce.Do(func() { close(s.stopped) })
	}
	switch {
	case s.target != nil:
		s.log.Info("forwarding signal", "signal", child.SignalName(sig), "group", s.group)
		if err := s.target.Signal(sig, s.group); err != nil {
			s.log.Debug("signal not delivered", "signal", child.SignalName(sig), "err", err)
		}
	case stopsRun(sig):
		s.stop(&signalError{sig}) // the first cause is kept; later ones change nothing
	default:
		s.log.Info("ignoring signal: the command has not started", "signal", child.SignalName(sig))
	}
}

// startCommand starts the command with start unless a stop signal came first, and from then on
// forwards every signal to it. It reports the signal that stopped the run instead, if any.
func (s *signals) startCommand(ctx context.Context, start func() (*child.Process, error)) (*child.Process, *signalError, error) {
	s.await()
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := context.Cause(ctx).(*signalError); ok {
		return nil, se, nil
	}
	p, err := start()
	if err != nil {
		return nil, nil, err
	}
	s.target = p
	return p, nil, nil
}
