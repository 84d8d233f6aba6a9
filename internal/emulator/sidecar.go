package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Sidecar is one emulated sidecar: a profile's routes served on a real
// loopback listener, plus the lifecycle every sidecar shares (ref §12
// item 7): starting, ready after a delay, shutdown on request, exit after
// a delay with a code. Create it with New or NewEnvoy.
type Sidecar struct {
	opts    Options
	binding Binding
	events  *eventLog
	server  *Server

	quit     chan struct{} // closed when a shutdown request is accepted
	stopping chan struct{} // closed when stopping begins; wakes timers
	done     chan struct{} // closed when stopped

	mu       sync.Mutex
	started  bool
	addr     string
	phase    Phase
	state    string
	changed  chan struct{} // closed and replaced on each state change
	quitting bool
	exiting  bool
	stopped  bool
	exitCode int
}

// New returns a Sidecar of profile p. Nothing listens until Start.
func New(p Profile, opts Options) *Sidecar {
	s := &Sidecar{
		opts:     opts.withDefaults(),
		events:   newEventLog(opts.Events),
		quit:     make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
	s.binding = p.Bind(s)
	s.binding.Mux.Wrap = s.wrap
	s.server = NewServer(s.binding.Mux.Serve, s.logRequest)
	return s
}

// NewEnvoy returns a Sidecar emulating the Envoy admin interface (ref §1).
func NewEnvoy(opts Options) *Sidecar {
	return New(Envoy(), opts)
}

// Start picks the address, starts the state clock and listens (at once,
// or after Options.ListenAfter). It returns once Addr is known. When ctx
// ends the sidecar stops as on Close, like a sidecar sent SIGTERM. If
// Start fails the sidecar is stopped with exit code 1.
func (s *Sidecar) Start(ctx context.Context) error {
	if err := s.begin(); err != nil {
		return err
	}
	ln, addr, err := s.reserve()
	if err != nil {
		s.stop(1)
		return err
	}
	s.mu.Lock()
	s.addr = addr
	s.mu.Unlock()
	s.events.emit("address", "addr", addr)
	s.setPhase(PhaseStarting)
	if s.opts.ReadyAfter == 0 {
		// Settle before listening so that no client sees a passing state.
		s.setPhase(PhaseInitializing)
		if !s.opts.NeverReady {
			s.setPhase(PhaseReady)
		}
	} else {
		go s.clock()
	}
	if ln != nil {
		s.serve(ln)
	} else {
		go s.listenLater(addr)
	}
	go s.watch(ctx)
	return nil
}

// begin checks that Start may run.
func (s *Sidecar) begin() error {
	if err := s.opts.validate(); err != nil {
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

// Addr returns the host:port the sidecar listens on (or will listen on,
// with Options.ListenAfter); "" before Start.
func (s *Sidecar) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Quit returns a channel closed when a shutdown request is accepted.
func (s *Sidecar) Quit() <-chan struct{} { return s.quit }

// Done returns a channel closed when the sidecar has stopped: listener
// and connections closed, exit event written.
func (s *Sidecar) Done() <-chan struct{} { return s.done }

// ExitCode returns the code the emulated process exits with; it is final
// once Done is closed: Options.ExitCode after an accepted shutdown
// request, 1 after a failure to listen, else 0.
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
		code = s.opts.ExitCode
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
	s.server.Close() // waits for connections, so request events come first
	s.events.emit("exit", "code", strconv.Itoa(code))
	close(s.done)
}

// reserve listens on Options.Listen. With ListenAfter it closes the
// listener again at once, keeping only the chosen address: until the late
// listen a client sees connection refused (ref §1.3).
func (s *Sidecar) reserve() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	if s.opts.ListenAfter > 0 {
		ln.Close()
		return nil, addr, nil
	}
	return ln, addr, nil
}

// serve starts accepting on ln unless the sidecar is already stopping.
// Holding mu orders the listening event before any exit event.
func (s *Sidecar) serve(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.server.Start(ln) != nil {
		ln.Close()
		return
	}
	s.events.emit("listening", "addr", ln.Addr().String())
}

func (s *Sidecar) listenLater(addr string) {
	if !s.wait(s.opts.ListenAfter) {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(s.opts.Diagnostics, "emulator: late listen on %s: %v\n", addr, err)
		s.stop(1)
		return
	}
	s.serve(ln)
}

func (s *Sidecar) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
		s.Close()
	case <-s.stopping:
	}
}

func (s *Sidecar) logRequest(r *Request, result string) {
	peer := ""
	if r.Peer != nil {
		peer = r.Peer.String()
	}
	s.events.emit("request", "method", r.Method, "path", r.Path, "status", result, "peer", peer)
}
