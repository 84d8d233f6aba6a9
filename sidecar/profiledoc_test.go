package sidecar

import (
	"flag"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/gendoc"
)

var update = flag.Bool("update", false, "rewrite README.md's generated profile table from the profile table")

// TestREADMEProfiles: the README's profile table is the profile table rendered, so that a
// profile added, or an endpoint or note changed, shows in the README (go generate ./sidecar).
func TestREADMEProfiles(t *testing.T) {
	gendoc.Check(t, "../README.md", "profiles", renderProfiles(ProfileDocs()), "go generate ./sidecar", *update)
}

// renderProfiles is the README's table of profiles.
func renderProfiles(docs []ProfileDoc) string {
	var b strings.Builder
	b.WriteString("<!-- generated from sidecar/profile.go by `go generate ./sidecar`: edit the table there -->\n")
	b.WriteString("| profile | ready when | quit with | notes |\n| --- | --- | --- | --- |\n")
	for _, d := range docs {
		b.WriteString("| `" + d.Name + "` | " + d.ReadyWhen + " | " + d.QuitWith + " | " + d.Notes + " |\n")
	}
	return b.String() + "\n" // the blank line ends the table before the end marker

}

// TestProfileDocs: every profile is documented, and a generic profile (one without endpoints
// of its own) says what the user gives, since nothing can be derived.
func TestProfileDocs(t *testing.T) {
	for _, p := range profiles() {
		d, ok := DescribeProfile(p.Name)
		if !ok {
			t.Fatalf("DescribeProfile(%q) found nothing", p.Name)
		}
		if d.Notes == "" || d.ReadyWhen == "" || d.QuitWith == "" {
			t.Errorf("%s: incomplete documentation %+v", p.Name, d)
		}
		if p.Ready == nil && p.Quit == nil && (p.readyWhen == "" || p.quitWith == "") {
			t.Errorf("%s has no endpoints: its row must say what the user gives (readyWhen, quitWith)", p.Name)
		}
		if strings.Contains(d.ReadyWhen+d.QuitWith+d.Notes, "|") || strings.Contains(d.ReadyWhen+d.QuitWith+d.Notes, "\n") {
			t.Errorf("%s: a documentation text has a | or a line break, which would break the README's table", p.Name)
		}
	}
	if _, ok := DescribeProfile("nope"); ok {
		t.Error("DescribeProfile found a profile that does not exist")
	}
	if got, want := len(ProfileDocs()), len(ProfileNames()); got != want {
		t.Errorf("%d docs for %d profiles", got, want)
	}
}

func TestDescribeEndpoints(t *testing.T) {
	tests := []struct {
		name        string
		check       *Check
		call        *Call
		ready, quit string
	}{
		{"none", nil, nil, "nothing to wait for", "(none)"},
		{"envoy", &Check{Kind: EnvoyAdmin, URL: "http://127.0.0.1:9901"}, &Call{URL: "http://127.0.0.1:9901/quitquitquit"},
			"`GET http://127.0.0.1:9901/ready` answers 200 (`LIVE`)", "`POST http://127.0.0.1:9901/quitquitquit`"},
		{"any 2xx", &Check{URL: "http://127.0.0.1:1/h"}, &Call{URL: "http://127.0.0.1:1/q", Method: "PUT"},
			"`GET http://127.0.0.1:1/h` answers 2xx", "`PUT http://127.0.0.1:1/q`"},
		{"one status", &Check{URL: "http://127.0.0.1:1/h", Method: "HEAD", Status: 204}, nil, "`HEAD http://127.0.0.1:1/h` answers 204", "(none)"},
		{"tcp", &Check{Kind: TCP, URL: "tcp://127.0.0.1:5432"}, nil, "`tcp://127.0.0.1:5432` accepts a connection", "(none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeCheck(tt.check); got != tt.ready {
				t.Errorf("describeCheck = %q, want %q", got, tt.ready)
			}
			if got := describeCall(tt.call); got != tt.quit {
				t.Errorf("describeCall = %q, want %q", got, tt.quit)
			}
		})
	}
}
