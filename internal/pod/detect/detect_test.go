package detect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// writePodInfo writes a downward-API volume the way the kubelet does: key="quoted value" lines.
func writePodInfo(t *testing.T, annotations, labels map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, m map[string]string) {
		var b strings.Builder
		for k, v := range m {
			b.WriteString(k + "=" + strconvQuote(v) + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("annotations", annotations)
	write("labels", labels)
	return dir
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func mustProfile(t *testing.T, name string) sidecar.Sidecar {
	t.Helper()
	sc, ok := catalog.Profile(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	return sc
}

func names(found []Found) []string {
	var out []string
	for _, f := range found {
		out = append(out, f.Sidecar.Name)
	}
	return out
}

func TestFromAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        []sidecar.Sidecar
		wantNote    string
	}{
		{"istio", map[string]string{istioStatus: `{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"default"}`}, nil,
			[]sidecar.Sidecar{mustProfile(t, "istio")}, ""},
		{"istio native, agent on another port", map[string]string{istioStatus: `{"initContainers":["istio-validation","istio-proxy"],"containers":[]}`, istioStatusPort: "15030"}, nil,
			[]sidecar.Sidecar{func() sidecar.Sidecar { s := mustProfile(t, "istio").WithPorts(0, 15030); s.Native = true; return s }()}, ""},
		{"istio with its status server off: neither endpoint", map[string]string{istioStatus: `{"containers":["istio-proxy"]}`, istioStatusPort: "0"}, nil,
			[]sidecar.Sidecar{{Name: "istio"}}, "switches its endpoints off"},
		// Linkerd leaves the same marks on a native and a classic proxy: without the Pod from the
		// API, a proxy that may be native is waited for and not told to quit.
		{"linkerd with shutdown, native or not", map[string]string{linkerdVersion: "edge-26.8.3", linkerdShutdown: "enabled", linkerdAdminPort: "4192"}, nil,
			[]sidecar.Sidecar{noQuit(mustProfile(t, "linkerd").WithPorts(4192, 4192))}, "may be a native sidecar"},
		{"linkerd with shutdown, classic by its annotation", map[string]string{linkerdVersion: "edge-26.8.3", linkerdShutdown: "enabled", linkerdAdminPort: "4192",
			"config.linkerd.io/proxy-enable-native-sidecar": "false"}, nil,
			[]sidecar.Sidecar{mustProfile(t, "linkerd").WithPorts(4192, 4192)}, ""},
		{"linkerd without shutdown", map[string]string{linkerdVersion: "edge-26.8.3", "config.linkerd.io/proxy-enable-native-sidecar": "false"}, nil,
			[]sidecar.Sidecar{mustProfile(t, "linkerd")}, "config.linkerd.io/proxy-admin-shutdown: enabled"},
		{"linkerd native (beta spelling)", map[string]string{linkerdVersion: "v2", "config.beta.linkerd.io/proxy-enable-native-sidecar": "true"}, nil,
			[]sidecar.Sidecar{func() sidecar.Sidecar { s := mustProfile(t, "linkerd"); s.Native = true; return s }()}, ""},
		{"consul", map[string]string{consulInjected: "injected", consulGracefulPort: "20700"}, nil,
			[]sidecar.Sidecar{mustProfile(t, "consul").WithPorts(0, 20700)}, ""},
		{"kuma, native or not", map[string]string{kumaInjected: "true"}, nil, []sidecar.Sidecar{noQuit(mustProfile(t, "kuma"))}, "may be a native sidecar"},
		{"dapr on another port", map[string]string{daprEnabled: "true", daprHTTPPort: "3600"}, nil,
			[]sidecar.Sidecar{mustProfile(t, "dapr").WithPorts(3600, 3600)}, ""},
		{"osm label", nil, map[string]string{osmProxyLabel: "1b9c"}, []sidecar.Sidecar{mustProfile(t, "osm")}, ""},
		{"vault with quit", map[string]string{vaultInjected: "injected", vaultEnableQuit: "true"}, nil, []sidecar.Sidecar{mustProfile(t, "vault")}, ""},
		{"vault without quit", map[string]string{vaultInjected: "injected"}, nil, []sidecar.Sidecar{{Name: "vault"}}, "agent-enable-quit"},
		{"vault pre-populate only is no sidecar", map[string]string{vaultInjected: "injected", vaultPrePopulate: "true"}, nil, nil, ""},
		{"bad port is ignored", map[string]string{kumaInjected: "true", kumaAdminPort: "x"}, nil, []sidecar.Sidecar{noQuit(mustProfile(t, "kuma"))}, "ignoring port"},
		{"istio and dapr", map[string]string{istioStatus: "{}", daprEnabled: "true"}, nil, []sidecar.Sidecar{mustProfile(t, "istio"), mustProfile(t, "dapr")}, ""},
		{"nothing", map[string]string{"app": "x"}, map[string]string{"app": "y"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writePodInfo(t, tt.annotations, tt.labels)
			r := Detect(context.Background(), Options{PodInfoDir: dir, LookupEnv: noEnv})
			var got []sidecar.Sidecar
			var notes []string
			for _, f := range r.Found {
				got = append(got, f.Sidecar)
				notes = append(notes, f.Notes...)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sidecars (-want +got):\n%s", diff)
			}
			if tt.wantNote != "" && !strings.Contains(strings.Join(notes, "\n"), tt.wantNote) {
				t.Errorf("notes %q lack %q", notes, tt.wantNote)
			}
			if len(tt.want) > 0 && !strings.Contains(r.Source, dir) {
				t.Errorf("source %q", r.Source)
			}
		})
	}
}

func noEnv(string) (string, bool) { return "", false }

// noQuit is a profile without its quit call.
func noQuit(sc sidecar.Sidecar) sidecar.Sidecar { sc.Quit = nil; return sc }

// TestNothingFound: without a downward-API volume and outside Kubernetes, detection says what it
// tried.
func TestNothingFound(t *testing.T) {
	r := Detect(context.Background(), Options{PodInfoDir: filepath.Join(t.TempDir(), "absent"), KubeAPI: true, ServiceAccountDir: t.TempDir(), LookupEnv: noEnv})
	if len(r.Found) != 0 || len(r.Tried) != 2 || !strings.Contains(r.Tried[0], "no downward-API volume") || !strings.Contains(r.Tried[1], "not in a Kubernetes pod") {
		t.Errorf("got %+v", r)
	}
	if r.Failed != nil {
		t.Errorf("outside Kubernetes detection did not fail to look, it had nowhere to look; Failed = %v", r.Failed)
	}
}

// TestCouldNotLook: in a Kubernetes pod without a service-account token, detection could not
// look, and says so with a fix (issue 7, fault 10).
func TestCouldNotLook(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "KUBERNETES_SERVICE_HOST" {
			return "10.96.0.1", true
		}
		return "", false
	}
	r := Detect(context.Background(), Options{PodInfoDir: filepath.Join(t.TempDir(), "absent"), KubeAPI: true, ServiceAccountDir: t.TempDir(), LookupEnv: env})
	var nt *NoTokenError
	if !errors.As(r.Failed, &nt) {
		t.Fatalf("Failed = %v, want a *NoTokenError", r.Failed)
	}
	if !strings.Contains(r.Fix, "--sidecar") || !strings.Contains(r.Fix, "automountServiceAccountToken") {
		t.Errorf("Fix = %q", r.Fix)
	}
}

// TestForbiddenFix: the RBAC that a 403 asks for names the namespace and the service account
// from the token.
func TestForbiddenFix(t *testing.T) {
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"k","sub":"system:serviceaccount:jobs:runner"}`))
	ns, sa := serviceAccountOf("eyJhbGciOiJSUzI1NiJ9." + claims + ".c2ln\n")
	if ns != "jobs" || sa != "runner" {
		t.Fatalf("serviceAccountOf = %q, %q; want jobs, runner", ns, sa)
	}
	for _, bad := range []string{"", "opaque-token", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"user"}`)) + ".c"} {
		if ns, sa := serviceAccountOf(bad); ns != "" || sa != "" {
			t.Errorf("serviceAccountOf(%q) = %q, %q; want nothing", bad, ns, sa)
		}
	}
	e := &ForbiddenError{Status: "403 Forbidden", Namespace: "jobs", Pod: "p-1", AccountNamespace: ns, Account: sa}
	want := "kubectl create role sidesync-get-pods --verb=get --resource=pods -n jobs && " +
		"kubectl create rolebinding sidesync-get-pods --role=sidesync-get-pods --serviceaccount=jobs:runner -n jobs"
	if !strings.Contains(e.Fix(), want) {
		t.Errorf("Fix() = %q, want it to contain %q", e.Fix(), want)
	}
	if got, want := e.Error(), "403 Forbidden: the service account jobs:runner may not get its own pod jobs/p-1"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestFromPod reads Pod objects as the API returns them.
func TestFromPod(t *testing.T) {
	const podJSON = `{"metadata":{"name":"job-x","namespace":"ns1","annotations":{"sidecar.istio.io/status":"{}"}},
	"spec":{"initContainers":[
	  {"name":"istio-proxy","image":"istio/proxyv2:1.28","restartPolicy":"Always","startupProbe":{"httpGet":{"path":"/healthz/ready","port":15021}}},
	  {"name":"setup","image":"busybox"}],
	"containers":[
	  {"name":"job","image":"example/job"},
	  {"name":"cloud-sql-proxy","image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0","args":["--health-check","--http-port=9190","--quitquitquit","--admin-port","9191","p:r:i"]},
	  {"name":"envoy","image":"840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29"},
	  {"name":"vault-agent","image":"hashicorp/vault"}]}}`
	p, err := readPod([]byte(podJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	found := r.fromPod(p, func(string) (string, bool) { return "", false })
	if diff := cmp.Diff([]string{"istio", "cloudsql", "appmesh", "vault"}, names(found)); diff != "" {
		t.Fatalf("found (-want +got):\n%s", diff)
	}
	if ist := found[0].Sidecar; !ist.Native || !ist.StartupProbe {
		t.Errorf("istio: native %v, startup probe %v; want both", ist.Native, ist.StartupProbe)
	}
	csql := found[1].Sidecar
	if csql.Ready.URL != "http://127.0.0.1:9190/startup" || csql.Quit.URL != "http://localhost:9191/quitquitquit" || csql.Native {
		t.Errorf("cloudsql: %+v %+v", csql.Ready, csql.Quit)
	}
}

// TestFromPodCloudSQLVariables: the Cloud SQL Auth Proxy configured by its CSQL_PROXY_ variables
// (as its own example and its operator do), read from the Pod in the API as from its flags.
func TestFromPodCloudSQLVariables(t *testing.T) {
	const podJSON = `{"metadata":{"name":"job-x"},"spec":{"containers":[
	  {"name":"job","image":"example/job"},
	  {"name":"sql","image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0","args":["p:r:i"],"env":[
	    {"name":"CSQL_PROXY_HEALTH_CHECK","value":"true"},{"name":"CSQL_PROXY_HTTP_PORT","value":"9190"},
	    {"name":"CSQL_PROXY_QUITQUITQUIT","value":"true"},{"name":"CSQL_PROXY_ADMIN_PORT","value":"9191"}]}]}}`
	p, err := readPod([]byte(podJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	found := r.fromPod(p, func(string) (string, bool) { return "", false })
	if len(found) != 1 || found[0].Sidecar.Ready == nil || found[0].Sidecar.Quit == nil {
		t.Fatalf("found %+v, want cloudsql with both endpoints", found)
	}
	if csql := found[0].Sidecar; csql.Ready.URL != "http://127.0.0.1:9190/startup" || csql.Quit.URL != "http://localhost:9191/quitquitquit" {
		t.Errorf("cloudsql: %s, %s", csql.Ready.URL, csql.Quit.URL)
	}
}
