package emulator

import (
	"flag"
	"strings"
)

// Profile describes one kind of sidecar as data: its listeners, its own
// command-line knobs and its route tables. The Sidecar runs every profile
// the same way.
type Profile struct {
	// Name selects the profile on the command line, e.g. "envoy".
	Name string
	// Listeners names the sidecar's listeners. The first is the main one:
	// Sidecar.Addr and a plain --listen ADDR refer to it, and its address
	// event comes first.
	Listeners []ListenerSpec
	// Flags, when not nil, registers the profile's own knobs on fs,
	// writing into o.
	Flags func(fs *flag.FlagSet, o *Options)
	// Bind builds the profile's route tables and state names for one
	// Sidecar. It is called once, by New.
	Bind func(sc *Sidecar) Binding
}

// ListenerSpec describes one listener of a profile.
type ListenerSpec struct {
	// Name identifies the listener in --listen NAME=ADDR, in
	// Options.Addrs and in events.
	Name string
	// Port is the port the real sidecar uses, shown in the help text; the
	// emulator listens on 127.0.0.1:0 unless told otherwise.
	Port int
	// Help says what the real listener is.
	Help string
}

// Binding is a profile bound to one Sidecar.
type Binding struct {
	// Muxes maps every listener name of the profile to its route table and
	// not-found, wrong-method and fallback-header rules. Their Wrap fields
	// are set by the Sidecar.
	Muxes map[string]*Mux
	// State names the sidecar's visible state in phase p. It is consulted
	// on every phase change and on Sidecar.RefreshState, so a profile with
	// extra state of its own (Envoy's health-check flag) calls
	// RefreshState after changing it.
	State func(p Phase) string
}

// Profiles returns every known profile.
func Profiles() []Profile {
	return []Profile{
		Envoy(),
		envoyAlias("osm", 15000, "Envoy admin of Open Service Mesh, bound to 127.0.0.1 (ref §2)"),
		envoyAlias("appmesh", 9901, "Envoy admin of AWS App Mesh (ref §9)"),
		envoyAlias("kuma", 9901, "Envoy admin of Kuma, bound to 127.0.0.1 (ref §6)"),
		istioProfile(),
		linkerdProfile(),
		consulProfile(),
		daprProfile(),
		cloudSQLProfile(),
		vaultProfile(),
	}
}

// LookupProfile returns the profile called name.
func LookupProfile(name string) (Profile, bool) {
	for _, p := range Profiles() {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// hasListener reports whether the profile has a listener called name.
func (p Profile) hasListener(name string) bool {
	for _, l := range p.Listeners {
		if l.Name == name {
			return true
		}
	}
	return false
}

// listenerNames lists the listener names for messages, main first.
func (p Profile) listenerNames() string {
	names := make([]string, len(p.Listeners))
	for i, l := range p.Listeners {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

// Generic state names for profiles whose sidecar has none of its own: the
// lifecycle of ref §12 item 7.
const (
	stateStarting     = "STARTING"
	stateInitializing = "INITIALIZING"
	stateReady        = "READY"
)

// lifecycleState names phase p with the generic state names.
func lifecycleState(p Phase) string {
	switch p {
	case PhaseStarting:
		return stateStarting
	case PhaseInitializing:
		return stateInitializing
	}
	return stateReady
}
