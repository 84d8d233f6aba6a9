package emulator

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
	// Handle answers requests that passed the method check.
	Handle Handler
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
	// NotFound answers a path that matches no route.
	NotFound func(r *Request) Response
	// MethodNotAllowed answers a method the matched route does not allow.
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
	var reply Reply
	rt := m.match(r.Path)
	switch {
	case rt == nil:
		reply.Response = m.NotFound(r)
	case !rt.allows(r.Method):
		reply.Response = m.MethodNotAllowed(r, rt)
	default:
		h := rt.Handle
		if m.Wrap != nil {
			h = m.Wrap(rt, h)
		}
		reply = h(r)
	}
	reply.Response.Header = withFallback(reply.Response.Header, m.Fallback)
	return reply
}

func (m *Mux) match(path string) *Route {
	for i := range m.Routes {
		if m.Routes[i].Path == path {
			return &m.Routes[i]
		}
	}
	return nil
}
