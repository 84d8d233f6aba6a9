package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/sidecar"
)

// TestAddressErrors: every URL-valued setting refuses a port outside 1-65535, a missing host, a
// colon without a port and a missing scheme, and says what to write instead.
func TestAddressErrors(t *testing.T) {
	const aroundPort = "http://127.0.0.1:"
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"tcp port too large", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1:99999"}, nil, `--sidecar: tcp: ready="tcp://127.0.0.1:99999": port "99999" is not in 1-65535`},
		{"tcp port zero", nil, []string{"SIDESYNC_SIDECARS=tcp:ready=tcp://db:0"}, `SIDESYNC_SIDECARS: tcp: ready="tcp://db:0": port "0" is not in 1-65535`},
		{"tcp without port", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1"}, nil, "has no port: write tcp://127.0.0.1:PORT"},
		{"tcp with empty port", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1:"}, nil, "empty port after the colon: write tcp://127.0.0.1:PORT"},
		{"tcp without host", []string{"--sidecar", "tcp:ready=tcp://:5432"}, nil, "has no host: write tcp://127.0.0.1:5432"},
		{"tcp with a path", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1:5432/db"}, nil, "must be tcp://HOST:PORT with nothing else: write tcp://127.0.0.1:5432"},
		{"tcp with a user", []string{"--sidecar", "tcp:ready=tcp://me@127.0.0.1:5432"}, nil, "must be tcp://HOST:PORT with nothing else: write tcp://127.0.0.1:5432"},
		{"tcp ready without scheme", []string{"--sidecar", "tcp:ready=127.0.0.1:5432"}, nil, "must be a URL: write http://127.0.0.1:5432 for an HTTP check, or tcp://127.0.0.1:5432 to wait for the port to accept connections"},
		{"tcp ready without slashes", []string{"--sidecar", "tcp:ready=http:127.0.0.1:5432"}, nil, "must be a URL: write http://127.0.0.1:5432 for an HTTP check, or tcp://127.0.0.1:5432 to wait"},
		{"--admin empty port", []string{"--admin", aroundPort}, nil, `--admin "http://127.0.0.1:": empty port after the colon: write http://127.0.0.1:PORT`},
		{"--admin not a number", []string{"--admin", aroundPort + "abc"}, nil, `--admin "http://127.0.0.1:abc": port "abc" is not in 1-65535`},
		{"--admin without host", []string{"--admin", "http://:15000"}, nil, `has no host: write http://127.0.0.1:15000`},
		{"--admin bare", []string{"--admin", "127.0.0.1:9901"}, nil, `--admin "127.0.0.1:9901": must be an http:// URL: write http://127.0.0.1:9901`},
		{"--admin without slashes", []string{"--admin", "http:127.0.0.1:9901"}, nil, `must be an http:// URL: write http://127.0.0.1:9901`},
		{"SIDESYNC_ADMIN bare localhost", nil, []string{"SIDESYNC_ADMIN=localhost:15000"}, `SIDESYNC_ADMIN="localhost:15000": must be an http:// URL: write http://localhost:15000`},
		{"--ready-url empty port", []string{"--ready-url", aroundPort + "/ready"}, nil, `empty port after the colon: write http://127.0.0.1:PORT/ready`},
		{"--ready-url bare", []string{"--ready-url", "localhost:15021/healthz/ready"}, nil, `must be an http:// URL: write http://localhost:15021/healthz/ready`},
		{"SIDESYNC_READY_URL bad port", nil, []string{"SIDESYNC_READY_URL=http://127.0.0.1:65536/"}, `SIDESYNC_READY_URL="http://127.0.0.1:65536/": port "65536" is not in 1-65535`},
		{"--quit-url bare", []string{"--quit-url", "127.0.0.1:15020/quitquitquit"}, nil, `must be an http:// URL: write http://127.0.0.1:15020/quitquitquit`},
		{"SIDESYNC_QUIT_URL list", nil, []string{"SIDESYNC_QUIT_URL=http://127.0.0.1:1/a,127.0.0.1:2/b"}, `"127.0.0.1:2/b": must be an http:// URL: write http://127.0.0.1:2/b`},
		{"http ready bare", []string{"--sidecar", "http:ready=127.0.0.1:8080/health"}, nil, `ready="127.0.0.1:8080/health": must be an http:// URL: write http://127.0.0.1:8080/health`},
		{"http quit bare", []string{"--sidecar", "http:quit=127.0.0.1:8080/quit"}, nil, `quit="127.0.0.1:8080/quit": must be an http:// URL: write http://127.0.0.1:8080/quit`},
		{"http quit empty port", []string{"--sidecar", "http:quit=" + aroundPort + "/quit"}, nil, `empty port after the colon: write http://127.0.0.1:PORT/quit`},
		{"http ready bad port", []string{"--sidecar", "http:ready=http://127.0.0.1:99999/x"}, nil, `port "99999" is not in 1-65535`},
		{"proxyEndpoint bare", nil, []string{"PROXY=true", "proxyEndpoint=127.0.0.1:15000/"}, `proxyEndpoint="127.0.0.1:15000/" (the article's contract): must be an http:// URL: write http://127.0.0.1:15000/`},
		{"proxyEndpoint empty port", nil, []string{"PROXY=true", "proxyEndpoint=" + aroundPort + "/"}, `empty port after the colon: write http://127.0.0.1:PORT/`},
		{"ENVOY_ADMIN_API bare", nil, []string{"ENVOY_ADMIN_API=localhost:15000"}, `ENVOY_ADMIN_API="localhost:15000" (scuttle): must be an http:// URL: write http://localhost:15000`},
		{"ENVOY_ADMIN_API empty port", nil, []string{"ENVOY_ADMIN_API=" + aroundPort}, `empty port after the colon: write http://127.0.0.1:PORT`},
		{"ISTIO_QUIT_API bare", nil, []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "ISTIO_QUIT_API=127.0.0.1:15020"}, `ISTIO_QUIT_API="127.0.0.1:15020" (scuttle): must be an http:// URL: write http://127.0.0.1:15020`},
		{"GENERIC_QUIT_ENDPOINTS bare", nil, []string{"GENERIC_QUIT_ENDPOINTS=127.0.0.1:9091/quitquitquit"}, `"127.0.0.1:9091/quitquitquit": must be an http:// URL: write http://127.0.0.1:9091/quitquitquit`},
		{"GENERIC_QUIT_ENDPOINTS port zero", nil, []string{"GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:0/q"}, `port "0" is not in 1-65535`},
		{"host empty", []string{"--sidecar", "istio:host="}, nil, `istio: host="": not a host name or IP address`},
		{"host with a port", []string{"--sidecar", "istio:host=127.0.0.1:80"}, nil, `host="127.0.0.1:80": not a host name or IP address (a port goes in port=, ready-port= or quit-port=)`},
		{"host with a path", []string{"--sidecar", "istio:host=localhost/x"}, nil, `host="localhost/x": not a host name or IP address`},
		{"host with a user", []string{"--sidecar", "istio:host=me@localhost"}, nil, `not a host name or IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			checkProblems(t, err, []string{tt.want})
		})
	}
}

// TestAddressesAccepted: the strict parsing keeps every valid form.
func TestAddressesAccepted(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want sidecar.Sidecar
	}{
		{"tcp IPv4", "tcp:ready=tcp://127.0.0.1:5432", sidecar.Sidecar{Name: "tcp", Ready: &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://127.0.0.1:5432"}}},
		{"tcp IPv6", "tcp:ready=tcp://[::1]:5432", sidecar.Sidecar{Name: "tcp", Ready: &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://[::1]:5432"}}},
		{"tcp name", "tcp:ready=tcp://localhost:65535", sidecar.Sidecar{Name: "tcp", Ready: &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://localhost:65535"}}},
		{"http without port", "http:ready=http://localhost/health", sidecar.Sidecar{Name: "http", Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://localhost/health"}}},
		{"http IPv6", "http:quit=http://[::1]:1/q", sidecar.Sidecar{Name: "http", Quit: &sidecar.Call{URL: "http://[::1]:1/q"}}},
		{"host IPv6", "vault:host=::1", sidecar.Sidecar{Name: "vault", Quit: withQuitURL(t, "vault", "http://[::1]:8200/agent/v1/quit")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeWait, []string{"--sidecar", tt.spec}, envOf())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff([]sidecar.Sidecar{tt.want}, cfg.Sidecars); diff != "" {
				t.Errorf("sidecars (-want +got):\n%s", diff)
			}
		})
	}
}

// withQuitURL is a profile's quit call moved to url.
func withQuitURL(t *testing.T, name, url string) *sidecar.Call {
	t.Helper()
	c := *profile(t, name).Quit
	c.URL = url
	return &c
}
