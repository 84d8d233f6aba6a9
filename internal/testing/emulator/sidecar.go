package emulator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Sidecar is one emulated sidecar: a profile's route tables served on real
// listeners, plus the lifecycle every sidecar shares (ref §12 item 7):
// starting, ready after a delay, shutdown on request, exit after a delay
// with a code. Create it with New or NewEnvoy; Addr and AddrOf tell where
// it listens.
type Sidecar struct {
	profile   Profile
	opts      Options
	binding   Binding
	events    *eventLog
	listeners []*listener // in the order of Profile.Listeners: main first

	quit     chan struct{} // closed when a shutdown request is accepted
	stopping chan struct{} // closed when stopping begins; wakes timers
	done     chan struct{} // closed when stopped

	mu       sync.Mutex
	started  bool
	phase    Phase
	state    string
	changed  chan struct{} // closed and replaced on each state change
	quitting bool
	plan     ExitPlan // how to end, fixed by the first accepted shutdown
	exiting  bool
	stopped  bool
	exitCode int
	probes   int // readiness requests answered, for Options.ReadyAfterProbes
	lost     int // shutdown requests lost, for Options.QuitLost
}

// New returns a Sidecar of profile p. Nothing listens until Start. It
// panics if p has no listener or p.Bind leaves one without a route table:
// a mistake in the profile, not in its use.
func New(p Profile, opts Options) *Sidecar {
	if len(p.Listeners) == 0 {
		panic("emulator: profile " + p.Name + " has no listener")
	}
	s := &Sidecar{
		profile:  p,
		opts:     opts.withDefaults(),
		events:   newEventLog(opts.Events),
		quit:     make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
	s.binding = p.Bind(s)
	for _, spec := range p.Listeners {
		mux := s.binding.Muxes[spec.Name]
		if mux == nil {
			panic(fmt.Sprintf("emulator: profile %s binds no routes for listener %s", p.Name, spec.Name))
		}
		mux.Wrap = s.wrap
		l := &listener{name: spec.Name, mux: mux}
		l.server = NewServer(mux.Serve, s.requestLogger(spec.Name), s.opts.Diagnostics)
		s.listeners = append(s.listeners, l)
	}
	return s
}

// NewEnvoy returns a Sidecar emulating the Envoy admin interface (ref §1).
func NewEnvoy(opts Options) *Sidecar {
	return New(Envoy(), opts)
}

// Start picks the addresses, starts the state clock and listens (at once,
// or after Options.ListenAfter). It returns once every address is known.
// When ctx ends the sidecar stops as on Close, like a sidecar sent
// SIGTERM. If Start fails the sidecar is stopped with exit code 1.
func (s *Sidecar) Start(ctx context.Context) error {
	if err := s.begin(); err != nil {
		return err
	}
	lns, err := s.reserve()
	if err != nil {
		s.stop(1)
		return err
	}
	for _, l := range s.listeners {
		s.events.emit("address", "name", l.name, "addr", l.addr)
	}
	s.setPhase(PhaseStarting)
	if s.opts.ReadyAfter == 0 {
		// Settle before listening so that no client sees a passing state.
		s.setPhase(PhaseInitializing)
		if !s.opts.NeverReady && s.opts.ReadyAfterProbes == 0 {
			s.setPhase(PhaseReady)
		}
	} else {
		go s.clock()
	}
	if lns != nil {
		for i, ln := range lns {
			s.serve(s.listeners[i], ln)
		}
	} else {
		go s.listenLater()
	}
	go s.watch(ctx)
	return nil
}

// begin checks that Start may run.
func (s *Sidecar) begin() error {
	err := s.opts.validate()
	if err == nil {
		err = s.checkAddrs()
	}
	if err != nil {
		s.stop(1)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return errors.New("emulator: Start called twice or after Close")
	}
	s.started = true
	return nil
}

// Addr returns the host:port the main listener listens on (or will listen
// on, with Options.ListenAfter); "" before Start.
func (s *Sidecar) Addr() string {
	return s.AddrOf(s.listeners[0].name)
}

// AddrOf returns the host:port of the listener called name; "" before
// Start or when the profile has no such listener.
func (s *Sidecar) AddrOf(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		if l.name == name {
			return l.addr
		}
	}
	return ""
}

// Quit returns a channel closed when a shutdown request is accepted.
func (s *Sidecar) Quit() <-chan struct{} { return s.quit }

// Done returns a channel closed when the sidecar has stopped: listeners
// and connections closed, exit event written.
func (s *Sidecar) Done() <-chan struct{} { return s.done }

// ExitCode returns the code the emulated process exits with; it is final
// once Done is closed: the exit plan's code after an accepted shutdown
// request (Options.ExitCode unless the route says otherwise), 1 after a
// failure to listen, else 0.
func (s *Sidecar) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode
}

// Close stops the sidecar as SIGTERM stops the real one and waits until it
// has stopped. It is safe to call more than once.
func (s *Sidecar) Close() error {
	s.mu.Lock()
	code := 0
	if s.quitting {
		code = s.plan.Code
	}
	s.mu.Unlock()
	s.stop(code)
	return nil
}

// stop is the single way out: close everything, write the exit event.
func (s *Sidecar) stop(code int) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.stopped, s.exitCode = true, code
	close(s.stopping)
	s.mu.Unlock()
	for _, l := range s.listeners {
		l.server.Close() // waits for handlers, so their request events come first
	}
	s.events.emit("exit", "code", strconv.Itoa(code))
	close(s.done)
}

func (s *Sidecar) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
		s.Close()
	case <-s.stopping:
	}
}

// requestLogger returns the Server log function of listener name, which
// writes request events.
func (s *Sidecar) requestLogger(name string) func(r *Request, result string) {
	return func(r *Request, result string) {
		s.events.emit("request", "method", r.Method, "path", r.Path, "status", result,
			"peer", r.Peer, "listener", name)
	}
}
