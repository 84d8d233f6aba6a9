package emulator

import (
	"testing"
	"time"
)

// TestIstioEndpoints checks ref §3.2 and §3.3 on the three listeners; the
// 403 for a peer that is not loopback is in TestIstioRemotePeer.
func TestIstioEndpoints(t *testing.T) {
	const (
		agent, envoyStatus, admin = "status", "envoy-status", "admin"
		notAllowed                = "Method Not Allowed\n"
	)
	checkEndpoints(t, "istio", []endpoint{
		{state: "ready", listener: agent, method: "GET", target: "/healthz/ready", status: 200},
		{state: "ready", listener: agent, method: "POST", target: "/healthz/ready", status: 200},
		{state: "ready", listener: agent, method: "HEAD", target: "/healthz/ready", status: 200},
		{state: "initializing", listener: agent, method: "GET", target: "/healthz/ready", status: 503},
		{state: "starting", listener: agent, method: "GET", target: "/healthz/ready", status: 503},
		{state: "ready", listener: envoyStatus, method: "GET", target: "/healthz/ready", status: 200},
		{state: "initializing", listener: envoyStatus, method: "GET", target: "/healthz/ready", status: 503},
		{state: "starting", listener: envoyStatus, method: "PUT", target: "/healthz/ready", status: 503},
		{state: "ready", listener: envoyStatus, method: "POST", target: "/quitquitquit", status: 404},
		{state: "ready", listener: agent, method: "GET", target: "/quitquitquit", status: 405, body: notAllowed, ctype: goTextType},
		{state: "ready", listener: agent, method: "PUT", target: "/quitquitquit", status: 405, body: notAllowed, ctype: goTextType},
		{state: "ready", listener: agent, method: "POST", target: "/quitquitquit", status: 200, body: "OK", ctype: goTextType, quits: true},
		{state: "initializing", listener: agent, method: "POST", target: "/quitquitquit", status: 200, body: "OK", ctype: goTextType, quits: true},
		{state: "ready", listener: agent, method: "GET", target: "/drain", status: 405, body: notAllowed, ctype: goTextType},
		{state: "ready", listener: agent, method: "POST", target: "/drain", status: 200, body: "OK", ctype: goTextType},
		{state: "ready", listener: agent, method: "GET", target: "/ready", status: 404},
		{state: "ready", listener: admin, method: "GET", target: "/ready", status: 200, body: "LIVE\n", ctype: textType},
		{state: "initializing", listener: admin, method: "GET", target: "/ready", status: 503, body: "INITIALIZING\n", ctype: textType},
		{state: "ready", listener: admin, method: "GET", target: "/quitquitquit", status: 405, body: "Method GET not allowed, POST required.", ctype: textType},
		{state: "ready", listener: admin, method: "POST", target: "/quitquitquit", status: 200, body: "OK\n", ctype: textType, quits: true},
	})
}

// TestIstioRefusalHeaders: the agent's refusals come from http.Error,
// which also sets nosniff.
func TestIstioRefusalHeaders(t *testing.T) {
	sc, _ := startProfile(t, "istio", Options{})
	res := send(t, "GET", "http://"+sc.Addr()+"/quitquitquit")
	if got := res.header.Get("X-Content-Type-Options"); res.status != 405 || got != "nosniff" {
		t.Errorf("GET /quitquitquit = %d, x-content-type-options %q", res.status, got)
	}
}

// TestIstioDrainKeepsReadiness: /drain answers OK and neither quits nor
// changes readiness or Envoy's state (ref §3.3, §1.6).
func TestIstioDrainKeepsReadiness(t *testing.T) {
	sc, rec := startProfile(t, "istio", Options{})
	send(t, "POST", "http://"+sc.Addr()+"/drain")
	if res := send(t, "GET", "http://"+sc.AddrOf("envoy-status")+"/healthz/ready"); res.status != 200 {
		t.Errorf("readiness after /drain = %d", res.status)
	}
	if res := send(t, "GET", "http://"+sc.AddrOf("admin")+"/ready"); res.body != "LIVE\n" {
		t.Errorf("Envoy /ready after /drain = %q", res.body)
	}
	if rec.has("quit") {
		t.Error("/drain quit")
	}
}

// TestIstioReadinessFollowsClock: /healthz/ready turns 200 with the state
// clock, on both listeners, after the LIVE state event.
func TestIstioReadinessFollowsClock(t *testing.T) {
	sc, rec := startProfile(t, "istio", Options{ReadyAfter: 200 * time.Millisecond})
	rec.wait(t, "state", "state", "LIVE")
	for _, l := range []string{"status", "envoy-status"} {
		if res := send(t, "GET", "http://"+sc.AddrOf(l)+"/healthz/ready"); res.status != 200 || res.body != "" {
			t.Errorf("%s /healthz/ready once LIVE = %d %q", l, res.status, res.body)
		}
	}
}
