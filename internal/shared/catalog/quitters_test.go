package catalog

import (
	"testing"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// TestQuitBy: an app that runs linkerd-await with -S or --shutdown before "--" tells Linkerd's
// proxy to quit; no other row has a quitter.
func TestQuitBy(t *testing.T) {
	tests := []struct {
		name          string
		command, args []string
		want          bool
	}{
		{"--shutdown", []string{"linkerd-await", "--shutdown", "--", "run"}, nil, true},
		{"-S, by its path, in args", []string{"/usr/lib/linkerd/linkerd-await"}, []string{"-S", "--", "run"}, true},
		{"--shutdown=true", []string{"linkerd-await", "--timeout=2m", "--shutdown=true", "--", "run"}, nil, true},
		{"without the flag", []string{"linkerd-await", "--", "run", "--shutdown"}, nil, false},
		{"--shutdown=false", []string{"linkerd-await", "--shutdown=false", "--", "run"}, nil, false},
		{"another program", []string{"run", "--shutdown"}, nil, false},
		{"no command", nil, nil, false},
	}
	linkerd, _ := Lookup("linkerd")
	for _, tt := range tests {
		c := &manifest.Container{Name: "job", Command: tt.command, Args: tt.args}
		if got := linkerd.QuitBy(c); got != tt.want {
			t.Errorf("%s: QuitBy(%q %q) = %v, want %v", tt.name, tt.command, tt.args, got, tt.want)
		}
		for _, e := range Entries() {
			if e.Name != "linkerd" && e.QuitBy(c) {
				t.Errorf("%s: %s's QuitBy(%q) is true", tt.name, e.Name, tt.command)
			}
		}
	}
}

// TestQuitBesideEnvoyAdmin: scuttle's Envoy admin on 15000 is Istio's, whose agent takes the quit
// on its quit URL's port; no other port has a row.
func TestQuitBesideEnvoyAdmin(t *testing.T) {
	for _, tt := range []struct {
		admin, want string
		ok          bool
	}{{"15000", "15020", true}, {"9901", "", false}, {"015000", "", false}, {"", "", false}} {
		if got, ok := QuitBesideEnvoyAdmin(tt.admin); got != tt.want || ok != tt.ok {
			t.Errorf("QuitBesideEnvoyAdmin(%q) = %q, %v; want %q, %v", tt.admin, got, ok, tt.want, tt.ok)
		}
	}
}
