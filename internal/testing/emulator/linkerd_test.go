package emulator

import "testing"

// TestLinkerdEndpoints checks ref §4.2; the 403 for a peer that is not
// loopback is in TestLinkerdRemotePeer.
func TestLinkerdEndpoints(t *testing.T) {
	const admin = "admin"
	disabled := Options{ShutdownDisabled: true}
	checkEndpoints(t, "linkerd", []endpoint{
		{state: "ready", listener: admin, method: "GET", target: "/ready", status: 200, body: "ready\n", ctype: "text/plain"},
		{state: "ready", listener: admin, method: "POST", target: "/ready", status: 200, body: "ready\n", ctype: "text/plain"},
		{state: "initializing", listener: admin, method: "GET", target: "/ready", status: 503, body: "not ready\n"},
		{state: "starting", listener: admin, method: "GET", target: "/ready", status: 503, body: "not ready\n"},
		{state: "ready", listener: admin, method: "GET", target: "/live", status: 200, body: "live\n", ctype: "text/plain"},
		{state: "starting", listener: admin, method: "DELETE", target: "/live", status: 200, body: "live\n", ctype: "text/plain"},
		{state: "ready", listener: admin, method: "GET", target: "/shutdown", status: 405},
		{state: "ready", listener: admin, method: "PUT", target: "/shutdown", status: 405},
		{state: "ready", opts: disabled, listener: admin, method: "GET", target: "/shutdown", status: 405},
		{state: "ready", listener: admin, method: "POST", target: "/shutdown", status: 200, body: "shutdown\n", ctype: "text/plain", quits: true},
		{state: "starting", listener: admin, method: "POST", target: "/shutdown", status: 200, body: "shutdown\n", ctype: "text/plain", quits: true},
		{state: "ready", opts: disabled, listener: admin, method: "POST", target: "/shutdown", status: 404,
			body: "shutdown endpoint is not enabled\n", ctype: "text/plain"},
		{state: "ready", listener: admin, method: "GET", target: "/nope", status: 404},
		{state: "ready", listener: admin, method: "GET", target: "/ready/", status: 404},
	})
}

// TestLinkerdDisabledStaysUp: a refused /shutdown leaves the proxy up and
// ready.
func TestLinkerdDisabledStaysUp(t *testing.T) {
	sc, rec := startProfile(t, "linkerd", Options{ShutdownDisabled: true})
	base := "http://" + sc.Addr()
	for i := 0; i < 2; i++ {
		if res := send(t, "POST", base+"/shutdown"); res.status != 404 {
			t.Errorf("POST /shutdown = %d", res.status)
		}
	}
	if res := send(t, "GET", base+"/ready"); res.status != 200 || rec.has("quit") {
		t.Errorf("after refused shutdowns /ready = %d; events:\n%s", res.status, rec.text())
	}
	select {
	case <-sc.Done():
		t.Error("stopped")
	default:
	}
}
