package emulator

import "flag"

// vaultProfile is a Vault Agent with its quit API (ref §10). It has no
// readiness endpoint: the state clock runs, but no route reports it.
func vaultProfile() Profile {
	return Profile{
		Name: "vault",
		Listeners: []ListenerSpec{
			{Name: adminListener, Port: 8200, Help: "agent listener with agent_api, 127.0.0.1 in vault-k8s (ref §10)"},
		},
		Flags: func(fs *flag.FlagSet, o *Options) {
			fs.BoolVar(&o.ShutdownDisabled, "quit-disabled", false,
				"answer /agent/v1/quit with 404, as a listener without agent_api enable_quit")
		},
		Bind: bindVault,
	}
}

// bindVault binds /agent/v1/quit. Every answer has an empty body: the
// handler only writes a status (ref §10), and the reference gives no body
// for unknown paths either, which answer 404.
func bindVault(sc *Sidecar) Binding {
	return Binding{
		Muxes: map[string]*Mux{adminListener: {Routes: []Route{
			{Path: "/agent/v1/quit", Role: RoleShutdown, Help: "POST: 200, then exit",
				Refuse: func(r *Request) *Response { return vaultRefuse(r, sc.opts.ShutdownDisabled) },
				Handle: answer(empty(200))},
		}}},
		State: lifecycleState,
	}
}

// vaultRefuse checks in handleQuit's order (ref §10): a listener without
// enable_quit answers 404 whatever the method, then a method other than
// POST gets 405.
func vaultRefuse(r *Request, disabled bool) *Response {
	var refusal Response
	switch {
	case disabled:
		refusal = empty(404)
	case r.Method != "POST":
		refusal = empty(405)
	default:
		return nil
	}
	return &refusal
}
