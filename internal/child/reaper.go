package child

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reaper is the only caller of wait(2) in the process. Calling wait in two places (say
// os/exec's Cmd.Wait and an orphan reaper) makes one of them steal the other's status; so every
// process is started through the Reaper, which reaps whatever exits (its own children and, when
// the process is PID 1 or a child subreaper, orphans re-parented to it) and hands the status of a
// started command to its Process. Use one Reaper per process.
type Reaper struct {
	log     *slog.Logger
	sigs    chan os.Signal
	stop    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex // held while starting a process and while reaping, so a fast exit is never missed
	waiting map[int]*Process
	orphans int
}

// NewReaper starts reaping. log receives a debug line per reaped orphan; nil discards them.
func NewReaper(log *slog.Logger) *Reaper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reaper{
		log:     log,
		sigs:    make(chan os.Signal, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
		waiting: make(map[int]*Process),
	}
	// SIGCHLD is only a wake-up: several exits may coalesce into one signal, so each wake-up
	// reaps until nothing is left. It is never forwarded to the command.
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go r.loop()
	return r
}

// BecomeSubreaper makes orphaned descendants re-parent to this process instead of to PID 1,
// so that the Reaper reaps them (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4+).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

func (r *Reaper) loop() {
	defer close(r.stopped)
	for {
		select {
		case <-r.sigs:
			r.reap()
		case <-r.stop:
			return
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
		r.orphans++
		r.log.Debug("reaped orphan", "pid", pid, "status", st.String())
	}
}

// Orphans returns how many processes the Reaper reaped that it had not started.
func (r *Reaper) Orphans() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.orphans
}

// Close stops reaping. Processes still running are not waited for.
func (r *Reaper) Close() {
	signal.Stop(r.sigs)
	close(r.stop)
	<-r.stopped
}
