package emulator

import "flag"

// linkerdText is the content type linkerd2-proxy's admin sets on its text
// answers (ref §4.2).
const linkerdText = "text/plain"

// linkerdProfile is the linkerd2-proxy admin server (ref §4).
func linkerdProfile() Profile {
	return Profile{
		Name: "linkerd",
		Listeners: []ListenerSpec{
			{Name: adminListener, Port: 4191, Help: "linkerd2-proxy admin server (ref §4.1)"},
		},
		Flags: func(fs *flag.FlagSet, o *Options) {
			// The real proxy's default is disabled since release/v2.236.0
			// (ref §4.3); the emulator defaults to enabled because a Job
			// that sidesync shuts down must have enabled it.
			fs.BoolVar(&o.ShutdownDisabled, "shutdown-disabled", false,
				"answer /shutdown with 404, as without LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED")
		},
		Bind: bindLinkerd,
	}
}

// bindLinkerd binds the admin routes of ref §4.2. Anything else, and a
// method other than POST on /shutdown, answers with an empty body and no
// content type (the Mux defaults, 404 and 405).
func bindLinkerd(sc *Sidecar) Binding {
	l := &linkerdAdmin{sc: sc}
	return Binding{
		Muxes: map[string]*Mux{adminListener: {Routes: []Route{
			{Path: "/ready", Role: RoleReadiness, Help: "200 once ready, else 503", Handle: readyAnswer(
				sc.phaseReady(), typed(200, linkerdText, "ready\n"), Text(503, "not ready\n"))},
			{Path: "/live", Help: "always 200", Handle: answer(typed(200, linkerdText, "live\n"))},
			{Path: "/shutdown", Methods: []string{"POST"}, Role: RoleShutdown, Help: "drain and exit 0",
				Refuse: l.refuseShutdown, Handle: answer(typed(200, linkerdText, "shutdown\n"))},
		}}},
		State: lifecycleState,
	}
}

// linkerdAdmin is the admin server of one Sidecar.
type linkerdAdmin struct {
	sc *Sidecar
}

// refuseShutdown checks the peer before the setting, as the proxy does
// (ref §4.2); the method was checked by the route.
func (l *linkerdAdmin) refuseShutdown(r *Request) *Response {
	var refusal Response
	switch {
	case !r.FromLoopback():
		refusal = typed(403, linkerdText, "Requests are only permitted from localhost.")
	case l.sc.opts.ShutdownDisabled:
		refusal = typed(404, linkerdText, "shutdown endpoint is not enabled\n")
	default:
		return nil
	}
	return &refusal
}
