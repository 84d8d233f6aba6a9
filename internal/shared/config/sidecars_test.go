package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

func profile(t *testing.T, name string) sidecar.Sidecar {
	t.Helper()
	sc, ok := catalog.Profile(name)
	if !ok {
		t.Fatalf("no profile %q", name)
	}
	return sc
}

func TestSidecarSpecs(t *testing.T) {
	istio, cloudsql, linkerd, dapr := profile(t, "istio"), profile(t, "cloudsql"), profile(t, "linkerd"), profile(t, "dapr")
	movedCloudSQL := profile(t, "cloudsql")
	movedCloudSQL.Ready.URL, movedCloudSQL.Quit.URL = "http://127.0.0.1:19090/startup", "http://localhost:19091/quitquitquit"
	movedLinkerd := profile(t, "linkerd")
	movedLinkerd.Ready.URL, movedLinkerd.Quit.URL = "http://127.0.0.1:4192/ready", "http://127.0.0.1:4192/shutdown"
	localIstio := profile(t, "istio")
	localIstio.Ready.URL, localIstio.Quit.URL = "http://localhost:15021/healthz/ready", "http://localhost:15020/quitquitquit"
	tokenDapr := profile(t, "dapr")
	tokenDapr.Quit.Header = []sidecar.Header{{Name: "dapr-api-token", Value: "s3cret"}}
	nativeIstio := profile(t, "istio")
	nativeIstio.Native = true
	istio2 := profile(t, "istio")
	istio2.Name = "istio-2"
	tests := []struct {
		name string
		args []string
		env  []string
		want []sidecar.Sidecar
	}{
		{"one profile", []string{"--sidecar", "istio"}, nil, []sidecar.Sidecar{istio}},
		{"repeated flag", []string{"--sidecar", "istio", "--sidecar=cloudsql"}, nil, []sidecar.Sidecar{istio, cloudsql}},
		{"list variable", nil, []string{"SIDESYNC_SIDECARS=istio, cloudsql"}, []sidecar.Sidecar{istio, cloudsql}},
		{"mirror variable", nil, []string{"SIDESYNC_SIDECAR=linkerd"}, []sidecar.Sidecar{linkerd}},
		{"ports", nil, []string{"SIDESYNC_SIDECARS=cloudsql:ready-port=19090,quit-port=19091,linkerd:port=4192"}, []sidecar.Sidecar{movedCloudSQL, movedLinkerd}},
		{"host", []string{"--sidecar", "istio:host=localhost"}, nil, []sidecar.Sidecar{localIstio}},
		{"dapr token", []string{"--sidecar", "dapr"}, []string{"DAPR_API_TOKEN=s3cret"}, []sidecar.Sidecar{tokenDapr}},
		{"dapr without token", []string{"--sidecar", "dapr"}, []string{"DAPR_API_TOKEN="}, []sidecar.Sidecar{dapr}},
		{"native", []string{"--sidecar", "istio:native=true"}, nil, []sidecar.Sidecar{nativeIstio}},
		{"same profile twice", []string{"--sidecar", "istio,istio"}, nil, []sidecar.Sidecar{istio, istio2}},
		{"http", []string{"--sidecar", "http:method=put,status=204,ready=http://127.0.0.1:8080/health,quit=http://127.0.0.1:8080/quit,name=app"}, nil, []sidecar.Sidecar{{
			Name:  "app",
			Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:8080/health", Status: 204},
			Quit:  &sidecar.Call{URL: "http://127.0.0.1:8080/quit", Method: "PUT"},
		}}},
		{"tcp", []string{"--sidecar", "tcp:ready=tcp://127.0.0.1:5432,name=db"}, nil, []sidecar.Sidecar{{
			Name: "db", Ready: &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://127.0.0.1:5432"},
		}}},
		{"envoy admin elsewhere", []string{"--sidecar", "envoy:ready=http://127.0.0.1:19000,quit=http://127.0.0.1:19000/quitquitquit"}, nil, []sidecar.Sidecar{{
			Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:19000"}, Quit: &sidecar.Call{URL: "http://127.0.0.1:19000/quitquitquit"},
		}}},
		{"quit none", []string{"--sidecar", "linkerd:quit=none"}, nil, []sidecar.Sidecar{{Name: "linkerd", Ready: linkerd.Ready}}},
		{"admin and sidecar together", []string{"--admin", "http://127.0.0.1:15000", "--sidecar", "cloudsql"}, nil, []sidecar.Sidecar{envoy("http://127.0.0.1:15000"), cloudsql}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, cfg.Sidecars); diff != "" {
				t.Errorf("sidecars (-want +got):\n%s", diff)
			}
			if cfg.Detect {
				t.Error("Detect set although sidecars are configured")
			}
		})
	}
}

func TestSidecarSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown profile", []string{"--sidecar", "envoyy"}, nil, `unknown sidecar "envoyy" (known: envoy, osm, istio`},
		{"unknown setting", []string{"--sidecar", "istio:prot=1"}, nil, `--sidecar: istio: prot="1": unknown setting`},
		{"bad port", nil, []string{"SIDESYNC_SIDECARS=linkerd:port=99999"}, `SIDESYNC_SIDECARS: linkerd: port="99999": not a port`},
		{"setting first", []string{"--sidecar", "port=1"}, nil, `a setting before any sidecar name`},
		{"http without URLs", []string{"--sidecar", "http"}, nil, "the http sidecar needs ready=URL"},
		{"tcp without address", []string{"--sidecar", "tcp"}, nil, "the tcp sidecar needs ready=tcp://HOST:PORT"},
		{"bad ready URL", []string{"--sidecar", "http:ready=ftp://x"}, nil, "must be an http:// URL"},
		{"bad native", []string{"--sidecar", "istio:native=maybe"}, nil, `native="maybe": not a boolean`},
		{"remote quit", []string{"--sidecar", "istio:host=10.0.0.3"}, nil, "quit URL http://10.0.0.3:15020/quitquitquit is not on a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: got %v, want a usage error with %q", err, tt.want)
			}
		})
	}
}

func TestDetectOptions(t *testing.T) {
	cfg, err := Parse(ModeWait, []string{"--pod-info", "/x/podinfo", "--kube-api=false"}, envOf("SIDESYNC_SERVICE_ACCOUNT_DIR=/x/sa"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Detect || cfg.PodInfoDir != "/x/podinfo" || cfg.KubeAPI || cfg.ServiceAccountDir != "/x/sa" {
		t.Errorf("got %+v", cfg)
	}
}
