package config

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// TestPortAmbiguous: port= is refused where the readiness check and the quit call are on
// different ports, which would send the quit to the health port (404) and leave the sidecar
// running.
func TestPortAmbiguous(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"cloudsql", "cloudsql:port=9090", "--sidecar: cloudsql: port= is ambiguous: the readiness check (9090) and the quit call (9091) are on different ports; use ready-port=N and/or quit-port=N"},
		{"consul", "consul:port=1", "--sidecar: consul: port= is ambiguous: the readiness check (19000) and the quit call (20600) are on different ports; use ready-port=N and/or quit-port=N"},
		{"istio", "istio:port=1", "--sidecar: istio: port= is ambiguous: the readiness check (15021) and the quit call (15020)"},
		{"http with two ports", "http:ready=http://127.0.0.1:8080/health,quit=http://127.0.0.1:8081/quit,port=9000", "--sidecar: http: port= is ambiguous: the readiness check (8080) and the quit call (8081)"},
		{"ready= override splits the ports", "linkerd:ready=http://127.0.0.1:9999/ready,port=4192", "--sidecar: linkerd: port= is ambiguous: the readiness check (9999) and the quit call (4191)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, []string{"--sidecar", tt.spec}, envOf())
			checkProblems(t, err, []string{tt.want})
		})
	}
}

// TestPortPerProfile: port= is accepted on a profile exactly when its readiness check and quit
// call share a port (or it has only one of them).
func TestPortPerProfile(t *testing.T) {
	for _, name := range catalog.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			sc := profile(t, name)
			shared := sc.Ready == nil || sc.Quit == nil || explicitPort(t, sc.Ready.URL) == explicitPort(t, sc.Quit.URL)
			_, err := Parse(ModeWait, []string{"--sidecar", name + ":port=4192"}, envOf())
			accepted := err == nil || !strings.Contains(err.Error(), "port= is ambiguous")
			if accepted != shared {
				t.Errorf("port= accepted: got %v, want %v (ready %v, quit %v): %v", accepted, shared, sc.Ready, sc.Quit, err)
			}
		})
	}
}

func explicitPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Port() == "" {
		t.Fatalf("profile URL %q has no explicit port", raw)
	}
	return u.Port()
}

// TestPortShared: port= moves both where they share a port, also after a quit= override.
func TestPortShared(t *testing.T) {
	linkerd := profile(t, "linkerd").WithPorts(4192, 4192)
	cloudsql := profile(t, "cloudsql")
	cloudsql.Quit = &sidecar.Call{URL: "http://localhost:19090/quitquitquit", Hints: cloudsql.Quit.Hints}
	cloudsql.Ready = &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:19090/startup"}
	cfg, err := Parse(ModeWait, []string{"--sidecar", "linkerd:port=4192", "--sidecar", "cloudsql:port=19090,quit=http://localhost:9090/quitquitquit"}, envOf())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff([]sidecar.Sidecar{linkerd, cloudsql}, cfg.Sidecars); diff != "" {
		t.Errorf("sidecars (-want +got):\n%s", diff)
	}
}

// TestSidecarUsageExample: --help shows port= only where it is unambiguous.
func TestSidecarUsageExample(t *testing.T) {
	var b bytes.Buffer
	PrintFlags(&b)
	if got := b.String(); strings.Contains(got, "cloudsql:port=") || !strings.Contains(got, "cloudsql:ready-port=9090,quit-port=9091") {
		t.Errorf("--sidecar usage shows an ambiguous port=:\n%s", got)
	}
}

// TestDisabledStillValidates: --disabled (or its variable) does not hide mistakes; every problem
// is still reported, and a valid disabled config has no sidecars.
func TestDisabledStillValidates(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"bad spec with --disabled", []string{"--disabled", "--sidecar", "istio:prot=1"}, nil, []string{`--sidecar: istio: prot="1": unknown setting`}},
		{"bad address with SIDESYNC_DISABLED", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1:99999"}, []string{"SIDESYNC_DISABLED=true"}, []string{`port "99999" is not in 1-65535`}},
		{"ambiguous port with --disabled", []string{"--disabled", "--sidecar", "cloudsql:port=9090"}, nil, []string{"port= is ambiguous"}},
		{"several problems with --disabled", []string{"--disabled", "--sidecar", "http", "--sidecar", "tcp"}, nil, []string{"the http sidecar needs", "the tcp sidecar needs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			checkProblems(t, err, tt.want)
		})
	}
	cfg, err := Parse(ModeWait, []string{"--disabled", "--sidecar", "istio", "--admin", "http://127.0.0.1:15000"}, envOf())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff(with(disabled), cfg, cmpConfig...); diff != "" {
		t.Errorf("disabled config (-want +got):\n%s", diff)
	}
}
