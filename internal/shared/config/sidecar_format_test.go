package config

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// TestFormatSidecar: the writer writes only what differs from the profile's defaults, and
// ParseSidecars reads back the very sidecar written.
func TestFormatSidecar(t *testing.T) {
	istio, _ := catalog.Profile("istio")
	vault, _ := catalog.Profile("vault")
	sql, _ := catalog.Profile("cloudsql")
	off := sql
	off.Ready, off.Quit = nil, nil
	native := sql.WithPorts(9190, 9191)
	native.Native, native.StartupProbe = true, true
	tests := []struct {
		profile string
		sc      sidecar.Sidecar
		want    string
	}{
		{"istio", istio.WithHost("::1"), "istio:ready=http://[::1]:15021/healthz/ready,quit=http://[::1]:15020/quitquitquit"},
		{"istio", istio.WithPorts(0, 15099), "istio:quit-port=15099"},
		{"vault", vault, "vault"},
		{"cloudsql", off, "cloudsql:ready=none,quit=none"},
		{"cloudsql", native, "cloudsql:ready-port=9190,quit-port=9191,native=true,startup-probe=true"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := FormatSidecar(tt.profile, tt.sc)
			if got != tt.want {
				t.Errorf("FormatSidecar = %q, want %q", got, tt.want)
			}
			parsed, err := ParseSidecars(got, func(string) (string, bool) { return "", false })
			if err != nil || len(parsed) != 1 {
				t.Fatalf("ParseSidecars(%q) = %v, %v", got, parsed, err)
			}
			if diff := cmp.Diff(tt.sc, parsed[0].Sidecar); diff != "" {
				t.Errorf("read back (-written +read):\n%s", diff)
			}
		})
	}
}

// FuzzFormatSidecar reads arbitrary --sidecar lists with ParseSidecars and writes each sidecar
// back with FormatSidecar: what it writes must read back as one sidecar of the same profile,
// with the same endpoints (readiness check and quit URL) and the same native and startup-probe
// marks, the settings FormatSidecar writes. FormatSidecar is the one writer of the syntax
// ParseSidecars reads.
func FuzzFormatSidecar(f *testing.F) {
	for _, s := range []string{
		"istio", "istio,cloudsql:ready-port=9190,quit-port=9191", "cloudsql:ready-port=9190,quit-port=9191,native=true",
		"linkerd:native=true,startup-probe=true", "cloudsql:ready=none,quit=none", "tcp:ready=tcp://127.0.0.1:5432,name=db",
		"istio:host=::1", "istio:quit-port=15099", "http:ready=http://localhost/health", "http:quit=http://[::1]:1/q",
		"envoy:ready=http://127.0.0.1:19000,quit=http://127.0.0.1:19000/quitquitquit", "consul:port=1", "vault",
		"linkerd:port=4192", "envoy:ready=http://127.0.0.1:1/x,quit-port=2", "istio:ready=http://127.0.0.1:15021/healthz/ready",
	} {
		f.Add(s)
	}
	noEnv := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, value string) {
		parsed, _ := ParseSidecars(value, noEnv)
		for _, p := range parsed {
			spec := FormatSidecar(p.Profile, p.Sidecar)
			again, err := ParseSidecars(spec, noEnv)
			if err != nil || len(again) != 1 || again[0].Profile != p.Profile {
				t.Fatalf("%q: FormatSidecar %q reads back as %+v, %v", value, spec, again, err)
			}
			want, got := p.Sidecar, again[0].Sidecar
			if !reflect.DeepEqual(endpointsOf(want), endpointsOf(got)) || want.Native != got.Native || want.StartupProbe != got.StartupProbe {
				t.Fatalf("%q: FormatSidecar %q reads back as\n%+v\nwant\n%+v", value, spec, got, want)
			}
		}
	})
}

// endpointsOf are what FormatSidecar writes of a sidecar's readiness check and quit call.
func endpointsOf(sc sidecar.Sidecar) [2]string {
	var e [2]string
	if sc.Ready != nil {
		e[0] = fmt.Sprint(sc.Ready.Kind, " ", sc.Ready.URL)
	}
	if sc.Quit != nil {
		e[1] = sc.Quit.URL
	}
	return e
}
