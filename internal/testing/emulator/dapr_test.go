package emulator

import (
	"context"
	"testing"
	"time"
)

const (
	daprNotReady         = `{"errorCode":"ERR_HEALTH_NOT_READY","message":"dapr is not ready: [runtime]"}`
	daprOutboundNotReady = `{"errorCode":"ERR_OUTBOUND_HEALTH_NOT_READY","message":"dapr outbound is not ready"}`
	daprFallback         = "404 page not found\n"
	daprBadToken         = "invalid api token\n"
)

// TestDaprHealth checks ref §7.1 on both listeners.
func TestDaprHealth(t *testing.T) {
	var rows []endpoint
	for _, l := range []string{"http", "public"} {
		rows = append(rows,
			endpoint{state: "ready", listener: l, method: "GET", target: "/v1.0/healthz", status: 204},
			endpoint{state: "initializing", listener: l, method: "GET", target: "/v1.0/healthz", status: 500, body: daprNotReady, ctype: jsonType},
			endpoint{state: "starting", listener: l, method: "GET", target: "/v1.0/healthz", status: 500, body: daprNotReady, ctype: jsonType},
			endpoint{state: "ready", listener: l, method: "GET", target: "/v1.0/healthz/outbound", status: 204},
			endpoint{state: "initializing", listener: l, method: "GET", target: "/v1.0/healthz/outbound", status: 500, body: daprOutboundNotReady, ctype: jsonType},
			endpoint{state: "ready", opts: Options{AppChannel: true}, listener: l, method: "GET", target: "/v1.0/healthz", status: 500, body: daprNotReady, ctype: jsonType},
			endpoint{state: "ready", opts: Options{AppChannel: true}, listener: l, method: "GET", target: "/v1.0/healthz/outbound", status: 204},
			endpoint{state: "ready", listener: l, method: "POST", target: "/v1.0/healthz", status: 404, body: daprFallback, ctype: goTextType},
			endpoint{state: "ready", listener: l, method: "GET", target: "/v1.0/nope", status: 404, body: daprFallback, ctype: goTextType},
		)
	}
	checkEndpoints(t, "dapr", rows)
}

// TestDaprShutdownEndpoint checks ref §7.2 and the API token of §7.1.
func TestDaprShutdownEndpoint(t *testing.T) {
	token := Options{APIToken: "s3cret"}
	good, bad := []string{"dapr-api-token", "s3cret"}, []string{"dapr-api-token", "guess"}
	checkEndpoints(t, "dapr", []endpoint{
		{state: "ready", listener: "http", method: "POST", target: "/v1.0/shutdown", status: 204, quits: true},
		{state: "starting", listener: "http", method: "POST", target: "/v1.0/shutdown", status: 204, quits: true},
		{state: "ready", listener: "http", method: "GET", target: "/v1.0/shutdown", status: 404, body: daprFallback, ctype: goTextType},
		{state: "ready", listener: "http", method: "PUT", target: "/v1.0/shutdown", status: 404, body: daprFallback, ctype: goTextType},
		{state: "ready", listener: "public", method: "POST", target: "/v1.0/shutdown", status: 404, body: daprFallback, ctype: goTextType},
		{state: "ready", opts: token, listener: "http", method: "POST", target: "/v1.0/shutdown", status: 401, body: daprBadToken, ctype: goTextType},
		{state: "ready", opts: token, listener: "http", method: "POST", target: "/v1.0/shutdown", header: bad, status: 401, body: daprBadToken, ctype: goTextType},
		{state: "ready", opts: token, listener: "http", method: "POST", target: "/v1.0/shutdown", header: good, status: 204, quits: true},
		{state: "ready", opts: token, listener: "http", method: "GET", target: "/v1.0/shutdown", status: 401, body: daprBadToken, ctype: goTextType},
		{state: "ready", opts: token, listener: "http", method: "GET", target: "/v1.0/healthz", status: 204},
		{state: "initializing", opts: token, listener: "public", method: "GET", target: "/v1.0/healthz/outbound", status: 500, body: daprOutboundNotReady, ctype: jsonType},
		{state: "ready", opts: token, listener: "public", method: "HEAD", target: "/v1.0/healthz", status: 401, ctype: goTextType},
		{state: "ready", opts: token, listener: "public", method: "POST", target: "/v1.0/healthz", status: 401, body: daprBadToken, ctype: goTextType},
		{state: "ready", opts: token, listener: "public", method: "POST", target: "/v1.0/healthz", header: good, status: 404, body: daprFallback, ctype: goTextType},
	})
}

// TestDaprAppChannelDeadlock: with an app channel the runtime target never
// gets ready, so /v1.0/healthz answers 500 for ever while
// /v1.0/healthz/outbound turns 204 with the state clock (ref §7.1).
func TestDaprAppChannelDeadlock(t *testing.T) {
	sc, rec := startProfile(t, "dapr", Options{AppChannel: true, ReadyAfter: 200 * time.Millisecond})
	rec.wait(t, "state", "state", daprWaitingForApp)
	for _, l := range []string{"http", "public"} {
		for i := 0; i < 3; i++ {
			if res := send(t, "GET", "http://"+sc.AddrOf(l)+"/v1.0/healthz/outbound"); res.status != 204 {
				t.Errorf("%s outbound = %d %q", l, res.status, res.body)
			}
			if res := send(t, "GET", "http://"+sc.AddrOf(l)+"/v1.0/healthz"); res.status != 500 || res.body != daprNotReady {
				t.Errorf("%s healthz = %d %q", l, res.status, res.body)
			}
		}
	}
	if rec.has("state", "state", "READY") {
		t.Errorf("the runtime got ready:\n%s", rec.text())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := sc.WaitState(ctx, stateReady); err == nil {
		t.Error("WaitState READY succeeded")
	}
}

// TestDaprForceShutdownIgnoresKnobs: the force header exits 1 after
// 100 ms whatever --exit-code and --exit-delay say (ref §7.2).
func TestDaprForceShutdownIgnoresKnobs(t *testing.T) {
	sc, rec := startProfile(t, "dapr", Options{ExitCode: 3, ExitDelay: time.Hour})
	res := send(t, "POST", "http://"+sc.Addr()+"/v1.0/shutdown", "dapr-force-shutdown", "true")
	if res.status != 204 {
		t.Errorf("forced shutdown = %d", res.status)
	}
	waitDone(t, sc)
	if sc.ExitCode() != 1 || !rec.has("exit", "code", "1") {
		t.Errorf("exit code %d; events:\n%s", sc.ExitCode(), rec.text())
	}
}
