package emulator

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// listener is one listener of a Sidecar with its own route table and
// Server, so that each port answers only its own paths (ref §3.1, §5.1,
// §7, §8: several sidecars listen on more than one port).
type listener struct {
	name   string
	mux    *Mux
	server *Server
	addr   string // set once by reserve, under Sidecar.mu
}

// defaultListen is the address of a listener nobody named: loopback, an
// ephemeral port.
const defaultListen = "127.0.0.1:0"

// addrFor returns the address listener i is asked to listen on:
// Options.Addrs by name first, then Options.Listen for the main listener.
func (s *Sidecar) addrFor(i int) string {
	if a := s.opts.Addrs[s.listeners[i].name]; a != "" {
		return a
	}
	if i == 0 {
		return s.opts.Listen
	}
	return defaultListen
}

// checkAddrs rejects Options.Addrs keys that name no listener of the
// profile; the message names the --listen flag that sets them.
func (s *Sidecar) checkAddrs() error {
	for _, name := range slices.Sorted(maps.Keys(s.opts.Addrs)) { // sorted: the same flags, the same message
		if !s.profile.hasListener(name) {
			return fmt.Errorf("-listen: profile %s has no listener %q (listeners: %s)",
				s.profile.Name, name, s.profile.listenerNames())
		}
	}
	return nil
}

// reserve listens on every listener's address and records the chosen
// addresses. With ListenAfter it closes the listeners again at once,
// keeping only the addresses, and returns nil: until the late listen a
// client sees connection refused (ref §1.3). On failure nothing is left
// open.
func (s *Sidecar) reserve() ([]net.Listener, error) {
	var lns []net.Listener
	for i := range s.listeners {
		ln, err := listen(s.addrFor(i))
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("listener %s: %w", s.listeners[i].name, err)
		}
		lns = append(lns, ln)
	}
	s.mu.Lock()
	for i, ln := range lns {
		s.listeners[i].addr = ln.Addr().String()
	}
	s.mu.Unlock()
	if s.opts.ListenAfter > 0 {
		closeAll(lns)
		return nil, nil
	}
	return lns, nil
}

// listen listens on addr, on IPv4 only when its host is an IPv4 literal:
// for "0.0.0.0:0" Go would otherwise open a dual-stack socket and report
// "[::]:PORT", not the address that was asked for.
func listen(addr string) (net.Listener, error) {
	network := "tcp"
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.To4() != nil && !strings.Contains(host, ":") {
			network = "tcp4"
		}
	}
	return net.Listen(network, addr)
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

// serve starts accepting on ln for l unless the sidecar is already
// stopping. Holding mu orders the listening event before any exit event.
func (s *Sidecar) serve(l *listener, ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || l.server.Start(ln) != nil {
		ln.Close()
		return
	}
	s.events.emit("listening", "name", l.name, "addr", ln.Addr().String())
}

// listenLater listens on every reserved address once Options.ListenAfter
// has passed; a failure stops the sidecar with exit code 1.
func (s *Sidecar) listenLater() {
	if !s.wait(s.opts.ListenAfter) {
		return
	}
	var lns []net.Listener
	var errs []error
	for _, l := range s.listeners {
		ln, err := listen(l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("late listen of %s on %s: %w", l.name, l.addr, err))
		}
		lns = append(lns, ln)
	}
	if err := errors.Join(errs...); err != nil {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
		fmt.Fprintf(s.opts.Diagnostics, "emulator: %v\n", err)
		s.stop(1)
		return
	}
	for i, ln := range lns {
		s.serve(s.listeners[i], ln)
	}
}
