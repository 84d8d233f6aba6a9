// Package peers lets the wrapped containers of one pod agree on who tells the pod's sidecars to
// quit: the last of them to end. With two app containers (Argo's main and wait, a job and its
// uploader), the first to end must not cut the mesh from under the other.
//
// The protocol is a directory that every wrapped container mounts (an emptyDir), holding one
// mark file per container, named after the container:
//
//   - A wrapper writes "running" to its mark when it starts, before it waits for the sidecars.
//     A container that the kubelet restarts in place writes it again, which also undoes an
//     "ended" left by an earlier run.
//   - When its command has ended and will not run again (no restart in place follows), it writes
//     "ended N", N its exit code, and only then reads the other marks. It tells the sidecars to
//     quit only if every other mark says ended; otherwise the last to end will.
//   - Every write is atomic: a temporary file in the same directory, renamed over the mark, so a
//     reader sees the old mark or the new one, never half of one.
//
// Because each container writes its own end before it reads the others', two that end at once
// cannot both see the other running: at least one tells the sidecars to quit, and both may (a
// quit is idempotent). A peer with no mark at all has not started yet; the caller waits for it
// for a bounded time (Team.AwaitStart), since it may be pulling its image. A mark that cannot be
// read or understood counts as running: the safe side is to keep the sidecars. Files that are
// not a peer's mark (temporary files, anything else) are ignored.
//
// The package is pure file-system logic on the standard library: no logging, no clock but the
// checks of AwaitStart.
package peers

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/pod/regfile"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// State is what a container's mark says about it.
type State int

// The states of a peer.
const (
	NotStarted State = iota // no mark: it has not started yet (or never will)
	Running                 // "running", or a mark that cannot be read or understood
	Ended                   // "ended N": its command ended and will not run again
)

func (s State) String() string {
	return [...]string{"not started", "running", "ended"}[s]
}

// Mark is one container's mark: its state, and its exit code once ended.
type Mark struct {
	State State
	Code  int
}

// maxMark bounds the read of a mark: "ended 255\n" is ten bytes.
const maxMark = 64

// Team is one container's place among the pod's wrapped containers.
type Team struct {
	Dir   string   // the directory they share
	Self  string   // this container's name
	Peers []string // every wrapped container's name, Self included
}

// Start marks this container running.
func (t Team) Start() error { return write(t.Dir, t.Self, "running\n") }

// End marks this container ended with exit code code. Call it only when the command will not run
// again, and before Others.
func (t Team) End(code int) error { return write(t.Dir, t.Self, "ended "+strconv.Itoa(code)+"\n") }

// Leave removes this container's mark, for when End failed (a full volume): a mark left saying
// running would hold the others' quit forever, while no mark is a peer that never started, which
// they wait for only so long.
func (t Team) Leave() error {
	if err := manifest.CheckContainerName(t.Self); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(t.Dir, t.Self))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Status is what the other containers' marks say, each list in the order of Team.Peers.
type Status struct {
	Running, NotStarted, Ended []string
}

// Last reports whether every other container has ended: this one is the last.
func (s Status) Last() bool { return len(s.Running) == 0 && len(s.NotStarted) == 0 }

// Others reads the marks of the other containers.
func (t Team) Others() Status {
	var s Status
	for _, name := range t.Peers {
		if name == t.Self {
			continue
		}
		switch Read(t.Dir, name).State {
		case NotStarted:
			s.NotStarted = append(s.NotStarted, name)
		case Running:
			s.Running = append(s.Running, name)
		case Ended:
			s.Ended = append(s.Ended, name)
		}
	}
	return s
}

// AwaitStart reads the other marks every interval for as long as the only containers that have
// not ended are some that have not started: until one of them starts (it is then the one to tell
// the sidecars to quit, later), every one has ended, or ctx ends. It returns the last Status read.
func (t Team) AwaitStart(ctx context.Context, every time.Duration) Status {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s := t.Others()
		if len(s.Running) > 0 || len(s.NotStarted) == 0 {
			return s
		}
		select {
		case <-ctx.Done():
			return s
		case <-tick.C:
		}
	}
}

// Read reads the mark of container name in dir. No mark is NotStarted; a mark that is not a
// regular file, cannot be read, or says something else than "running" or "ended N" is Running.
func Read(dir, name string) Mark {
	b, err := readMark(filepath.Join(dir, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Mark{State: NotStarted}
	case err != nil:
		return Mark{State: Running}
	}
	return parse(string(b))
}

// parse reads "running" or "ended N".
func parse(s string) Mark {
	words := strings.Fields(s)
	if len(words) == 2 && words[0] == "ended" {
		if code, err := strconv.Atoi(words[1]); err == nil {
			return Mark{State: Ended, Code: code}
		}
	}
	return Mark{State: Running}
}

// readMark reads a mark: a small regular file, read without blocking on anything else (a FIFO
// put there).
func readMark(path string) ([]byte, error) { return regfile.Read(path, maxMark) }

// write replaces the mark of container name in dir with content, atomically. The mark is
// readable by all: the containers of a pod may run as different users.
func write(dir, name, content string) error {
	if err := manifest.CheckContainerName(name); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
