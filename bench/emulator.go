package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	emu "github.com/sidesync/sidesync/internal/emulator"
)

// emulator is "sidesync emulate envoy" running as a process, with its events.
type emulator struct {
	cmd  *exec.Cmd
	addr string
	port string

	mu       sync.Mutex
	events   []event
	done     chan struct{}
	exitedAt time.Time // when Wait returned, in this process's clock
}

// event is one line the emulator printed: name, fields, and its time.
type event = emu.Event

// startEmulator starts an emulated Envoy with the given knobs and waits for its address.
func (s *suite) startEmulator(knobs ...string) (*emulator, error) {
	e := &emulator{done: make(chan struct{})}
	e.cmd = exec.Command(s.binary, append([]string{"emulate", "envoy"}, knobs...)...)
	out, err := e.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go e.read(bufio.NewScanner(out), addr)
	select {
	case a := <-addr:
		e.addr = a
		_, e.port, _ = strings.Cut(a, ":")
		return e, nil
	case <-time.After(10 * time.Second):
		e.kill()
		return nil, fmt.Errorf("the emulator did not report its address")
	}
}

// read collects events until the emulator exits.
func (e *emulator) read(sc *bufio.Scanner, addr chan<- string) {
	for sc.Scan() {
		ev, err := emu.ParseEvent(sc.Text())
		if err != nil {
			continue
		}
		e.mu.Lock()
		e.events = append(e.events, ev)
		e.mu.Unlock()
		if ev.Name == "address" {
			select {
			case addr <- ev.Get("addr"):
			default:
			}
		}
	}
	e.cmd.Wait()
	e.mu.Lock()
	e.exitedAt = time.Now()
	e.mu.Unlock()
	close(e.done)
}

// find returns the first event named name whose fields match, if any.
func (e *emulator) find(name string, match func(map[string]string) bool) (event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.Name == name && (match == nil || match(ev.Fields)) {
			return ev, true
		}
	}
	return event{}, false
}

// all returns the events named name whose fields match.
func (e *emulator) all(name string, match func(map[string]string) bool) []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []event
	for _, ev := range e.events {
		if ev.Name == name && (match == nil || match(ev.Fields)) {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits for the emulator to exit (it does after a quit), killing it after limit.
func (e *emulator) wait(limit time.Duration) (time.Time, error) {
	select {
	case <-e.done:
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.exitedAt, nil
	case <-time.After(limit):
		e.kill()
		return time.Time{}, fmt.Errorf("the emulator did not exit within %v", limit)
	}
}

func (e *emulator) kill() {
	e.cmd.Process.Kill()
	<-e.done
}

func isReadyProbe(f map[string]string) bool { return f["path"] == "/ready" }
