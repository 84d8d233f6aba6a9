package emulator

// Profile describes one kind of sidecar.
type Profile struct {
	// Name selects the profile on the command line, e.g. "envoy".
	Name string
	// Bind builds the profile's routes and state names for one Sidecar.
	// It is called once, by New.
	Bind func(sc *Sidecar) Binding
}

// Binding is a profile bound to one Sidecar.
type Binding struct {
	// Mux holds the route table and the profile's not-found, wrong-method
	// and fallback-header rules. Its Wrap field is set by the Sidecar.
	Mux Mux
	// State names the sidecar's visible state in phase p. It is consulted
	// on every phase change and on Sidecar.RefreshState, so a profile with
	// extra state of its own (Envoy's health-check flag) calls
	// RefreshState after changing it.
	State func(p Phase) string
}

// Profiles returns every known profile.
func Profiles() []Profile {
	return []Profile{Envoy()}
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
