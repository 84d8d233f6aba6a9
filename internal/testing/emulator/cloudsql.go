package emulator

// cloudSQLProfile is the Cloud SQL Auth Proxy v2 (ref §8): the health
// check server and the admin server. Its handlers are Go's net/http, so
// text bodies carry the sniffed plain-text type (see answers.go); unknown
// paths answer 404 with an empty body, since the reference gives none.
func cloudSQLProfile() Profile {
	return Profile{
		Name: "cloudsql",
		Listeners: []ListenerSpec{
			{Name: "http", Port: 9090, Help: "health check server, --http-address localhost by default (ref §8)"},
			{Name: adminListener, Port: 9091, Help: "admin server, always localhost (ref §8)"},
		},
		Bind: bindCloudSQL,
	}
}

// bindCloudSQL binds the routes of ref §8; none checks the method except
// /quitquitquit.
func bindCloudSQL(sc *Sidecar) Binding {
	ready := sc.phaseReady()
	health := &Mux{Routes: []Route{
		{Path: "/startup", Role: RoleReadiness, Help: "200 once started, else 503",
			Handle: readyAnswer(ready, goText(200, "ok"), goText(503, "error"))},
		{Path: "/readiness", Role: RoleReadiness, Help: "200 once started, else 503",
			Handle: readyAnswer(ready, goText(200, "ok"), goText(503, "proxy is not started"))},
		{Path: "/liveness", Help: "always 200", Handle: answer(goText(200, "ok"))},
	}}
	admin := &Mux{Routes: []Route{
		{Path: "/quitquitquit", Role: RoleShutdown, Help: "GET or POST: 200, then exit 0",
			Refuse: cloudSQLRefuse, Handle: answer(empty(200))},
	}}
	return Binding{
		Muxes: map[string]*Mux{"http": health, adminListener: admin},
		State: lifecycleState,
	}
}

// cloudSQLRefuse accepts GET and POST, as since v2.7.0, and refuses other
// methods with an empty 400 (ref §8). Repeated accepted requests answer
// 200 again but shut down only once (sync.Once in the proxy, acceptQuit
// here).
func cloudSQLRefuse(r *Request) *Response {
	if r.Method == "GET" || r.Method == "POST" {
		return nil
	}
	refusal := empty(400)
	return &refusal
}
