// Package emuproc starts an emulated sidecar (internal/testing/emulator) as a real process and follows
// the event lines it prints: the one way that the tests, the benchmark suite and the demo start
// one. A caller says how to run the emulator (its own binary re-executed, or
// cmd/sidesync-emulator), and waits on events rather than on time.
package emuproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/testing/emulator"
)

// Process is a running emulated sidecar.
type Process struct {
	cmd   *exec.Cmd
	addrs map[string]string // listener name -> host:port
	main  string            // the main listener's name

	mu      sync.Mutex
	events  []emulator.Event
	changed chan struct{} // closed and replaced on every event and at exit
	exited  bool
	code    int
	endedAt time.Time // when the exit was seen, in this process's clock
}

// Options says how to start one.
type Options struct {
	// Env is the emulator's environment; nil means this process's.
	Env []string
	// Stderr receives its diagnostics; nil discards them.
	Stderr io.Writer
	// OnEvent, when set, sees every event as it is read, in order (the demo relays them).
	OnEvent func(emulator.Event)
}

// Start runs argv (for example {"sidesync-emulator", "emulate", "envoy", "--never-ready"}) and
// returns once the emulator has reported the address of every listener. ctx bounds only that
// wait; the process then runs until it exits or Kill.
func Start(ctx context.Context, argv []string, o Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("emuproc: no command")
	}
	p := &Process{cmd: exec.Command(argv[0], argv[1:]...), addrs: make(map[string]string), changed: make(chan struct{})}
	p.cmd.Env, p.cmd.Stderr = o.Env, o.Stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go p.follow(stdout, o.OnEvent)
	if err := p.awaitAddresses(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// follow reads event lines until the emulator closes its stdout, then reaps it.
func (p *Process) follow(stdout io.Reader, onEvent func(emulator.Event)) {
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		ev, err := emulator.ParseEvent(lines.Text())
		if err != nil {
			continue
		}
		if onEvent != nil {
			onEvent(ev)
		}
		p.mu.Lock()
		p.events = append(p.events, ev)
		p.notify()
		p.mu.Unlock()
	}
	p.cmd.Wait()
	p.mu.Lock()
	p.exited, p.code, p.endedAt = true, p.cmd.ProcessState.ExitCode(), time.Now()
	p.notify()
	p.mu.Unlock()
}

func (p *Process) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// awaitAddresses waits for the first event that is not an address: the emulator prints every
// listener's address before anything else.
func (p *Process) awaitAddresses(ctx context.Context) error {
	_, err := p.Await(ctx, "", func(ev emulator.Event) bool { return ev.Name != "address" })
	if err != nil {
		return fmt.Errorf("emuproc: no addresses: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.events {
		if ev.Name != "address" {
			break
		}
		if p.main == "" {
			p.main = ev.Get("name")
		}
		p.addrs[ev.Get("name")] = ev.Get("addr")
	}
	return nil
}

// Pid is the emulator's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Addr is the main listener's host:port.
func (p *Process) Addr() string { return p.addrs[p.main] }

// AddrOf is the host:port of the listener called name, and whether there is one.
func (p *Process) AddrOf(name string) (string, bool) {
	a, ok := p.addrs[name]
	return a, ok
}

// Await waits for an event named name (any name if "") that match accepts (any if nil), among
// those seen so far and those to come, and returns it. It fails when ctx ends or the emulator
// exits first.
func (p *Process) Await(ctx context.Context, name string, match func(emulator.Event) bool) (emulator.Event, error) {
	for seen := 0; ; {
		p.mu.Lock()
		for ; seen < len(p.events); seen++ {
			if ev := p.events[seen]; (name == "" || ev.Name == name) && (match == nil || match(ev)) {
				p.mu.Unlock()
				return ev, nil
			}
		}
		changed, exited := p.changed, p.exited
		p.mu.Unlock()
		if exited {
			return emulator.Event{}, fmt.Errorf("emulator exited before event %q", name)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return emulator.Event{}, fmt.Errorf("no event %q: %w", name, context.Cause(ctx))
		}
	}
}

// Count returns how many events so far are named name and match accepts (any if nil).
func (p *Process) Count(name string, match func(emulator.Event) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ev := range p.events {
		if ev.Name == name && (match == nil || match(ev)) {
			n++
		}
	}
	return n
}

// Events returns the events so far named name that match accepts (any if nil), in order.
func (p *Process) Events(name string, match func(emulator.Event) bool) []emulator.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []emulator.Event
	for _, ev := range p.events {
		if ev.Name == name && (match == nil || match(ev)) {
			out = append(out, ev)
		}
	}
	return out
}

// EndedAt is when the emulator's exit was seen, in this process's clock; zero while it runs.
func (p *Process) EndedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endedAt
}

// Wait waits until the emulator has exited, and returns its exit code; it fails when ctx ends
// first.
func (p *Process) Wait(ctx context.Context) (int, error) {
	for {
		p.mu.Lock()
		changed, exited, code := p.changed, p.exited, p.code
		p.mu.Unlock()
		if exited {
			return code, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return -1, fmt.Errorf("emulator still running: %w", context.Cause(ctx))
		}
	}
}

// Kill kills the emulator; Wait then returns.
func (p *Process) Kill() { _ = p.cmd.Process.Kill() }
