package main

import (
	"context"
	"net"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/emulator"
	"github.com/sidesync/sidesync/internal/testing/emuproc"
)

// emu is an emulated sidecar ("sidesync-emulator emulate PROFILE", this test binary under that
// name) running as a real process, with the event lines it printed.
type emu struct {
	t *testing.T
	*emuproc.Process
	addr string // the main listener's address
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
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	argv := append([]string{bin.emulator, "emulate", profile}, knobs...)
	p, err := emuproc.Start(ctx, argv, emuproc.Options{Env: testEnv(nil)})
	if err != nil {
		t.Fatalf("starting the emulated %s: %v", profile, err)
	}
	e := &emu{t: t, Process: p, addr: p.Addr()}
	t.Cleanup(func() { p.Kill(); e.waitExit() })
	return e
}

// port returns the port of the named listener.
func (e *emu) port(listener string) string {
	e.t.Helper()
	addr, ok := e.AddrOf(listener)
	if !ok {
		e.t.Fatalf("emulator has no listener %q", listener)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		e.t.Fatalf("listener %q address %q: %v", listener, addr, err)
	}
	return port
}

// admin is the emulator's admin base URL.
func (e *emu) admin() string { return "http://" + e.addr }

// await waits for an event named name whose fields satisfy match, and returns its fields.
func (e *emu) await(name string, match func(map[string]string) bool) map[string]string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	ev, err := e.Await(ctx, name, func(ev emulator.Event) bool { return match(ev.Fields) })
	if err != nil {
		e.t.Fatal(err)
	}
	return ev.Fields
}

// count returns how many events so far are named name and satisfy match.
func (e *emu) count(name string, match func(map[string]string) bool) int {
	return e.Count(name, func(ev emulator.Event) bool { return match(ev.Fields) })
}

// waitExit waits until the emulator process has exited and returns its exit code.
func (e *emu) waitExit() int {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	code, err := e.Wait(ctx)
	if err != nil {
		e.t.Error(err)
	}
	return code
}

// quits returns how many quit requests the emulator accepted.
func (e *emu) quits() int { return e.count("quit", anyEvent) }

// requests returns how many requests for path the emulator got.
func (e *emu) requests(path string) int {
	return e.count("request", func(f map[string]string) bool { return f["path"] == path })
}

func anyEvent(map[string]string) bool { return true }
