package emulator

// Istio listener names (ref §3.1).
const (
	istioStatus      = "status"
	istioEnvoyStatus = "envoy-status"
)

// istioProfile is Istio's sidecar (ref §3): the pilot-agent's status
// server, Envoy's status listener in front of it, and the Envoy admin.
func istioProfile() Profile {
	return Profile{
		Name: "istio",
		Listeners: []ListenerSpec{
			{Name: istioStatus, Port: 15020, Help: "pilot-agent status server, /healthz/ready and /quitquitquit (ref §3.1)"},
			{Name: istioEnvoyStatus, Port: 15021, Help: "Envoy status listener, /healthz/ready via the agent (ref §3.1)"},
			{Name: adminListener, Port: 15000, Help: "Envoy admin (ref §3.1, §1)"},
		},
		Bind: bindIstio,
	}
}

// bindIstio binds Istio's three listeners. The state names are Envoy's,
// since the pilot-agent has none of its own and its readiness is Envoy's.
func bindIstio(sc *Sidecar) Binding {
	e := newEnvoyAdmin(sc)
	// ref §3.2: any method; 200 or 503, both with an empty body (the
	// reason is only logged). The agent's probe reads Envoy's stats and
	// caches "live" once true, so a later /healthcheck/fail does not make
	// it fail again: readiness is the state clock's.
	ready := Route{
		Path:   "/healthz/ready",
		Role:   RoleReadiness,
		Help:   "200 when Envoy is ready, else 503",
		Handle: readyAnswer(sc.phaseReady(), empty(200), empty(503)),
	}
	ok := answer(goText(200, "OK")) // ref §3.3: "OK", no newline
	agent := &Mux{Routes: []Route{
		ready,
		{Path: "/quitquitquit", Role: RoleShutdown, Help: "kill Envoy and exit 0", Refuse: istioRefuse, Handle: ok},
		// ref §3.3 "Related": drains Envoy's listeners, does not exit.
		{Path: "/drain", Help: "drain Envoy's listeners", Refuse: istioRefuse, Handle: ok},
	}}
	// Envoy routes only the /healthz/ready prefix to the agent (ref §3.1).
	// Unknown paths answer 404 with an empty body on both: the reference
	// gives no body (the agent's Go ServeMux would say "404 page not
	// found"; Envoy's router, nothing).
	envoyStatus := &Mux{Routes: []Route{ready}}
	return Binding{
		Muxes: map[string]*Mux{istioStatus: agent, istioEnvoyStatus: envoyStatus, adminListener: e.mux()},
		State: e.state,
	}
}

// istioRefuse applies the checks of the agent's /quitquitquit and /drain
// in their order (ref §3.3): a peer that is not loopback gets 403 even for
// a wrong method, then a method other than POST gets 405; both through
// http.Error.
func istioRefuse(r *Request) *Response {
	var refusal Response
	switch {
	case !r.FromLoopback():
		refusal = goError(403, "Only requests from localhost are allowed")
	case r.Method != "POST":
		refusal = goError(405, "Method Not Allowed")
	default:
		return nil
	}
	return &refusal
}
