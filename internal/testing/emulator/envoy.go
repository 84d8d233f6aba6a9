package emulator

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Envoy state names (ref §1.3, envoy.admin.v3.ServerInfo.State).
const (
	envoyLive            = "LIVE"
	envoyDraining        = "DRAINING"
	envoyPreInitializing = "PRE_INITIALIZING"
	envoyInitializing    = "INITIALIZING"
)

// jsonType is Envoy's ContentTypeValues.Json.
const jsonType = "application/json"

// adminListener is the name of an admin listener: Envoy's in every
// profile that has one, and Linkerd's and Cloud SQL Proxy's.
const adminListener = "admin"

// Envoy returns the profile of the Envoy admin interface (ref §1). Envoy
// has no default admin port; its docs suggest 127.0.0.1:9901 (ref §1.2).
func Envoy() Profile {
	return envoyAlias("envoy", 9901, "Envoy admin (ref §1)")
}

// envoyAlias returns a profile that is the plain Envoy admin under another
// name: the meshes whose sidecar is Envoy with no readiness or shutdown
// endpoint of its own (OSM ref §2, Kuma ref §6, App Mesh ref §9).
func envoyAlias(name string, port int, help string) Profile {
	return Profile{
		Name:      name,
		Listeners: []ListenerSpec{{Name: adminListener, Port: port, Help: help}},
		Bind:      bindEnvoy,
	}
}

// envoyAdmin is the Envoy admin interface of one Sidecar.
type envoyAdmin struct {
	sc      *Sidecar
	started time.Time
	// hcFailed is set by /healthcheck/fail and cleared by /healthcheck/ok
	// (ref §1.6).
	hcFailed atomic.Bool
	routes   []Route
}

// newEnvoyAdmin returns the Envoy admin of sc; profiles that include an
// Envoy (Istio, Consul) serve its mux on one of their listeners and use
// its state names.
func newEnvoyAdmin(sc *Sidecar) *envoyAdmin {
	e := &envoyAdmin{sc: sc, started: time.Now()}
	e.routes = append(e.coreRoutes(), envoyMinorRoutes()...)
	return e
}

// mux returns the admin route table with Envoy's answers to unknown paths
// and wrong methods.
func (e *envoyAdmin) mux() *Mux {
	return &Mux{
		Routes:           e.routes,
		NotFound:         e.notFound,
		MethodNotAllowed: envoyMethodNotAllowed,
		Fallback:         envoyFallback(),
	}
}

func bindEnvoy(sc *Sidecar) Binding {
	e := newEnvoyAdmin(sc)
	return Binding{Muxes: map[string]*Mux{adminListener: e.mux()}, State: e.state}
}

// coreRoutes are the endpoints ref §1 pins down. Mutating endpoints
// ("mutates_state" in Envoy's handler table) allow only POST (ref §1.1).
func (e *envoyAdmin) coreRoutes() []Route {
	post := []string{"POST"}
	return []Route{
		{Path: "/healthcheck/fail", Methods: post, Help: "cause the server to fail health checks", Handle: e.healthcheck(true)},
		{Path: "/healthcheck/ok", Methods: post, Help: "cause the server to pass health checks", Handle: e.healthcheck(false)},
		{Path: "/help", Help: "print out list of admin commands", Handle: e.help},
		{Path: "/quitquitquit", Methods: post, Role: RoleShutdown, Help: "exit the server", Handle: envoyOK},
		// ref §1.6: draining listeners answers OK and leaves /ready alone.
		{Path: "/drain_listeners", Methods: post, Help: "drain listeners", Handle: envoyOK},
		{Path: "/server_info", Role: RoleReadiness, Help: "print server version/status information", Handle: e.serverInfo},
		{Path: "/ready", Role: RoleReadiness, Help: "print server state, return 200 if LIVE, otherwise return 503", Handle: e.ready},
		{Path: "/stats", Help: "print server stats", Handle: e.stats},
		{Path: "/stats/prometheus", Help: "print server stats in prometheus format", Handle: e.prometheus},
	}
}

// state derives the Envoy state like Utility::serverState (ref §1.3): the
// health-check flag shows as DRAINING only once initialized.
func (e *envoyAdmin) state(p Phase) string {
	switch p {
	case PhaseStarting:
		return envoyPreInitializing
	case PhaseInitializing:
		return envoyInitializing
	}
	if e.hcFailed.Load() {
		return envoyDraining
	}
	return envoyLive
}

// stateNumber is the server.state gauge value (ref §1.3).
func stateNumber(state string) int {
	return slices.Index([]string{envoyLive, envoyDraining, envoyPreInitializing, envoyInitializing}, state)
}

// ready answers <STATE>\n, 200 only for LIVE (ref §1.3).
func (e *envoyAdmin) ready(*Request) Reply {
	state := e.sc.State()
	status := 503
	if state == envoyLive {
		status = 200
	}
	return Reply{Response: Text(status, state+"\n")}
}

func (e *envoyAdmin) healthcheck(fail bool) Handler {
	return func(*Request) Reply {
		e.hcFailed.Store(fail)
		e.sc.RefreshState()
		return Reply{Response: Text(200, "OK\n")}
	}
}

// envoyOK is the answer of Envoy's simple commands: 200 "OK\n" (ref §1.5,
// §1.6).
func envoyOK(*Request) Reply {
	return Reply{Response: Text(200, "OK\n")}
}

// helpText lists the routes sorted by path, mutating ones marked "(POST)",
// in the format of AdminImpl::getHelp (ref §1.1). Parameter lines are left
// out.
func (e *envoyAdmin) helpText() string {
	sorted := slices.Clone(e.routes)
	slices.SortFunc(sorted, func(a, b Route) int { return strings.Compare(a.Path, b.Path) })
	var b strings.Builder
	b.WriteString("admin commands are:\n")
	for _, rt := range sorted {
		post := ""
		if slices.Contains(rt.Methods, "POST") {
			post = " (POST)"
		}
		fmt.Fprintf(&b, "  %s%s: %s\n", rt.Path, post, rt.Help)
	}
	return b.String()
}

func (e *envoyAdmin) help(*Request) Reply {
	return Reply{Response: Text(200, e.helpText())}
}

// notFound is Envoy's answer to an unknown path: 404 with the help text
// after "invalid path. " (ref §1.1).
func (e *envoyAdmin) notFound(*Request) Response {
	return Text(404, "invalid path. "+e.helpText())
}

// envoyMethodNotAllowed is Envoy's answer to a mutating endpoint called
// without POST: 405 and no trailing newline (ref §1.1).
func envoyMethodNotAllowed(r *Request, _ *Route) Response {
	return Text(405, fmt.Sprintf("Method %s not allowed, POST required.", r.Method))
}

// envoyFallback are the admin headers added when a handler sets none
// (ref §1.1, populateFallbackResponseHeaders).
func envoyFallback() []Field {
	return []Field{
		{"content-type", "text/plain; charset=UTF-8"},
		{"cache-control", "no-cache, max-age=0"},
		{"x-content-type-options", "nosniff"},
	}
}

// statLines returns the few stats a readiness check reads (ref §1.6),
// sorted by name, as "name: value" pairs.
func (e *envoyAdmin) statLines() [][2]string {
	state := e.sc.State()
	live, workers := "0", "0"
	if state == envoyLive {
		live = "1"
	}
	if state == envoyLive || state == envoyDraining {
		workers = "1"
	}
	return [][2]string{
		{"listener_manager.workers_started", workers},
		{"server.live", live},
		{"server.state", fmt.Sprint(stateNumber(state))},
	}
}

// stats answers /stats in text format, honouring ?filter= (ref §1.6).
func (e *envoyAdmin) stats(r *Request) Reply {
	match := statFilter(queryValue(r.RawQuery, "filter"))
	var b strings.Builder
	for _, kv := range e.statLines() {
		if match(kv[0]) {
			b.WriteString(kv[0] + ": " + kv[1] + "\n")
		}
	}
	return Reply{Response: Text(200, b.String())}
}

// statFilter matches stat names against a /stats filter. Envoy takes an
// RE2 regex (ref §1.6); the emulator takes it as a literal, a
// simplification made when the package had to stay out of package regexp
// and kept since, as sidesync never queries /stats: a leading ^
// anchors at the start, a trailing $ at the end, a backslash makes the
// next character literal ("server\.state"), and anything else must appear
// as written. An invalid regex is therefore never refused with 400, and
// regex syntax such as "(a|b)" or ".*" matches only itself.
func statFilter(filter string) func(name string) bool {
	prefix := strings.HasPrefix(filter, "^")
	suffix := strings.HasSuffix(filter, "$") && !strings.HasSuffix(filter, "\\$")
	filter = strings.TrimPrefix(filter, "^")
	if suffix {
		filter = filter[:len(filter)-1]
	}
	var lit strings.Builder
	for i := 0; i < len(filter); i++ {
		if filter[i] == '\\' && i+1 < len(filter) {
			i++
		}
		lit.WriteByte(filter[i])
	}
	want := lit.String()
	return func(name string) bool {
		switch {
		case prefix && suffix:
			return name == want
		case prefix:
			return strings.HasPrefix(name, want)
		case suffix:
			return strings.HasSuffix(name, want)
		}
		return strings.Contains(name, want)
	}
}

// prometheus answers /stats/prometheus with the same stats as gauges.
func (e *envoyAdmin) prometheus(*Request) Reply {
	var b strings.Builder
	for _, kv := range e.statLines() {
		name := "envoy_" + strings.ReplaceAll(kv[0], ".", "_")
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{} %s\n", name, name, kv[1])
	}
	return Reply{Response: Text(200, b.String())}
}
