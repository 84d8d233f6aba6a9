package emulator

import (
	"slices"
	"testing"
)

// TestEnvoyAliases: osm, appmesh and kuma are the Envoy admin with another
// name (ref §2, §6, §9): the same route table and the same answers.
func TestEnvoyAliases(t *testing.T) {
	envoy := New(Envoy(), Options{})
	for _, name := range []string{"osm", "appmesh", "kuma"} {
		alias := New(mustProfile(t, name), Options{})
		if !slices.EqualFunc(alias.binding.Muxes[adminListener].Routes, envoy.binding.Muxes[adminListener].Routes,
			func(a, b Route) bool {
				return a.Path == b.Path && slices.Equal(a.Methods, b.Methods) && a.Role == b.Role
			}) {
			t.Errorf("%s routes differ from envoy's", name)
		}
		checkEndpoints(t, name, []endpoint{
			{state: "ready", listener: "admin", method: "GET", target: "/ready", status: 200, body: "LIVE\n", ctype: textType},
			{state: "initializing", listener: "admin", method: "GET", target: "/ready", status: 503, body: "INITIALIZING\n", ctype: textType},
			{state: "starting", listener: "admin", method: "GET", target: "/ready", status: 503, body: "PRE_INITIALIZING\n", ctype: textType},
			{state: "ready", listener: "admin", method: "GET", target: "/quitquitquit", status: 405, body: "Method GET not allowed, POST required.", ctype: textType},
			{state: "ready", listener: "admin", method: "POST", target: "/quitquitquit", status: 200, body: "OK\n", ctype: textType, quits: true},
		})
	}
}

// TestStatFilter: /stats?filter= without regexp (ref §1.6, a documented
// simplification): a literal with optional anchors and backslash escapes.
func TestStatFilter(t *testing.T) {
	for _, tc := range []struct {
		filter, name string
		want         bool
	}{
		{"", "server.state", true},
		{"state", "server.state", true},
		{"^server", "server.state", true},
		{"^state", "server.state", false},
		{"state$", "server.state", true},
		{"server$", "server.state", false},
		{`^server\.state$`, "server.state", true},
		{`^server\.state$`, "server.state.x", false},
		{"^server.live$", "server.live", true},
		{`server\.`, "server.live", true},
		{`a\$`, "xa$", true},
		{`^(server\.state|listener_manager\.workers_started)`, "server.state", false},
		{"^$", "server.state", false},
	} {
		if got := statFilter(tc.filter)(tc.name); got != tc.want {
			t.Errorf("statFilter(%q)(%q) = %v, want %v", tc.filter, tc.name, got, tc.want)
		}
	}
}
