package emulator

import (
	"context"
	"fmt"
	"time"
)

// Phase is the stage of the lifecycle every sidecar shares (ref §12
// item 7). A profile names its externally visible state for each phase.
type Phase int

const (
	// PhaseStarting runs from Start to half of Options.ReadyAfter
	// (Envoy: PRE_INITIALIZING).
	PhaseStarting Phase = iota
	// PhaseInitializing runs from half of Options.ReadyAfter until ready
	// (Envoy: INITIALIZING), forever with Options.NeverReady.
	PhaseInitializing
	// PhaseReady starts at Options.ReadyAfter (Envoy: LIVE).
	PhaseReady
)

// State returns the profile's name for the current state, e.g. "LIVE".
func (s *Sidecar) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Phase returns the current phase of the state clock. Profiles whose
// readiness is the clock's alone answer "ready" in PhaseReady.
func (s *Sidecar) Phase() Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// WaitState waits until the state is name. It fails when ctx ends or the
// sidecar stops first.
func (s *Sidecar) WaitState(ctx context.Context, name string) error {
	for {
		s.mu.Lock()
		state, changed := s.state, s.changed
		s.mu.Unlock()
		if state == name {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("emulator: waiting for state %s in %s: %w", name, state, ctx.Err())
		case <-s.done:
			return fmt.Errorf("emulator: stopped in state %s while waiting for %s", state, name)
		}
	}
}

// RefreshState recomputes the state name after a profile changed state of
// its own, and reports a change as a state event.
func (s *Sidecar) RefreshState() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started && !s.stopped {
		s.refreshLocked()
	}
}

// clock moves through the phases on one goroutine, so they never arrive
// out of order.
func (s *Sidecar) clock() {
	half := s.opts.ReadyAfter / 2
	if !s.wait(half) {
		return
	}
	s.setPhase(PhaseInitializing)
	if s.opts.NeverReady || !s.wait(s.opts.ReadyAfter-half) {
		return
	}
	s.setPhase(PhaseReady)
}

// waitUntil waits until cond holds, re-checking it on every state change,
// for at most d. It reports whether cond held; it gives up early when the
// sidecar starts stopping, so that a handler blocked here never holds up
// Server.Close.
func (s *Sidecar) waitUntil(d time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		changed := s.changed // taken before cond, so no change is missed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-t.C:
			return false
		case <-s.stopping:
			return false
		}
	}
}

// wait waits for d and reports false if the sidecar started stopping
// first.
func (s *Sidecar) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stopping:
		return false
	}
}

func (s *Sidecar) setPhase(p Phase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.phase = p
	s.refreshLocked()
}

// refreshLocked updates the state name and writes the state event under
// mu, so that a handler that sees a state always answers after its event.
func (s *Sidecar) refreshLocked() {
	name := s.binding.State(s.phase)
	if name == s.state {
		return
	}
	s.state = name
	s.events.emit("state", "state", name)
	close(s.changed)
	s.changed = make(chan struct{})
}
