package emulator

import (
	"flag"
	"slices"
	"time"
)

// Dapr listener names and paths (ref §7).
const (
	daprHTTP          = "http"
	daprPublic        = "public"
	daprHealthz       = "/v1.0/healthz"
	daprOutbound      = "/v1.0/healthz/outbound"
	daprShutdown      = "/v1.0/shutdown"
	daprForceExitCode = 1
	// daprForceExitDelay is forceExitDelay in pkg/api/universal (ref §7.2).
	daprForceExitDelay = 100 * time.Millisecond
	// daprWaitingForApp names the ready phase with Options.AppChannel:
	// outbound ready, runtime not.
	daprWaitingForApp = "WAITING_FOR_APP"
)

// daprProfile is daprd (ref §7): the HTTP API and the public port.
func daprProfile() Profile {
	return Profile{
		Name: "dapr",
		Listeners: []ListenerSpec{
			{Name: daprHTTP, Port: 3500, Help: "HTTP API, loopback in Kubernetes (ref §7)"},
			{Name: daprPublic, Port: 3501, Help: "public port: health endpoints (ref §7)"},
		},
		Flags: func(fs *flag.FlagSet, o *Options) {
			fs.BoolVar(&o.AppChannel, "app-channel", false,
				"wait for an app that never comes: /v1.0/healthz stays 500, /v1.0/healthz/outbound turns 204")
			fs.StringVar(&o.APIToken, "api-token", "",
				"require this `token` in header dapr-api-token, as DAPR_API_TOKEN does")
		},
		Bind: bindDapr,
	}
}

// bindDapr binds the health routes on both listeners and the shutdown
// route on the HTTP API only (ref §7.1, §7.2).
func bindDapr(sc *Sidecar) Binding {
	d := &daprd{sc: sc}
	get := []string{"GET"}
	health := []Route{
		{Path: daprHealthz, Methods: get, Role: RoleReadiness, Help: "204 once the runtime is ready, else 500",
			Handle: readyAnswer(d.runtimeReady, empty(204), daprError("ERR_HEALTH_NOT_READY", "dapr is not ready: [runtime]"))},
		{Path: daprOutbound, Methods: get, Role: RoleReadiness, Help: "204 once outbound calls work, else 500",
			Handle: readyAnswer(sc.phaseReady(), empty(204), daprError("ERR_OUTBOUND_HEALTH_NOT_READY", "dapr outbound is not ready"))},
	}
	api := append(slices.Clip(health), Route{
		Path: daprShutdown, Methods: []string{"POST"}, Role: RoleShutdown, Help: "204, then exit 0 (1 when forced)",
		Handle: answer(empty(204)), Exit: daprExit,
	})
	return Binding{
		Muxes: map[string]*Mux{daprHTTP: d.mux(api), daprPublic: d.mux(health)},
		State: d.state,
	}
}

// daprd is the Dapr runtime of one Sidecar.
type daprd struct {
	sc *Sidecar
}

// mux returns a route table behind the API-token middleware. Whatever
// matches no route, or no route's method, goes to Dapr's
// service-invocation fallback (ref §7.2), whose exact answer is
// UNVERIFIED (ref §14); the emulator answers 404 in Go's "404 page not
// found" text.
func (d *daprd) mux(routes []Route) *Mux {
	fallback := goError(404, "404 page not found")
	return &Mux{
		Routes:           routes,
		Gate:             d.checkToken,
		NotFound:         func(*Request) Response { return fallback },
		MethodNotAllowed: func(*Request, *Route) Response { return fallback },
	}
}

// runtimeReady is the "runtime" health target: ready with the state clock,
// unless the runtime waits for an app channel, which in a Job whose app
// starts after the sidecar never comes (ref §7.1: the deadlock of waiting
// on /v1.0/healthz).
func (d *daprd) runtimeReady() bool {
	return !d.sc.opts.AppChannel && d.sc.Phase() == PhaseReady
}

// state names the phases; in the ready phase with an app channel only the
// outbound target is ready.
func (d *daprd) state(p Phase) string {
	if p == PhaseReady && d.sc.opts.AppChannel {
		return daprWaitingForApp
	}
	return lifecycleState(p)
}

// checkToken is the API-token middleware (ref §7.1): with a token set,
// every request but GET on the two health paths must carry it, else 401
// "invalid api token\n" (http.Error, hence the newline).
func (d *daprd) checkToken(r *Request) *Response {
	token := d.sc.opts.APIToken
	exempt := r.Method == "GET" && (r.Path == daprHealthz || r.Path == daprOutbound)
	if token == "" || exempt || r.Get("dapr-api-token") == token {
		return nil
	}
	refusal := goError(401, "invalid api token")
	return &refusal
}

// daprExit applies the force header of ref §7.2, dapr-force-shutdown
// with the value "true": exit code 1 after 100 ms, without graceful
// shutdown, whatever the knobs say.
func daprExit(r *Request, plan ExitPlan) ExitPlan {
	if r.Get("dapr-force-shutdown") == "true" {
		return ExitPlan{Code: daprForceExitCode, Delay: daprForceExitDelay}
	}
	return plan
}

// daprError is Dapr's JSON error answer (ref §7.1, JSONErrorValue).
func daprError(code, message string) Response {
	return typed(500, jsonType, `{"errorCode":"`+code+`","message":"`+message+`"}`)
}
