package emulator

// wrap applies the behaviour knobs to a route's handler by its Role. It
// runs after the method check and the route's own refusals, so a wrong
// method (ref §1.1), a peer that is not loopback or a disabled endpoint
// (ref §12 items 2 and 4) is refused the way the real sidecar refuses it
// whatever the knobs say.
func (s *Sidecar) wrap(rt *Route, h Handler) Handler {
	switch rt.Role {
	case RoleReadiness:
		b := s.opts.ReadyBehaviour
		return func(r *Request) Reply {
			if s.opts.ReadyAfterProbes > 0 {
				s.countProbe()
			}
			return b.apply(h, r, s.opts.SlowBy)
		}
	case RoleShutdown:
		return s.shutdownHandler(rt, h)
	}
	return h
}

// countProbe counts a readiness request before it is answered, and turns the sidecar ready at
// the one after the first Options.ReadyAfterProbes: readiness that follows the client's
// progress, not a clock, so that a test can count the "not ready" answers whatever the load.
func (s *Sidecar) countProbe() {
	s.mu.Lock()
	s.probes++
	turn := s.probes == s.opts.ReadyAfterProbes+1
	s.mu.Unlock()
	if turn {
		s.setPhase(PhaseReady)
	}
}

// shutdownHandler applies Options.QuitBehaviour to a shutdown route and
// shuts the sidecar down when the request is accepted: with "ok" when the
// profile's handler answers 2xx (a profile refuses with 403 or 404 where
// the real sidecar does, ref §12 items 2 and 4), and so with "slow", once
// the delayed answer is out; with "reset", "eof", "garbage" and "endless"
// always (the sidecar took the request and went away, ending the endless
// answer); "hang", "redirect", "403", "404", "405" and "500" keep the
// sidecar up. Refusals (401, 403, 404,
// 405) therefore never quit.
//
// A shutdown request read after the sidecar began to stop (SIGTERM first: Close, or the end of
// Start's context) is not taken and not answered: the connection closes (Outcome Drop), as the
// real process exits under it. Answering 2xx there would claim a quit that never happened.
func (s *Sidecar) shutdownHandler(rt *Route, h Handler) Handler {
	return func(r *Request) Reply {
		if s.isStopping() || s.loseQuit() {
			return Reply{Outcome: Drop}
		}
		b := s.opts.QuitBehaviour
		reply := b.apply(h, r, s.opts.SlowBy)
		accepted := b == BehaviourReset || b == BehaviourEOF || b == BehaviourGarbage || b == BehaviourEndless
		if b == BehaviourOK || b == BehaviourSlow {
			accepted = reply.Outcome == Answer && reply.Response.Status/100 == 2
		}
		if accepted {
			plan := ExitPlan{Code: s.opts.ExitCode, Delay: s.opts.ExitDelay}
			if rt.Exit != nil {
				plan = rt.Exit(r, plan)
			}
			s.acceptQuit(plan)
			reply.After = chain(reply.After, s.exitLater)
		}
		return reply
	}
}

// loseQuit counts a shutdown request and reports whether it is one of the first
// Options.QuitLost, which are lost.
func (s *Sidecar) loseQuit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost >= s.opts.QuitLost {
		return false
	}
	s.lost++
	s.events.emit("quit-lost")
	return true
}

// isStopping reports whether the sidecar has begun to stop.
func (s *Sidecar) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// acceptQuit records the first accepted shutdown request and its exit
// plan; later ones change nothing (Cloud SQL's quit is one-shot, ref §8).
func (s *Sidecar) acceptQuit(plan ExitPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quitting || s.stopped {
		return
	}
	s.quitting, s.plan = true, plan
	s.events.emit("quit")
	close(s.quit)
}

// exitLater stops the sidecar with the exit plan's code after its delay,
// on its own goroutine because it runs as a Reply's After on a request
// goroutine that Server.Close waits for.
func (s *Sidecar) exitLater() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exiting || s.stopped {
		return
	}
	s.exiting = true
	plan := s.plan
	go func() {
		if s.wait(plan.Delay) {
			s.stop(plan.Code)
		}
	}()
}

// chain returns a function that runs first and then second; nil means
// nothing to run.
func chain(first, second func()) func() {
	if first == nil {
		return second
	}
	return func() {
		first()
		second()
	}
}
