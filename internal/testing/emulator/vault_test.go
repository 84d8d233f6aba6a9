package emulator

import "testing"

// TestVaultEndpoints checks ref §10: 404 when the quit API is disabled,
// whatever the method; else 405 for a method other than POST; POST quits.
func TestVaultEndpoints(t *testing.T) {
	const agent = "admin"
	disabled := Options{ShutdownDisabled: true}
	checkEndpoints(t, "vault", []endpoint{
		{state: "ready", listener: agent, method: "GET", target: "/agent/v1/quit", status: 405},
		{state: "ready", listener: agent, method: "PUT", target: "/agent/v1/quit", status: 405},
		{state: "ready", listener: agent, method: "POST", target: "/agent/v1/quit", status: 200, quits: true},
		{state: "starting", listener: agent, method: "POST", target: "/agent/v1/quit", status: 200, quits: true},
		{state: "ready", opts: disabled, listener: agent, method: "POST", target: "/agent/v1/quit", status: 404},
		{state: "ready", opts: disabled, listener: agent, method: "GET", target: "/agent/v1/quit", status: 404},
		{state: "ready", listener: agent, method: "GET", target: "/agent/v1/quit/", status: 404},
		{state: "ready", listener: agent, method: "GET", target: "/v1/sys/health", status: 404},
		{state: "ready", listener: agent, method: "GET", target: "/ready", status: 404},
	})
}
