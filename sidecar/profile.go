package sidecar

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Sidecar is one sidecar of a pod: how to tell that it is ready and how to ask it to quit. A
// profile is such a value with documented defaults; nothing about a sidecar is code.
type Sidecar struct {
	Name  string // for logs: "istio", "cloudsql"
	Ready *Check // nil: nothing to wait for (Vault Agent has no readiness endpoint)
	Quit  *Call  // nil: it cannot be asked to quit
	// Native marks a Kubernetes native sidecar (an init container with restartPolicy: Always).
	// The kubelet stops it after the main containers end; asking it to quit would only make the
	// kubelet restart it, so it is never asked.
	Native bool
	// StartupProbe marks a native sidecar with a startup probe: Kubernetes started the app only
	// once the probe passed, so there is nothing left to wait for.
	StartupProbe bool
}

// Hint explains a known failure of a quit call in the sidecar's own terms.
type Hint struct {
	Status       int    // the answer's status code; 0 matches any
	BodyContains string // a piece of the answer's body; "" matches any
	Refused      bool   // matches "connection refused" instead of an answer
	Message      string
}

// Profile returns the sidecar called name with its documented defaults (sidecar-protocols.md),
// and whether there is such a profile. Every URL can be changed on the returned value.
func Profile(name string) (Sidecar, bool) {
	for _, p := range profiles() {
		if p.Name == name {
			return p.Sidecar, true
		}
	}
	return Sidecar{}, false
}

// ProfileNames lists the profiles Profile knows, in documentation order.
func ProfileNames() []string {
	var names []string
	for _, p := range profiles() {
		names = append(names, p.Name)
	}
	return names
}

// IsProfile reports whether name is a profile.
func IsProfile(name string) bool { return slices.Contains(ProfileNames(), name) }

func ready(kind CheckKind, url string) *Check { return &Check{Kind: kind, URL: url} }

func quit(url string, hints ...Hint) *Call { return &Call{URL: url, Hints: hints} }

// loopbackOnly is the hint for sidecars that refuse quit calls from other addresses (403).
func loopbackOnly(who string) Hint {
	return Hint{Status: 403, Message: who + " accepts this call only from localhost: send it to 127.0.0.1 or localhost, not the pod IP"}
}

// profile is one row of the profile table: a sidecar with its documented defaults, and what the
// documentation says about it (ProfileDoc).
type profile struct {
	Sidecar
	// notes is the one line the README's table shows beside the endpoints: what
	// the user must know to make the profile work (Markdown).
	notes string
	// readyWhen and quitWith describe the endpoints of a generic profile, which has no defaults
	// (http, tcp): what the user gives. Every other profile's are derived from Ready and Quit.
	readyWhen, quitWith string
}

// profiles is the table of known sidecars, and the one place that knows each sidecar's
// endpoints; every value is from sidecar-protocols.md (section numbers in the comments).
// Loopback is written 127.0.0.1 where the sidecar binds IPv4, and localhost where the bind
// address is "localhost" or unknown: sidesync's client tries every address localhost resolves
// to, IPv6 included.
//
// A new row also needs a detection row (internal/detect, signatures), an emulator profile
// (internal/emulator, Profiles) and a process-level case (cmd/sidesync, profileCases), and the
// README's tables regenerated (go generate ./sidecar ./internal/detect);
// cmd/sidesync's TestProfilesComplete fails until all are there.
func profiles() []profile {
	return []profile{
		// 1: plain Envoy; 9901 is the admin address Envoy's docs recommend.
		{Sidecar: Sidecar{Name: "envoy", Ready: ready(EnvoyAdmin, "http://127.0.0.1:9901"), Quit: quit("http://127.0.0.1:9901/quitquitquit")},
			notes: "any Envoy; 9901 is Envoy's documented admin port"},
		// 2: Open Service Mesh runs Envoy itself, admin on 127.0.0.1:15000.
		{Sidecar: Sidecar{Name: "osm", Ready: ready(EnvoyAdmin, "http://127.0.0.1:15000"), Quit: quit("http://127.0.0.1:15000/quitquitquit")},
			notes: "Open Service Mesh (archived); the article's setup"},
		// 3.2, 3.3: readiness through Envoy's status listener 15021 (it proves Envoy serves);
		// quit through the agent on 15020, loopback only: since Istio 1.21 it kills Envoy at once
		// (no drain; only SIGTERM drains) and exits 0.
		{Sidecar: Sidecar{Name: "istio", Ready: ready(HTTPStatus, "http://127.0.0.1:15021/healthz/ready"),
			Quit: quit("http://127.0.0.1:15020/quitquitquit", loopbackOnly("Istio's agent"))},
			notes: "the agent (Istio 1.21+) kills Envoy at once, without draining, and exits 0 (only SIGTERM drains); it accepts the quit only from loopback (403 otherwise)"},
		// 4.2-4.3: admin 4191; /shutdown is off unless enabled, and loopback only.
		{Sidecar: Sidecar{Name: "linkerd", Ready: ready(HTTPStatus, "http://127.0.0.1:4191/ready"),
			Quit: quit("http://127.0.0.1:4191/shutdown",
				Hint{Status: 404, BodyContains: "shutdown endpoint is not enabled", Message: "Linkerd's /shutdown endpoint is disabled: annotate the pod with config.linkerd.io/proxy-admin-shutdown: enabled (Helm: proxy.enableShutdownEndpoint=true), or run the proxy as a native sidecar"},
				loopbackOnly("Linkerd's proxy"))},
			notes: "`/shutdown` is off unless the pod has `config.linkerd.io/proxy-admin-shutdown: enabled` (404 otherwise); loopback only"},
		// 5.2, 5.3: Envoy's admin on 127.0.0.1:19000 for readiness; consul-k8s's lifecycle
		// server on 20600 drains and quits (Envoy's own /quitquitquit is undone by the liveness probe).
		{Sidecar: Sidecar{Name: "consul", Ready: ready(EnvoyAdmin, "http://127.0.0.1:19000"), Quit: quit("http://127.0.0.1:20600/graceful_shutdown",
			Hint{Refused: true, Message: "Consul's lifecycle server is not listening: it needs consul-k8s 1.2+ (annotation consul.hashicorp.com/enable-sidecar-proxy-lifecycle)"})},
			notes: "Envoy's admin for readiness, consul-k8s's lifecycle server for the quit"},
		// 6: kuma-dp's Envoy admin on 127.0.0.1:9901; kuma-dp stops when Envoy exits.
		{Sidecar: Sidecar{Name: "kuma", Ready: ready(EnvoyAdmin, "http://127.0.0.1:9901"), Quit: quit("http://127.0.0.1:9901/quitquitquit")},
			notes: "kuma-dp stops when its Envoy does"},
		// 7.1, 7.2: wait on the outbound health (the full /v1.0/healthz waits for the app, which
		// would deadlock a job started after the sidecar); quit answers 204. The API token header
		// is added when DAPR_API_TOKEN is set.
		{Sidecar: Sidecar{Name: "dapr", Ready: ready(HTTPStatus, "http://127.0.0.1:3500/v1.0/healthz/outbound"),
			Quit: quit("http://127.0.0.1:3500/v1.0/shutdown", Hint{Status: 401, Message: "Dapr wants its API token: set DAPR_API_TOKEN in this container"})},
			notes: "not `/v1.0/healthz`, which waits for the app and so deadlocks a job; sends `dapr-api-token` when `DAPR_API_TOKEN` is set, never logged"},
		// 8: health checks on 9090 need --health-check, the admin port 9091 (bound to
		// "localhost") needs --quitquitquit.
		// A 404 means the call reached a server that has no /quitquitquit: the proxy's health
		// port (9090), or its admin port opened by --debug alone.
		{Sidecar: Sidecar{Name: "cloudsql", Ready: ready(HTTPStatus, "http://127.0.0.1:9090/startup"), Quit: quit("http://localhost:9091/quitquitquit",
			Hint{Refused: true, Message: "the Cloud SQL Auth Proxy answers /quitquitquit only when started with --quitquitquit (admin port --admin-port, 9091)"},
			Hint{Status: 404, Message: "this port has no /quitquitquit: the Cloud SQL Auth Proxy serves it on its admin port (--admin-port, default 9091; not the health-check port, --http-port 9090) and only when started with --quitquitquit; set the port with cloudsql:quit-port=N"})},
			notes: "needs the proxy's `--health-check` and `--quitquitquit`; exits 0; two ports, so `ready-port=`/`quit-port=`, never `port=`"},
		// 10: no readiness endpoint; the quit API needs agent-enable-quit.
		{Sidecar: Sidecar{Name: "vault", Quit: quit("http://127.0.0.1:8200/agent/v1/quit",
			Hint{Status: 404, Message: "Vault Agent's quit API is off: annotate the pod with vault.hashicorp.com/agent-enable-quit: \"true\""})},
			notes: "needs `vault.hashicorp.com/agent-enable-quit: \"true\"`"},
		// 9: AWS App Mesh's Envoy, admin 9901; its bind address is not documented.
		{Sidecar: Sidecar{Name: "appmesh", Ready: ready(EnvoyAdmin, "http://localhost:9901"), Quit: quit("http://localhost:9901/quitquitquit")},
			notes: "AWS App Mesh's Envoy"},
		// Any HTTP sidecar: give ready=URL and quit=URL.
		{Sidecar: Sidecar{Name: "http"}, notes: "any HTTP sidecar",
			readyWhen: "`ready=URL` answers 2xx (or `status=N`)", quitWith: "`quit=URL` (POST, or `method=`)"},
		// Anything that is ready once a port accepts connections: give ready=tcp://HOST:PORT.
		{Sidecar: Sidecar{Name: "tcp"}, notes: "anything without a health endpoint",
			readyWhen: "`ready=tcp://HOST:PORT` accepts a connection", quitWith: "(none, or `quit=URL`)"},
	}
}

// hintFor returns the message of the first hint that matches a failed quit, or "".
func hintFor(hints []Hint, status int, body string, refused bool) string {
	for _, h := range hints {
		switch {
		case h.Refused != refused:
		case h.Status != 0 && h.Status != status:
		case h.BodyContains != "" && !strings.Contains(body, h.BodyContains):
		default:
			return h.Message
		}
	}
	return ""
}

// WithPorts returns s with its readiness check moved to port ready and its quit call to port
// quit; zero keeps a port. The Check and Call are copied, so s is unchanged.
func (s Sidecar) WithPorts(ready, quit int) Sidecar {
	if s.Ready != nil && ready != 0 {
		c := *s.Ready
		c.URL = withHostPort(c.URL, "", strconv.Itoa(ready))
		s.Ready = &c
	}
	if s.Quit != nil && quit != 0 {
		c := *s.Quit
		c.URL = withHostPort(c.URL, "", strconv.Itoa(quit))
		s.Quit = &c
	}
	return s
}

// WithHost returns s with its readiness check and quit call sent to host (a name or IP).
func (s Sidecar) WithHost(host string) Sidecar {
	if s.Ready != nil {
		c := *s.Ready
		c.URL = withHostPort(c.URL, host, "")
		s.Ready = &c
	}
	if s.Quit != nil {
		c := *s.Quit
		c.URL = withHostPort(c.URL, host, "")
		s.Quit = &c
	}
	return s
}

// withHostPort replaces the host and/or port of rawURL (empty keeps it).
func withHostPort(rawURL, host, port string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	if host == "" {
		host = u.Hostname()
	}
	if port == "" {
		port = u.Port()
	}
	u.Host = net.JoinHostPort(host, port)
	return u.String()
}
