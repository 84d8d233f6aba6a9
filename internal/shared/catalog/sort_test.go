package catalog_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// podOf reads a pod template given as JSON.
func podOf(t testing.TB, js string) *manifest.PodView {
	t.Helper()
	obj, err := manifest.DecodeJSONObject([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	p, err := manifest.ReadPod(obj, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sorted is a pod as Sort sorts it, in words: "istio-proxy: istio", "job: app", ...
func sorted(p *catalog.Pod) []string {
	var out []string
	for _, s := range p.Sidecars {
		name := s.Name()
		if name == "" {
			name = "unknown"
		}
		if s.Native {
			name += " native"
		}
		if s.NativeMaybe {
			name += " maybe-native"
		}
		if s.Requested {
			name += " requested"
		}
		out = append(out, s.ContainerName()+": "+name)
	}
	for _, s := range p.Stopped {
		out = append(out, s.Container.Name+": stopped by "+s.Entry.Name)
	}
	for _, c := range p.Apps {
		out = append(out, c.Name+": app")
	}
	return out
}

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		pod  string
		want []string
	}{
		{"OSM's envoy, as its webhook leaves the pod, with a command", `{"metadata":{"labels":{"osm-proxy-uuid":"5f3e"}},"spec":{
			"initContainers":[{"name":"osm-init","image":"openservicemesh/init:v1.2.0"}],
			"containers":[{"name":"job","image":"example/job","command":["/job"]},
			{"name":"envoy","image":"envoyproxy/envoy-distroless:v1.24","command":["envoy"],"args":["--config-path","/etc/envoy/bootstrap.yaml"]}]}}`,
			[]string{"envoy: osm", "job: app"}},
		{"a container named envoy without OSM's label is nobody's", `{"spec":{"containers":[{"name":"job"},{"name":"envoy","image":"envoyproxy/envoy:v1.36","command":["envoy"]}]}}`,
			[]string{"job: app", "envoy: app"}},
		{"App Mesh's envoy by its image", `{"spec":{"containers":[{"name":"job"},{"name":"envoy","image":"840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29"}]}}`,
			[]string{"envoy: appmesh", "job: app"}},
		{"Airflow's XCom sidecar is its orchestrator's", `{"spec":{"containers":[{"name":"base","image":"python:3.12","command":["python","-c","print(1)"]},
			{"name":"airflow-xcom-sidecar","image":"alpine","command":["sh","-c","trap \"exit 0\" INT; while true; do sleep 1; done;"]}]}}`,
			[]string{"airflow-xcom-sidecar: stopped by airflow-xcom", "base: app"}},
		{"Tekton's sidecars in a TaskRun's pod", `{"metadata":{"labels":{"tekton.dev/taskRun":"build-1","app.kubernetes.io/managed-by":"tekton-pipelines"}},"spec":{
			"containers":[{"name":"step-build","image":"golang","command":["/tekton/bin/entrypoint"]},{"name":"sidecar-docker","image":"docker:dind"}]}}`,
			[]string{"sidecar-docker: stopped by tekton-sidecar", "step-build: app"}},
		{"GKE's Cloud Storage FUSE sidecar, as a regular container", `{"metadata":{"annotations":{"gke-gcsfuse/volumes":"true"}},"spec":{"containers":[
			{"name":"gke-gcsfuse-sidecar","image":"gke.gcr.io/gcs-fuse-csi-driver-sidecar-mounter:v1.4.3-gke.2","args":["--v=5"]},{"name":"train","image":"x"}]}}`,
			[]string{"gke-gcsfuse-sidecar: stopped by gke-gcsfuse", "train: app"}},
		{"a container called sidecar-x elsewhere is an app", `{"spec":{"containers":[{"name":"main"},{"name":"sidecar-x"}]}}`,
			[]string{"main: app", "sidecar-x: app"}},
		{"a native sidecar nobody knows", `{"spec":{"initContainers":[{"name":"log","image":"fluent/fluent-bit","restartPolicy":"Always"},{"name":"setup"}],"containers":[{"name":"job"}]}}`,
			[]string{"log: unknown native", "job: app"}},
		{"init containers with restartPolicy Never or OnFailure are no sidecars", `{"spec":{"initContainers":[{"name":"a","restartPolicy":"OnFailure"},{"name":"b","restartPolicy":"Never"}],"containers":[{"name":"job"}]}}`,
			[]string{"job: app"}},
		{"Dapr's mark and its container are one sidecar", `{"metadata":{"annotations":{"dapr.io/enabled":"true"}},"spec":{"containers":[{"name":"job"},{"name":"daprd","image":"ghcr.io/dapr/daprd:1.16"}]}}`,
			[]string{"daprd: dapr", "job: app"}},
		{"an injection request announces a sidecar not there yet", `{"metadata":{"labels":{"sidecar.istio.io/inject":"true"},"annotations":{"vault.hashicorp.com/agent-inject":"true"}},"spec":{"containers":[{"name":"job"}]}}`,
			[]string{"istio-proxy: istio maybe-native requested", "vault-agent: vault requested", "job: app"}},
		{"asked for a native sidecar", `{"metadata":{"labels":{"sidecar.istio.io/inject":"true"},"annotations":{"sidecar.istio.io/nativeSidecar":"true"}},"spec":{"containers":[{"name":"job"}]}}`,
			[]string{"istio-proxy: istio native requested", "job: app"}},
		{"asked for a classic sidecar", `{"metadata":{"annotations":{"sidecar.istio.io/inject":"true","sidecar.istio.io/nativeSidecar":"false"}},"spec":{"containers":[{"name":"job"}]}}`,
			[]string{"istio-proxy: istio requested", "job: app"}},
		{"Vault's pre-populate-only is no sidecar", `{"metadata":{"annotations":{"vault.hashicorp.com/agent-inject":"true","vault.hashicorp.com/agent-pre-populate-only":"true"}},"spec":{"containers":[{"name":"job"}]}}`,
			[]string{"job: app"}},
		{"an injected native Istio", `{"metadata":{"annotations":{"sidecar.istio.io/status":"{\"initContainers\":[\"istio-validation\",\"istio-proxy\"]}"}},"spec":{
			"initContainers":[{"name":"istio-validation"},{"name":"istio-proxy","restartPolicy":"Always","startupProbe":{"httpGet":{"port":15021}}}],"containers":[{"name":"job"}]}}`,
			[]string{"istio-proxy: istio native", "job: app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sorted(catalog.Sort(podOf(t, tt.pod), catalog.Options{Requests: true}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sorted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequestsOnlyBeforeAdmission: in a running pod, an injection request announces nothing;
// the injector's marks tell what it did.
func TestRequestsOnlyBeforeAdmission(t *testing.T) {
	p := podOf(t, `{"metadata":{"labels":{"sidecar.istio.io/inject":"true"}},"spec":{"containers":[{"name":"job"}]}}`)
	if got := sorted(catalog.Sort(p, catalog.Options{})); !cmp.Equal(got, []string{"job: app"}) {
		t.Errorf("sorted %q, want the app alone", got)
	}
}

// endpoints says a sidecar's endpoints in one line: "ready URL, quit URL" with "-" for none.
func endpoints(s *catalog.Sidecar) string {
	r, q := "-", "-"
	if s.Profile.Ready != nil {
		r = s.Profile.Ready.URL
	}
	if s.Profile.Quit != nil {
		q = s.Profile.Quit.URL
	}
	return r + ", " + q
}

// TestCloudSQLSettings: the Cloud SQL Auth Proxy's health check and quit endpoint, and their
// ports, are read from its flags and from its CSQL_PROXY_ variables (the proxy's own example and
// its operator use them), a flag winning over its variable.
func TestCloudSQLSettings(t *testing.T) {
	const image = `"image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0"`
	tests := []struct {
		name, container string
		want            string
		readyOff        string // "" on, else the fix
		quitOff         string
	}{
		{"flags", `{"name":"sql",` + image + `,"args":["--health-check","--http-port","9190","--quitquitquit","--admin-port=9191","p:r:i"]}`,
			"http://127.0.0.1:9190/startup, http://localhost:9191/quitquitquit", "", ""},
		{"variables", `{"name":"sql",` + image + `,"args":["p:r:i"],"env":[{"name":"CSQL_PROXY_HEALTH_CHECK","value":"true"},
			{"name":"CSQL_PROXY_HTTP_PORT","value":"9190"},{"name":"CSQL_PROXY_QUITQUITQUIT","value":"true"},{"name":"CSQL_PROXY_ADMIN_PORT","value":"9191"}]}`,
			"http://127.0.0.1:9190/startup, http://localhost:9191/quitquitquit", "", ""},
		{"a flag wins over its variable", `{"name":"sql",` + image + `,"args":["--http-port=9290","--health-check","--quitquitquit=false"],
			"env":[{"name":"CSQL_PROXY_HTTP_PORT","value":"9190"},{"name":"CSQL_PROXY_QUITQUITQUIT","value":"true"}]}`,
			"http://127.0.0.1:9290/startup, -", "", "add --quitquitquit"},
		{"a variable set to false", `{"name":"sql",` + image + `,"env":[{"name":"CSQL_PROXY_HEALTH_CHECK","value":"false"},{"name":"CSQL_PROXY_QUITQUITQUIT","value":"1"}]}`,
			"-, http://localhost:9091/quitquitquit", "add --health-check", ""},
		{"a boolean flag takes no separate value", `{"name":"sql",` + image + `,"args":["--quitquitquit","false","--health-check"]}`,
			"http://127.0.0.1:9090/startup, http://localhost:9091/quitquitquit", "", ""},
		{"neither", `{"name":"sql",` + image + `,"args":["p:r:i"]}`, "-, -", "add --health-check", "add --quitquitquit"},
		{"v1 has neither, whatever its flags", `{"name":"sql","image":"gcr.io/cloudsql-docker/gce-proxy:1.37.0","command":["/cloud_sql_proxy","-instances=p:r:i=tcp:5432","--quitquitquit"]}`,
			"-, -", "move to v2", "move to v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalog.Sort(podOf(t, `{"spec":{"containers":[{"name":"job"},`+tt.container+`]}}`), catalog.Options{})
			if len(p.Sidecars) != 1 || p.Sidecars[0].Name() != "cloudsql" {
				t.Fatalf("sidecars %q", sorted(p))
			}
			s := p.Sidecars[0]
			if got := endpoints(s); got != tt.want {
				t.Errorf("endpoints %q, want %q", got, tt.want)
			}
			for _, c := range []struct {
				off  *catalog.Off
				want string
			}{{s.ReadyOff, tt.readyOff}, {s.QuitOff, tt.quitOff}} {
				switch {
				case c.want == "" && c.off != nil:
					t.Errorf("off (%s), want on", c.off.Fix)
				case c.want != "" && (c.off == nil || !c.off.Certain || !strings.Contains(c.off.Fix, c.want)):
					t.Errorf("off %+v, want certainly off with a fix saying %q", c.off, c.want)
				}
			}
		})
	}
}

// TestHiddenSettings: a switch or a port set by a variable from a ConfigMap, a Secret or a field
// has a value the manifest does not show. The endpoint is taken as on (calling it costs a
// refused connection at worst; not calling it hangs the Job) and the default port stays, each
// with a note that names the variable; a flag before it still decides.
func TestHiddenSettings(t *testing.T) {
	const image = `"image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0"`
	from := func(name string) string {
		return `{"name":"` + name + `","valueFrom":{"configMapKeyRef":{"name":"proxy","key":"k"}}}`
	}
	tests := []struct {
		name, container, want string
		hidden                []string // the variables the notes name
	}{
		{"both switches hidden", `{"name":"sql",` + image + `,"env":[` + from("CSQL_PROXY_HEALTH_CHECK") + `,` + from("CSQL_PROXY_QUITQUITQUIT") + `]}`,
			"http://127.0.0.1:9090/startup, http://localhost:9091/quitquitquit", []string{"CSQL_PROXY_HEALTH_CHECK", "CSQL_PROXY_QUITQUITQUIT"}},
		{"a flag before the hidden variable decides", `{"name":"sql",` + image + `,"args":["--health-check=false","--quitquitquit"],"env":[` + from("CSQL_PROXY_HEALTH_CHECK") + `,` + from("CSQL_PROXY_QUITQUITQUIT") + `]}`,
			"-, http://localhost:9091/quitquitquit", nil},
		{"a hidden port keeps the default", `{"name":"sql",` + image + `,"args":["--health-check","--quitquitquit"],"env":[` + from("CSQL_PROXY_ADMIN_PORT") + `]}`,
			"http://127.0.0.1:9090/startup, http://localhost:9091/quitquitquit", []string{"CSQL_PROXY_ADMIN_PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalog.Sort(podOf(t, `{"spec":{"containers":[{"name":"job"},`+tt.container+`]}}`), catalog.Options{})
			s := p.Sidecars[0]
			if got := endpoints(s); got != tt.want {
				t.Errorf("endpoints %q, want %q", got, tt.want)
			}
			notes := strings.Join(s.Notes, "\n")
			for _, v := range tt.hidden {
				if !strings.Contains(notes, "variable "+v) || !strings.Contains(notes, "valueFrom") {
					t.Errorf("no note names the hidden %s: %q", v, notes)
				}
			}
			if n := strings.Count(notes, "valueFrom"); n != len(tt.hidden) {
				t.Errorf("notes %q: %d about valueFrom, want one for each of %q", s.Notes, n, tt.hidden)
			}
			for _, off := range []*catalog.Off{s.ReadyOff, s.QuitOff} {
				if off != nil && off.Hidden != "" && off.Certain {
					t.Errorf("a hidden setting is not certainly off: %+v", off)
				}
			}
		})
	}
}

// TestQuitSwitches: Linkerd's /shutdown and Vault Agent's quit API are on only when the pod (or,
// for Linkerd, the proxy's own variable) says so. Without the proxy's container the pod cannot
// say whether Linkerd's Helm value turned it on: off, but not certainly, and still called.
func TestQuitSwitches(t *testing.T) {
	tests := []struct {
		name, pod, want string
		off, certain    bool
	}{
		{"Linkerd asked for, without the annotation", `{"metadata":{"annotations":{"linkerd.io/inject":"enabled"}},"spec":{"containers":[{"name":"job"}]}}`,
			"http://127.0.0.1:4191/ready, http://127.0.0.1:4191/shutdown", true, false},
		{"Linkerd with the annotation and another admin port", `{"metadata":{"annotations":{"linkerd.io/inject":"enabled","config.linkerd.io/proxy-admin-shutdown":"enabled","config.linkerd.io/admin-port":"4192"}},"spec":{"containers":[{"name":"job"}]}}`,
			"http://127.0.0.1:4192/ready, http://127.0.0.1:4192/shutdown", false, false},
		{"Linkerd's injected proxy says no", `{"metadata":{"annotations":{"linkerd.io/proxy-version":"edge-26.8.3"}},"spec":{"containers":[{"name":"job"},
			{"name":"linkerd-proxy","env":[{"name":"LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED","value":"false"}]}]}}`,
			"http://127.0.0.1:4191/ready, -", true, true},
		{"Linkerd's injected proxy says yes (the Helm value)", `{"metadata":{"annotations":{"linkerd.io/proxy-version":"edge-26.8.3"}},"spec":{"containers":[{"name":"job"},
			{"name":"linkerd-proxy","env":[{"name":"LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED","value":"true"}]}]}}`,
			"http://127.0.0.1:4191/ready, http://127.0.0.1:4191/shutdown", false, false},
		{"Vault without agent-enable-quit", `{"metadata":{"annotations":{"vault.hashicorp.com/agent-inject":"true"}},"spec":{"containers":[{"name":"job"}]}}`,
			"-, -", true, true},
		{"Vault with it, on another port", `{"metadata":{"annotations":{"vault.hashicorp.com/agent-inject":"true","vault.hashicorp.com/agent-enable-quit":"true","vault.hashicorp.com/agent-cache-listener-port":"8201"}},"spec":{"containers":[{"name":"job"}]}}`,
			"-, http://127.0.0.1:8201/agent/v1/quit", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalog.Sort(podOf(t, tt.pod), catalog.Options{Requests: true})
			if len(p.Sidecars) != 1 {
				t.Fatalf("sidecars %q", sorted(p))
			}
			s := p.Sidecars[0]
			if got := endpoints(s); got != tt.want {
				t.Errorf("endpoints %q, want %q", got, tt.want)
			}
			if (s.QuitOff != nil) != tt.off || s.QuitOff != nil && s.QuitOff.Certain != tt.certain {
				t.Errorf("quit off %+v, want off %v, certain %v", s.QuitOff, tt.off, tt.certain)
			}
		})
	}
}
