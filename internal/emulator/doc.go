// Package emulator runs emulated Kubernetes sidecars: real programs that
// listen on loopback and answer a sidecar's admin endpoints exactly as the
// real sidecar does, to the status code and body. The tests of sidesync and
// `sidesync demo` run them instead of a real Envoy.
//
// The source of truth for every answer is
// shared/reference/sidecar-protocols.md; comments cite its sections as
// "ref §N".
//
// # Layers
//
//   - Server is a deliberately small HTTP/1.1 server written on package net.
//     The package is linked into the production sidesync binary, which must
//     not link net/http (size and RSS budget), so no non-test file here may
//     import net/http or anything that imports it; imports_test.go checks
//     this. Each connection carries exactly one request and is then closed
//     ("connection: close" is valid HTTP/1.1). Request bodies are read and
//     discarded: Content-Length bodies and chunked bodies (decoded) up to
//     1 MiB; a body above that gets 413 and any transfer coding other than
//     chunked gets 501.
//   - Mux dispatches on a table of Routes. A Route names its allowed methods
//     and its Role, which says which behaviour knob (Options.ReadyBehaviour,
//     Options.QuitBehaviour) governs it.
//   - A Profile binds one sidecar's route table and state names to a
//     Sidecar, which owns the lifecycle shared by every sidecar (ref §12
//     item 7): starting, ready after a delay, shutdown on request, exit with
//     a code after a delay. Envoy (ref §1) is the first profile.
//   - Main is the program entry point behind `sidesync emulate`.
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
// reads a line back. The events, in the order they can first appear:
//
//	address addr=HOST:PORT          first line, as soon as the port is chosen
//	state state=NAME                at start and on every change (Envoy:
//	                                PRE_INITIALIZING, INITIALIZING, LIVE, DRAINING)
//	listening addr=HOST:PORT        once connections are accepted
//	request method=M path=P status=S peer=HOST:PORT
//	                                per request; S is the status code, or
//	                                hang, reset or eof; P has no query
//	quit                            a shutdown request was accepted
//	exit code=N                     last line, when the sidecar has stopped
package emulator
