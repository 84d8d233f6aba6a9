package detect

import (
	"testing"

	"github.com/sidesync/sidesync/sidecar"
)

func TestManifestSidecar(t *testing.T) {
	const sqlImage = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0"
	tests := []struct {
		name string
		c    ManifestContainer
		want string // "" when no known sidecar
	}{
		{"istio by name", ManifestContainer{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.0"}, "istio"},
		{"native linkerd with a startup probe", ManifestContainer{Name: "linkerd-proxy", Native: true, StartupProbe: true}, "linkerd:native=true,startup-probe=true"},
		{"a startup probe counts only for a native sidecar", ManifestContainer{Name: "linkerd-proxy", StartupProbe: true}, "linkerd"},
		{"cloudsql by image, its ports from its flags", ManifestContainer{Name: "db", Image: sqlImage,
			Args: []string{"--health-check", "--http-port", "9190", "--quitquitquit", "--admin-port=9191", "p:r:i"}}, "cloudsql:ready-port=9190,quit-port=9191"},
		{"cloudsql with default ports", ManifestContainer{Name: "db", Image: sqlImage, Command: []string{"/cloud-sql-proxy", "--health-check", "--quitquitquit"}}, "cloudsql"},
		{"cloudsql without its endpoints", ManifestContainer{Name: "db", Image: sqlImage, Args: []string{"--quitquitquit=false", "p:r:i"}}, "cloudsql:ready=none,quit=none"},
		{"native cloudsql", ManifestContainer{Name: "db", Image: sqlImage, Native: true, Args: []string{"--health-check", "--quitquitquit"}}, "cloudsql:native=true"},
		{"an envoy named envoy is nobody's", ManifestContainer{Name: "envoy", Image: "envoyproxy/envoy:v1.36"}, ""},
		{"the app", ManifestContainer{Name: "app", Image: "example/app"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, ok := ManifestSidecar(tt.c)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("ManifestSidecar = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	istio, _ := sidecar.Profile("istio")
	moved := istio.WithHost("::1")
	if got, want := Spec("istio", moved), "istio:ready=http://[::1]:15021/healthz/ready,quit=http://[::1]:15020/quitquitquit"; got != want {
		t.Errorf("Spec of a moved host = %q, want %q", got, want)
	}
	if got := Spec("istio", istio.WithPorts(0, 15099)); got != "istio:quit-port=15099" {
		t.Errorf("Spec of a moved quit port = %q", got)
	}
	vault, _ := sidecar.Profile("vault")
	if got := Spec("vault", vault); got != "vault" {
		t.Errorf("Spec of vault's defaults = %q, want vault", got)
	}
}
