package main

import (
	"net"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/emulator"
)

// emu is an emulated Envoy ("sidesync emulate envoy") running as a real process, with the event
// lines it printed.
type emu struct {
	t     *testing.T
	cmd   *exec.Cmd
	addr  string            // the main listener's address
	addrs map[string]string // every listener's address by name

	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced whenever an event arrives or the emulator exits
	exited  bool
	code    int
}

type event struct {
	name   string
	fields map[string]string
}

// startEmu starts an emulated Envoy with the given knobs and waits until it reports its address.
func startEmu(t *testing.T, knobs ...string) *emu {
	t.Helper()
	return startProfile(t, "envoy", knobs...)
}

// startProfile starts the emulated sidecar of a profile and waits until it reports the
// addresses of its listeners.
func startProfile(t *testing.T, profile string, knobs ...string) *emu {
	t.Helper()
	e := &emu{t: t, changed: make(chan struct{}), addrs: make(map[string]string)}
	e.cmd = exec.Command(bin.sidesync, append([]string{"emulate", profile}, knobs...)...)
	e.cmd.Env = testEnv(nil)
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.cmd.Process.Kill(); e.waitExit() })
	c := lines(stdout)
	go func() {
		for l := range c {
			ev, err := emulator.ParseEvent(l)
			if err != nil {
				continue
			}
			e.mu.Lock()
			e.events = append(e.events, event{ev.Name, ev.Fields})
			e.notify()
			e.mu.Unlock()
		}
		err := e.cmd.Wait()
		e.mu.Lock()
		e.exited, e.code = true, e.cmd.ProcessState.ExitCode()
		_ = err
		e.notify()
		e.mu.Unlock()
	}()
	e.addr = e.await("address", anyEvent)["addr"]
	e.awaitOther("address") // every address line comes before any other event
	e.mu.Lock()
	for _, ev := range e.events {
		if ev.name == "address" {
			e.addrs[ev.fields["name"]] = ev.fields["addr"]
		}
	}
	e.mu.Unlock()
	return e
}

// port returns the port of the named listener.
func (e *emu) port(listener string) string {
	e.t.Helper()
	addr, ok := e.addrs[listener]
	if !ok {
		e.t.Fatalf("emulator has no listener %q (has %v)", listener, e.addrs)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		e.t.Fatalf("listener %q address %q: %v", listener, addr, err)
	}
	return port
}

func (e *emu) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// admin is the emulator's admin base URL.
func (e *emu) admin() string { return "http://" + e.addr }

// await waits for an event named name whose fields satisfy match, and returns its fields.
func (e *emu) await(name string, match func(map[string]string) bool) map[string]string {
	e.t.Helper()
	deadline := time.After(guard)
	for seen := 0; ; {
		e.mu.Lock()
		for ; seen < len(e.events); seen++ {
			if ev := e.events[seen]; ev.name == name && match(ev.fields) {
				e.mu.Unlock()
				return ev.fields
			}
		}
		changed, exited := e.changed, e.exited
		e.mu.Unlock()
		if exited {
			e.t.Fatalf("emulator exited before event %q", name)
		}
		select {
		case <-changed:
		case <-deadline:
			e.t.Fatalf("no emulator event %q within %v", name, guard)
		}
	}
}

// awaitOther waits for the first event not named name.
func (e *emu) awaitOther(name string) {
	e.t.Helper()
	deadline := time.After(guard)
	for {
		e.mu.Lock()
		changed := e.changed
		for _, ev := range e.events {
			if ev.name != name {
				e.mu.Unlock()
				return
			}
		}
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			e.t.Fatalf("no emulator event after %q within %v", name, guard)
		}
	}
}

// count returns how many events so far are named name and satisfy match.
func (e *emu) count(name string, match func(map[string]string) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.events {
		if ev.name == name && match(ev.fields) {
			n++
		}
	}
	return n
}

// waitExit waits until the emulator process has exited and returns its exit code.
func (e *emu) waitExit() int {
	deadline := time.After(guard)
	for {
		e.mu.Lock()
		changed, exited, code := e.changed, e.exited, e.code
		e.mu.Unlock()
		if exited {
			return code
		}
		select {
		case <-changed:
		case <-deadline:
			e.t.Errorf("emulator still running after %v", guard)
			return -1
		}
	}
}

// quits returns how many quit requests the emulator accepted.
func (e *emu) quits() int { return e.count("quit", anyEvent) }

// requests returns how many requests for path the emulator got.
func (e *emu) requests(path string) int {
	return e.count("request", func(f map[string]string) bool { return f["path"] == path })
}

func anyEvent(map[string]string) bool { return true }
