package main

import (
	"context"
	"fmt"
	"net"
	"time"

	emu "github.com/sidesync/sidesync/internal/testing/emulator"
	"github.com/sidesync/sidesync/internal/testing/emuproc"
)

// emulator is "sidesync-emulator emulate envoy" running as a process, with its events: the
// emulator process helper that the tests and the demo use too.
type emulator struct {
	p    *emuproc.Process
	addr string
	port string
}

// event is one line the emulator printed: name, fields, and its time.
type event = emu.Event

// startEmulator starts an emulated Envoy with the given knobs and waits for its address.
func (s *suite) startEmulator(knobs ...string) (*emulator, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv := append(append(append([]string(nil), s.emu...), "envoy"), knobs...)
	p, err := emuproc.Start(ctx, argv, emuproc.Options{})
	if err != nil {
		return nil, fmt.Errorf("the emulator: %w", err)
	}
	e := &emulator{p: p, addr: p.Addr()}
	_, e.port, _ = net.SplitHostPort(e.addr)
	return e, nil
}

// find returns the first event named name whose fields match, if any.
func (e *emulator) find(name string, match func(map[string]string) bool) (event, bool) {
	all := e.all(name, match)
	if len(all) == 0 {
		return event{}, false
	}
	return all[0], true
}

// all returns the events named name whose fields match.
func (e *emulator) all(name string, match func(map[string]string) bool) []event {
	return e.p.Events(name, func(ev event) bool { return match == nil || match(ev.Fields) })
}

// wait waits for the emulator to exit (it does after a quit), killing it after limit, and
// returns when its exit was seen.
func (e *emulator) wait(limit time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if _, err := e.p.Wait(ctx); err != nil {
		e.kill()
		return time.Time{}, fmt.Errorf("the emulator did not exit within %v", limit)
	}
	return e.p.EndedAt(), nil
}

// kill kills the emulator and waits until it is gone.
func (e *emulator) kill() {
	e.p.Kill()
	e.p.Wait(context.Background())
}

func isReadyProbe(f map[string]string) bool { return f["path"] == "/ready" }
