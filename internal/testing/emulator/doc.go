// Package emulator runs emulated Kubernetes sidecars: real programs that
// listen on loopback and answer a sidecar's readiness and shutdown
// endpoints exactly as the real sidecar does, to the status code and body.
// The tests of sidesync and `sidesync-emulator demo` run them instead of a real
// Envoy, Istio, Linkerd, Consul, Dapr, Cloud SQL Proxy or Vault Agent.
//
// The source of truth for every answer is
// docs/SIDECARS.md, which gives each fact with its upstream source; comments cite its sections as
// "ref §N".
//
// # Layers
//
//   - Server serves a listener with net/http (HTTP/1.1, keep-alive) and
//     adds what emulation needs: a request event as soon as the outcome of
//     a request is decided, and outcomes besides answering (hang, reset,
//     eof: Outcome), carried out on the hijacked connection. Answers carry
//     exactly the header fields their Response names plus content-length:
//     no date, and a content type only where the real sidecar sends one
//     (net/http's sniffing only for Go sidecars, Response.Sniff). Request
//     bodies are read and discarded up to 1 MiB; a body above that gets
//     413. Malformed requests are refused by net/http itself, without a
//     request event. The package is for the emulator program and the tests,
//     never for the pod binary, so it may use net/http.
//   - Mux dispatches on a table of Routes. A Route names its allowed methods
//     and its Role, which says which behaviour knob (Options.ReadyBehaviour,
//     Options.QuitBehaviour) governs it, and may Refuse a request (peer,
//     setting) before the knobs apply; a Mux may put a Gate (a
//     middleware) before routing.
//   - A Profile is data: named listeners (the first is the main one), its
//     own flags, and a Bind that gives each listener a route table and
//     names the states. The Sidecar owns the lifecycle shared by every
//     sidecar (ref §12 item 7): starting, ready after a delay, shutdown on
//     request, exit with a code after a delay. The profiles, one file
//     each: envoy (ref §1) and its aliases osm (§2), kuma (§6) and appmesh
//     (§9); istio (§3); linkerd (§4); consul (§5); dapr (§7); cloudsql
//     (§8); vault (§10).
//   - Main is the program entry point behind `sidesync-emulator emulate`.
//
// # Events
//
// A Sidecar reports what happens as one line per event on Options.Events,
// written in a single Write as it happens:
//
//	<event> key=value key=value ... t=<unix nanoseconds>
//
// Values never contain spaces: bytes at or below 0x20 and at or above 0x7f
// are written as %XX, and an empty value is written as "-". ParseEvent
// reads a line back. The events, in the order they can first appear, where
// NAME is a listener of the profile (Envoy's only one is "admin"):
//
//	address name=NAME addr=HOST:PORT
//	                                one per listener, before any other
//	                                line, the main listener's first, as
//	                                soon as the ports are chosen
//	state state=STATE               at start and on every change (envoy,
//	                                its aliases, istio, consul:
//	                                PRE_INITIALIZING, INITIALIZING, LIVE,
//	                                DRAINING; the others: STARTING,
//	                                INITIALIZING, READY, and for dapr with
//	                                an app channel WAITING_FOR_APP)
//	listening name=NAME addr=HOST:PORT
//	                                per listener, once it accepts
//	request method=M path=P status=S peer=HOST:PORT listener=NAME
//	                                per request; S is the status code, or
//	                                hang, reset or eof; P has no query
//	quit-lost                       a shutdown request was lost
//	                                (Options.QuitLost): closed with no
//	                                answer, nothing changed
//	quit                            a shutdown request was accepted
//	exit code=N                     last line, when the sidecar has stopped
//
// A consumer that knows of one listener only can keep reading the addr of
// the first address line: it is the main listener's.
package emulator
