package emulator

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestConsulEndpoints checks ref §5.2 and §5.3 on both listeners.
func TestConsulEndpoints(t *testing.T) {
	const admin, lifecycle = "admin", "lifecycle"
	checkEndpoints(t, "consul", []endpoint{
		{state: "ready", listener: admin, method: "GET", target: "/ready", status: 200, body: "LIVE\n", ctype: textType},
		{state: "initializing", listener: admin, method: "GET", target: "/ready", status: 503, body: "INITIALIZING\n", ctype: textType},
		{state: "ready", listener: admin, method: "POST", target: "/quitquitquit", status: 200, body: "OK\n", ctype: textType, quits: true},
		{state: "ready", listener: lifecycle, method: "GET", target: "/graceful_shutdown", status: 200, quits: true},
		{state: "ready", listener: lifecycle, method: "POST", target: "/graceful_shutdown", status: 200, quits: true},
		{state: "starting", listener: lifecycle, method: "PUT", target: "/graceful_shutdown", status: 200, quits: true},
		{state: "ready", listener: lifecycle, method: "GET", target: "/graceful_startup", status: 200},
		{state: "initializing", listener: lifecycle, method: "POST", target: "/graceful_startup", status: 200},
		{state: "ready", listener: lifecycle, method: "GET", target: "/ready", status: 404},
		{state: "ready", listener: lifecycle, method: "POST", target: "/quitquitquit", status: 404},
	})
}

// TestConsulGracefulShutdownGrace: /graceful_shutdown answers at once;
// Envoy keeps serving through the grace period, then the process exits
// (ref §5.3).
func TestConsulGracefulShutdownGrace(t *testing.T) {
	const grace = time.Second
	sc, rec := startProfile(t, "consul", Options{ShutdownGracePeriod: grace, ExitCode: 9})
	start := time.Now()
	if res := send(t, "POST", "http://"+sc.AddrOf("lifecycle")+"/graceful_shutdown"); res.status != 200 || res.body != "" {
		t.Errorf("/graceful_shutdown = %d %q", res.status, res.body)
	}
	if d := time.Since(start); d >= grace {
		t.Errorf("answered after %v, want at once", d)
	}
	if res := send(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 200 {
		t.Errorf("Envoy /ready during the grace period = %d", res.status)
	}
	waitDone(t, sc)
	if d := rec.wait(t, "exit", "code", "9").Time.Sub(rec.wait(t, "quit").Time); d < grace {
		t.Errorf("exit %v after quit, want >= %v", d, grace)
	}
}

// TestConsulGracefulStartupWaits: with a grace period /graceful_startup
// answers only once Envoy is LIVE (ref §5.2).
func TestConsulGracefulStartupWaits(t *testing.T) {
	sc, rec := startProfile(t, "consul", Options{ReadyAfter: 300 * time.Millisecond, StartupGracePeriod: guard})
	res := send(t, "GET", "http://"+sc.AddrOf("lifecycle")+"/graceful_startup")
	if res.status != 200 || res.body != "" {
		t.Errorf("/graceful_startup = %d %q", res.status, res.body)
	}
	if !rec.has("state", "state", "LIVE") {
		t.Errorf("answered before LIVE; events:\n%s", rec.text())
	}
}

// TestConsulGracefulStartupTimesOut: when Envoy never gets ready the
// answer is still 200, once the grace period is over (ref §5.2).
func TestConsulGracefulStartupTimesOut(t *testing.T) {
	const grace = 200 * time.Millisecond
	sc, _ := startProfile(t, "consul", Options{NeverReady: true, StartupGracePeriod: grace})
	start := time.Now()
	res := send(t, "GET", "http://"+sc.AddrOf("lifecycle")+"/graceful_startup")
	if d := time.Since(start); res.status != 200 || d < grace {
		t.Errorf("/graceful_startup = %d after %v, want 200 after >= %v", res.status, d, grace)
	}
	if sc.State() != "INITIALIZING" {
		t.Errorf("state %s", sc.State())
	}
}

// TestConsulGracefulStartupDoesNotBlockClose: a /graceful_startup that
// waits is ended by Close, which must not wait for the grace period.
func TestConsulGracefulStartupDoesNotBlockClose(t *testing.T) {
	sc, _ := startProfile(t, "consul", Options{NeverReady: true, StartupGracePeriod: time.Hour})
	c, err := net.Dial("tcp", sc.AddrOf("lifecycle"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	io.WriteString(c, "GET /graceful_startup HTTP/1.1\r\nHost: x\r\n\r\n")
	closed := make(chan struct{})
	go func() { sc.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(guard):
		t.Fatal("Close waited for /graceful_startup")
	}
}
