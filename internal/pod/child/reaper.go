package child

import (
	"errors"
	"log/slog"
	"sync"

	"golang.org/x/sys/unix"
)

// Reaper is the only caller of wait(2) in the process. Calling wait in two places (say
// os/exec's Cmd.Wait and an orphan reaper) makes one of them steal the other's status; so every
// process is started through the Reaper, which reaps whatever exits (its own children and, when
// the process is PID 1 or a child subreaper, orphans re-parented to it) and hands the status of a
// started command to its Process. Use one Reaper per process.
//
// It needs no SIGCHLD: one goroutine, started with the first child, blocks in
// waitid(WEXITED|WNOWAIT) until a child has exited, which leaves the zombie in place, and then
// reaps under the lock that Start holds while it forks and registers a child, so a child that
// exits at once is never reaped before it is known. Catching SIGCHLD would cost a round trip to
// the runtime's signal-mask thread at start, and two goroutine hops at every exit.
type Reaper struct {
	log     *slog.Logger
	started chan struct{} // a child was started: wakes the loop when there were no children

	mu      sync.Mutex // held while starting a process and while reaping, so a fast exit is never missed
	waiting map[int]*Process
	looping bool
}

// NewReaper returns a Reaper. log receives a debug line per reaped orphan; nil discards them.
func NewReaper(log *slog.Logger) *Reaper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reaper{log: log, started: make(chan struct{}, 1), waiting: make(map[int]*Process)}
}

// SetLogger sets where the debug line per reaped orphan goes.
func (r *Reaper) SetLogger(log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = log
}

// BecomeSubreaper makes orphaned descendants re-parent to this process instead of to PID 1,
// so that the Reaper reaps them (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4+).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// startedChild is called by Start, with the lock held, after each fork: it starts the loop
// with the first child and wakes it when it found no children.
func (r *Reaper) startedChild() {
	if !r.looping {
		r.looping = true
		go r.loop()
	}
	select {
	case r.started <- struct{}{}:
	default:
	}
}

// loop waits for exits for as long as the process lives: reaping is needed to its end.
func (r *Reaper) loop() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.ECHILD):
			<-r.started // no child at all: wait for the next Start
		case err != nil:
			r.log.Warn("waiting for children failed", "err", err)
			<-r.started
		default:
			r.reap()
		}
	}
}

// reap collects every child that has exited, without blocking.
func (r *Reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return // ECHILD (no children) or nothing has exited yet
		}
		st := statusOf(pid, ws)
		if p, ok := r.waiting[pid]; ok {
			delete(r.waiting, pid)
			p.finish(st)
			continue
		}
		r.log.Debug("reaped orphan", "pid", pid, "status", st.String())
	}
}
