package emulator

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Behaviour says how the routes governed by one knob answer. The zero
// value behaves as BehaviourOK.
type Behaviour string

// The behaviours. Not every knob accepts every behaviour: see
// ReadyBehaviours and QuitBehaviours.
const (
	// BehaviourOK answers as the real sidecar does.
	BehaviourOK Behaviour = "ok"
	// BehaviourHang never answers (Outcome Hang).
	BehaviourHang Behaviour = "hang"
	// BehaviourReset resets the connection (Outcome Reset).
	BehaviourReset Behaviour = "reset"
	// BehaviourEOF closes the connection without answering (Outcome Drop).
	BehaviourEOF Behaviour = "eof"
	// Behaviour404 answers 404 with body "not found\n".
	Behaviour404 Behaviour = "404"
	// Behaviour500 answers 500 with body "internal error\n".
	Behaviour500 Behaviour = "500"
	// Behaviour403 answers 403 with body "forbidden\n", as a sidecar
	// that refuses the caller does.
	Behaviour403 Behaviour = "403"
	// Behaviour405 answers 405 with body "method not allowed\n".
	Behaviour405 Behaviour = "405"
	// BehaviourSlow answers as the real sidecar does, but only after
	// Options.SlowBy (Reply.Delay): a sidecar under load.
	BehaviourSlow Behaviour = "slow"
	// BehaviourGarbage answers bytes that are no HTTP at all, then
	// closes the connection (Outcome Garbage).
	BehaviourGarbage Behaviour = "garbage"
	// BehaviourEndless answers 200 with a body that never ends (Outcome
	// Endless).
	BehaviourEndless Behaviour = "endless"
	// BehaviourRedirect answers 302 Found to redirectTarget on the same
	// listener, which no route serves: a client that follows it shows up
	// as a request event for that path.
	BehaviourRedirect Behaviour = "redirect"
)

// redirectTarget is where BehaviourRedirect sends the client.
const redirectTarget = "/followed-redirect"

// DefaultSlowBy is the delay of BehaviourSlow when Options.SlowBy is zero.
const DefaultSlowBy = 2 * time.Second

// ReadyBehaviours lists the values Options.ReadyBehaviour accepts.
func ReadyBehaviours() []Behaviour {
	return []Behaviour{BehaviourOK, BehaviourHang, BehaviourReset, BehaviourEOF, Behaviour404, Behaviour500,
		BehaviourSlow, BehaviourGarbage, BehaviourEndless, BehaviourRedirect}
}

// QuitBehaviours lists the values Options.QuitBehaviour accepts.
func QuitBehaviours() []Behaviour {
	return []Behaviour{BehaviourOK, BehaviourHang, Behaviour500, BehaviourReset, BehaviourEOF,
		Behaviour403, Behaviour404, Behaviour405, BehaviourSlow, BehaviourGarbage, BehaviourEndless, BehaviourRedirect}
}

// ParseBehaviour checks s against the allowed behaviours.
func ParseBehaviour(s string, allowed []Behaviour) (Behaviour, error) {
	if b := Behaviour(s); slices.Contains(allowed, b) {
		return b, nil
	}
	return "", fmt.Errorf("%q is not one of %s", s, joinBehaviours(allowed))
}

// Options are the knobs of a sidecar: first those shared by every profile
// (ref §12 item 7), then those of single profiles, which the others
// ignore. The zero value is a sidecar whose listeners are all on 127.0.0.1
// with ephemeral ports, that is ready at once and quits cleanly with exit
// code 0.
type Options struct {
	// Listen is the address of the main listener; "" means "127.0.0.1:0".
	Listen string
	// Addrs maps listener names to addresses and overrides Listen for the
	// main listener; a listener named nowhere listens on "127.0.0.1:0".
	// A name the profile lacks makes Start fail.
	Addrs map[string]string
	// ListenAfter delays listening: the port is chosen (by listening and
	// closing) and reported at once, but only listened on after this long,
	// so early clients get connection refused.
	ListenAfter time.Duration
	// ReadyAfter is the time from Start to the ready state; the sidecar
	// is half-way (Envoy: INITIALIZING) after half of it.
	ReadyAfter time.Duration
	// NeverReady keeps the sidecar from becoming ready at all.
	NeverReady bool
	// ReadyAfterProbes, when positive, makes the sidecar ready once it has answered this many
	// readiness requests (not ready) rather than after a time: with ReadyAfter zero, the first
	// ReadyAfterProbes answers say "initializing" and the next ones "ready", however slowly the
	// client probes.
	ReadyAfterProbes int
	// ReadyBehaviour governs RoleReadiness routes.
	ReadyBehaviour Behaviour
	// QuitBehaviour governs RoleShutdown routes.
	QuitBehaviour Behaviour
	// QuitLost makes the first QuitLost shutdown requests close the connection with no answer
	// and change nothing, as Istio's pilot-agent does while its Envoy has not started (its
	// handler fails: docs/SIDECARS.md 3.3); the ones after follow QuitBehaviour.
	QuitLost int
	// SlowBy is how long BehaviourSlow holds each answer; zero means
	// DefaultSlowBy.
	SlowBy time.Duration
	// ExitCode is the exit code after an accepted shutdown request.
	ExitCode int
	// ExitDelay is the time between accepting a shutdown request and
	// closing the listeners.
	ExitDelay time.Duration
	// ShutdownDisabled turns the shutdown endpoint off as the real
	// configuration does: Linkerd without
	// LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED (ref §4.3) and Vault Agent
	// without agent_api enable_quit (ref §10) then answer 404.
	ShutdownDisabled bool
	// ShutdownGracePeriod is Consul's shutdownGracePeriodSeconds: the time
	// from /graceful_shutdown to Envoy's quit (ref §5.3). It adds to
	// ExitDelay.
	ShutdownGracePeriod time.Duration
	// StartupGracePeriod is Consul's startupGracePeriodSeconds: how long
	// /graceful_startup waits for Envoy to be ready; 0 answers at once
	// (ref §5.2).
	StartupGracePeriod time.Duration
	// AppChannel makes Dapr wait for an application that never comes, as
	// with --app-port in a Job whose app starts after the sidecar:
	// /v1.0/healthz stays 500 while /v1.0/healthz/outbound follows the
	// state clock (ref §7.1).
	AppChannel bool
	// APIToken is Dapr's DAPR_API_TOKEN: when set, requests other than
	// GET /v1.0/healthz and GET /v1.0/healthz/outbound need it in the
	// dapr-api-token header (ref §7.1).
	APIToken string
	// Events receives event lines; nil discards them.
	Events io.Writer
	// Diagnostics receives human-readable problems; nil discards them.
	Diagnostics io.Writer
}

// withDefaults fills in the zero values.
func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = defaultListen
	}
	if o.ReadyBehaviour == "" {
		o.ReadyBehaviour = BehaviourOK
	}
	if o.QuitBehaviour == "" {
		o.QuitBehaviour = BehaviourOK
	}
	if o.Diagnostics == nil {
		o.Diagnostics = io.Discard
	}
	if o.SlowBy == 0 {
		o.SlowBy = DefaultSlowBy
	}
	return o
}

// validate checks the options; messages name the command-line flag that
// sets the offending field.
func (o Options) validate() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"listen-after", o.ListenAfter}, {"ready-after", o.ReadyAfter}, {"exit-delay", o.ExitDelay},
		{"shutdown-grace-period", o.ShutdownGracePeriod}, {"startup-grace-period", o.StartupGracePeriod},
		{"slow-by", o.SlowBy},
	} {
		if d.v < 0 {
			return fmt.Errorf("-%s: %v is negative", d.flag, d.v)
		}
	}
	if _, err := ParseBehaviour(string(o.ReadyBehaviour), ReadyBehaviours()); err != nil {
		return fmt.Errorf("-ready-behaviour: %w", err)
	}
	if _, err := ParseBehaviour(string(o.QuitBehaviour), QuitBehaviours()); err != nil {
		return fmt.Errorf("-quit-behaviour: %w", err)
	}
	switch {
	case o.ReadyAfterProbes < 0:
		return fmt.Errorf("-ready-after-probes: %d is negative", o.ReadyAfterProbes)
	case o.QuitLost < 0:
		return fmt.Errorf("-quit-lost: %d is negative", o.QuitLost)
	case o.ReadyAfterProbes > 0 && (o.NeverReady || o.ReadyAfter > 0):
		return fmt.Errorf("-ready-after-probes: goes with neither -never-ready nor -ready-after")
	}
	if o.ExitCode < 0 || o.ExitCode > 255 {
		return fmt.Errorf("-exit-code: %d is outside 0..255", o.ExitCode)
	}
	return nil
}

// apply carries out behaviour b in place of h. Behaviours other than ok
// and slow replace the profile's answer entirely; slow holds the
// profile's answer for slowBy.
func (b Behaviour) apply(h Handler, r *Request, slowBy time.Duration) Reply {
	switch b {
	case BehaviourSlow:
		reply := h(r)
		reply.Delay = slowBy
		return reply
	case BehaviourGarbage:
		return Reply{Outcome: Garbage}
	case BehaviourEndless:
		return Reply{Outcome: Endless}
	case BehaviourRedirect:
		return Reply{Response: Response{Status: 302, Header: []Field{{"location", redirectTarget}}, Body: []byte("found\n")}}
	case Behaviour403:
		return Reply{Response: Text(403, "forbidden\n")}
	case Behaviour405:
		return Reply{Response: Text(405, "method not allowed\n")}
	case BehaviourHang:
		return Reply{Outcome: Hang}
	case BehaviourReset:
		return Reply{Outcome: Reset}
	case BehaviourEOF:
		return Reply{Outcome: Drop}
	case Behaviour404:
		return Reply{Response: Text(404, "not found\n")}
	case Behaviour500:
		return Reply{Response: Text(500, "internal error\n")}
	}
	return h(r)
}
