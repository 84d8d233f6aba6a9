package sidecar

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Sidecar is one sidecar of a pod: how to tell that it is ready and how to ask it to quit.
// Nothing about a sidecar is code: the profiles of the sidecars sidesync knows (Istio, Linkerd,
// the Cloud SQL Auth Proxy, ...) are such values, with their documented defaults, in the
// sidecar/profiles package.
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
