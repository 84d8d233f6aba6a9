package emulator

import "time"

// Role says which behaviour knob governs a route, so that one set of knobs
// (ref §12 item 7) works for every profile without special cases.
type Role int

const (
	// RolePlain routes always answer as the profile defines.
	RolePlain Role = iota
	// RoleReadiness routes follow Options.ReadyBehaviour.
	RoleReadiness
	// RoleShutdown routes follow Options.QuitBehaviour, and a 2xx answer
	// from their handler makes the sidecar shut down.
	RoleShutdown
)

// ExitPlan says how a sidecar ends after an accepted shutdown request.
type ExitPlan struct {
	// Code is the process exit code.
	Code int
	// Delay is the time from the answer to closing the listeners.
	Delay time.Duration
}

// Route is one entry of a profile's route table.
type Route struct {
	// Path must equal the request path (without the query) exactly.
	Path string
	// Methods lists the allowed methods; empty allows every method.
	Methods []string
	// Role selects the behaviour knob that governs the route.
	Role Role
	// Help is the one-line description shown in help listings.
	Help string
	// Refuse, when not nil, runs after the method check and before the
	// behaviour knobs: a non-nil answer refuses the request whatever the
	// knobs say. It holds the real sidecar's own checks of the peer, the
	// method (when their order matters) and its settings (ref §12 item 2).
	Refuse func(r *Request) *Response
	// Handle answers requests that passed the method check and Refuse.
	Handle Handler
	// Exit, when not nil, adjusts the plan (Options.ExitCode and
	// Options.ExitDelay) of a shutdown accepted on a RoleShutdown route,
	// for sidecars whose exit depends on the request (Dapr's force header,
	// ref §7.2) or on a setting of their own (Consul's grace period,
	// ref §5.3).
	Exit func(r *Request, plan ExitPlan) ExitPlan
}

// allows reports whether method may be used on the route. Methods are
// compared case-sensitively, as HTTP methods are.
func (rt *Route) allows(method string) bool {
	if len(rt.Methods) == 0 {
		return true
	}
	for _, m := range rt.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// Mux dispatches requests over a route table: the first route whose Path
// equals the request path wins (ref §1.1, AdminImpl::makeRequest).
type Mux struct {
	// Routes is the table, searched in order.
	Routes []Route
	// Gate, when not nil, sees every request before routing, as a real
	// sidecar's middleware does; a non-nil answer refuses the request with
	// it whatever the route and the knobs (Dapr's API token, ref §7.1).
	Gate func(r *Request) *Response
	// NotFound answers a path that matches no route; nil answers 404 with
	// an empty body.
	NotFound func(r *Request) Response
	// MethodNotAllowed answers a method the matched route does not allow;
	// nil answers 405 with an empty body.
	MethodNotAllowed func(r *Request, rt *Route) Response
	// Fallback lists header fields added to every answer that does not set
	// them itself.
	Fallback []Field
	// Wrap, when not nil, wraps a route's handler after the method check;
	// the Sidecar uses it to apply the behaviour knobs by Role.
	Wrap func(rt *Route, h Handler) Handler
}

// Serve is a Handler for the Mux.
func (m *Mux) Serve(r *Request) Reply {
	reply := m.route(r)
	reply.Response.Header = withFallback(reply.Response.Header, m.Fallback)
	return reply
}

// route finds the answer to r before the fallback headers are added: the
// gate, the route, its methods and refusals, then the handler under the
// behaviour knobs.
func (m *Mux) route(r *Request) Reply {
	if m.Gate != nil {
		if refusal := m.Gate(r); refusal != nil {
			return Reply{Response: *refusal}
		}
	}
	rt := m.match(r.Path)
	switch {
	case rt == nil && m.NotFound == nil:
		return Reply{Response: Response{Status: 404}}
	case rt == nil:
		return Reply{Response: m.NotFound(r)}
	case !rt.allows(r.Method) && m.MethodNotAllowed == nil:
		return Reply{Response: Response{Status: 405}}
	case !rt.allows(r.Method):
		return Reply{Response: m.MethodNotAllowed(r, rt)}
	}
	if rt.Refuse != nil {
		if refusal := rt.Refuse(r); refusal != nil {
			return Reply{Response: *refusal}
		}
	}
	h := rt.Handle
	if m.Wrap != nil {
		h = m.Wrap(rt, h)
	}
	return h(r)
}

func (m *Mux) match(path string) *Route {
	for i := range m.Routes {
		if m.Routes[i].Path == path {
			return &m.Routes[i]
		}
	}
	return nil
}
