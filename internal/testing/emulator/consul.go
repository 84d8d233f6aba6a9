package emulator

import "flag"

// consulLifecycle is the listener name of consul-dataplane's lifecycle
// server.
const consulLifecycle = "lifecycle"

// consulProfile is Consul's sidecar, consul-dataplane with its Envoy
// (ref §5): the Envoy admin and the dataplane's lifecycle server.
func consulProfile() Profile {
	return Profile{
		Name: "consul",
		Listeners: []ListenerSpec{
			{Name: adminListener, Port: 19000, Help: "Envoy admin, 127.0.0.1 (ref §5.1)"},
			{Name: consulLifecycle, Port: 20600, Help: "lifecycle server as consul-k8s configures it, 127.0.0.1 (ref §5.3)"},
		},
		Flags: func(fs *flag.FlagSet, o *Options) {
			fs.DurationVar(&o.ShutdownGracePeriod, "shutdown-grace-period", 0,
				"time from /graceful_shutdown to Envoy's quit (shutdownGracePeriodSeconds)")
			fs.DurationVar(&o.StartupGracePeriod, "startup-grace-period", 0,
				"longest wait of /graceful_startup for Envoy to be ready; 0 answers at once (startupGracePeriodSeconds)")
		},
		Bind: bindConsul,
	}
}

// bindConsul binds the Envoy admin and the lifecycle routes. The
// lifecycle handlers check no method (ref §5.2, §5.3) and answer 200 with
// an empty body. Unknown lifecycle paths answer 404 with an empty body:
// the reference gives none (the dataplane's Go ServeMux would say "404
// page not found").
func bindConsul(sc *Sidecar) Binding {
	e := newEnvoyAdmin(sc)
	lifecycle := &Mux{Routes: []Route{
		{Path: "/graceful_shutdown", Role: RoleShutdown, Help: "200 at once; Envoy quits after the grace period",
			Handle: answer(empty(200)), Exit: func(_ *Request, plan ExitPlan) ExitPlan {
				// ref §5.3: the dataplane waits the grace period, then
				// posts Envoy's /quitquitquit; when Envoy exits, so does
				// the dataplane.
				plan.Delay += sc.opts.ShutdownGracePeriod
				return plan
			}},
		{Path: "/graceful_startup", Role: RoleReadiness, Help: "200 once Envoy is ready or the grace period is over",
			Handle: func(*Request) Reply { return consulStartup(sc) }},
	}}
	return Binding{
		Muxes: map[string]*Mux{adminListener: e.mux(), consulLifecycle: lifecycle},
		State: e.state,
	}
}

// consulStartup answers /graceful_startup (ref §5.2): with no grace period
// at once, else once Envoy's /ready would answer 200 (state LIVE) or the
// grace period is over. The real dataplane polls /ready every 50 ms; the
// emulator is woken by state changes instead. The answer is 200 in every
// case, so it is no readiness signal by itself.
func consulStartup(sc *Sidecar) Reply {
	if grace := sc.opts.StartupGracePeriod; grace > 0 {
		sc.waitUntil(grace, func() bool { return sc.State() == envoyLive })
	}
	return Reply{Response: empty(200)}
}
