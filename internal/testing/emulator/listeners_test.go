package emulator

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestListenerEvents: every profile writes one address event per
// listener, main first and before any other line, then one listening
// event per listener; the addresses agree with AddrOf and differ.
func TestListenerEvents(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			sc, rec := startProfile(t, p.Name, Options{})
			for _, l := range p.Listeners {
				rec.wait(t, "listening", "name", l.Name, "addr", sc.AddrOf(l.Name))
			}
			evs, _ := rec.snapshot()
			seen := map[string]bool{}
			for i, l := range p.Listeners {
				addr := sc.AddrOf(l.Name)
				if !matches(evs[i], "address", "name", l.Name, "addr", addr) || seen[addr] {
					t.Errorf("event %d = %v, want address name=%s addr=%s (unique)", i, evs[i], l.Name, addr)
				}
				seen[addr] = true
			}
			if sc.Addr() != sc.AddrOf(p.Listeners[0].Name) || sc.AddrOf("nope") != "" {
				t.Errorf("Addr %q, main %q", sc.Addr(), sc.AddrOf(p.Listeners[0].Name))
			}
			if n := len(eventsNamed(rec, "address")); n != len(p.Listeners) {
				t.Errorf("%d address events for %d listeners", n, len(p.Listeners))
			}
			checkEventLines(t, rec)
		})
	}
}

// TestListenerRequestEvents: request events name the listener.
func TestListenerRequestEvents(t *testing.T) {
	sc, rec := startProfile(t, "istio", Options{})
	send(t, "GET", "http://"+sc.AddrOf("envoy-status")+"/healthz/ready")
	rec.wait(t, "request", "path", "/healthz/ready", "status", "200", "listener", "envoy-status")
	send(t, "GET", "http://"+sc.AddrOf("admin")+"/ready")
	rec.wait(t, "request", "path", "/ready", "status", "200", "listener", "admin")
}

// TestListenerAddrs: Options.Addrs places a listener by name and wins over
// Listen for the main one; an unknown name fails Start with exit code 1.
func TestListenerAddrs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 (%v): no second loopback address to tell listeners apart", err)
	}
	ln.Close()
	sc, _ := startProfile(t, "istio", Options{
		Listen: "127.0.0.1:0",
		Addrs:  map[string]string{"envoy-status": "127.0.0.2:0", "status": "127.0.0.2:0"},
	})
	for name, host := range map[string]string{"status": "127.0.0.2", "envoy-status": "127.0.0.2", "admin": "127.0.0.1"} {
		if h, _, _ := net.SplitHostPort(sc.AddrOf(name)); h != host {
			t.Errorf("%s on %s, want host %s", name, sc.AddrOf(name), host)
		}
	}
	if res := send(t, "GET", "http://"+sc.AddrOf("envoy-status")+"/healthz/ready"); res.status != 200 {
		t.Errorf("envoy-status on 127.0.0.2 = %d", res.status)
	}
}

func TestListenerUnknownName(t *testing.T) {
	rec := newRecorder()
	sc := New(Envoy(), Options{Addrs: map[string]string{"status": "127.0.0.1:0"}, Events: rec})
	err := sc.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "-listen") || !strings.Contains(err.Error(), `"status"`) {
		t.Errorf("Start = %v, want an error naming -listen and the listener", err)
	}
	waitDone(t, sc)
	if sc.ExitCode() != 1 || rec.has("address") {
		t.Errorf("exit code %d; events:\n%s", sc.ExitCode(), rec.text())
	}
}

// TestListenerFailureStopsAll: when one listener cannot listen the sidecar
// writes no address at all and exits 1.
func TestListenerFailureStopsAll(t *testing.T) {
	rec := newRecorder()
	sc := New(mustProfile(t, "dapr"), Options{Addrs: map[string]string{"public": "127.0.0.1:99999"}, Events: rec})
	if err := sc.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "public") {
		t.Errorf("Start = %v, want an error naming the listener", err)
	}
	waitDone(t, sc)
	if evs, _ := rec.snapshot(); len(evs) != 1 || !matches(evs[0], "exit", "code", "1") {
		t.Errorf("events:\n%s", rec.text())
	}
}

// TestListenerLateListen: --listen-after holds back every listener; the
// machine-speed retry is the one of TestSidecarLateListen.
func TestListenerLateListen(t *testing.T) {
	p := mustProfile(t, "istio")
	for delay := 200 * time.Millisecond; ; delay *= 2 {
		sc, rec := startProfile(t, p.Name, Options{ListenAfter: delay})
		var wasRefused []bool
		for _, l := range p.Listeners {
			wasRefused = append(wasRefused, refused(sc.AddrOf(l.Name)))
		}
		if rec.has("listening") {
			if delay > 10*time.Second {
				t.Fatalf("the machine never checked within a %v listen delay", delay)
			}
			sc.Close()
			continue
		}
		for i, l := range p.Listeners {
			if !wasRefused[i] {
				t.Errorf("%s accepted before the listen delay", l.Name)
			}
			addr := rec.wait(t, "address", "name", l.Name)
			if listening := rec.wait(t, "listening", "name", l.Name, "addr", sc.AddrOf(l.Name)); listening.Time.Sub(addr.Time) < delay {
				t.Errorf("%s listening too early:\n%s", l.Name, rec.text())
			}
		}
		if res := send(t, "GET", "http://"+sc.AddrOf("envoy-status")+"/healthz/ready"); res.status != 200 {
			t.Errorf("readiness after listening = %d", res.status)
		}
		return
	}
}

// TestMainListenFlag: --listen NAME=ADDR places a named listener, a plain
// --listen ADDR the main one, and an unknown name is a usage error.
func TestMainListenFlag(t *testing.T) {
	p := mustProfile(t, "istio")
	opts, _, ok := parseFlags(p, []string{"--listen", "127.0.0.1:1", "--listen", "admin=127.0.0.1:2", "--listen", "admin=127.0.0.1:3"}, new(bytes.Buffer))
	if !ok || opts.Listen != "127.0.0.1:1" || len(opts.Addrs) != 1 || opts.Addrs["admin"] != "127.0.0.1:3" {
		t.Errorf("parseFlags = %+v, %v", opts, ok)
	}
	var stderr bytes.Buffer
	if _, code, ok := parseFlags(p, []string{"--listen", "lifecycle=127.0.0.1:0"}, &stderr); ok || code != 2 ||
		!strings.Contains(stderr.String(), "-listen") || !strings.Contains(stderr.String(), `no listener "lifecycle"`) {
		t.Errorf("unknown listener: code %d, stderr %q", code, stderr.String())
	}
}

// TestMainMultiListener runs the istio program: its events, and a quit on
// the agent's listener ends it with the exit code.
func TestMainMultiListener(t *testing.T) {
	code, rec, addr := startMainProfile(t, "istio", "--exit-code", "3", "--listen", "admin=127.0.0.1:0")
	for _, name := range []string{"envoy-status", "admin"} {
		rec.wait(t, "listening", "name", name)
	}
	evs, _ := rec.snapshot()
	if !matches(evs[0], "address", "name", "status", "addr", addr) ||
		!matches(evs[1], "address", "name", "envoy-status") || !matches(evs[2], "address", "name", "admin") {
		t.Errorf("first events are not the addresses, main first:\n%s", rec.text())
	}
	if res := send(t, "POST", "http://"+addr+"/quitquitquit"); res.status != 200 || res.body != "OK" {
		t.Errorf("quit = %d %q", res.status, res.body)
	}
	if c := waitCode(t, code); c != 3 {
		t.Errorf("Main returned %d, want 3", c)
	}
	checkEventLines(t, rec)
}
