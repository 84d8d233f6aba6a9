package detect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/sidecar"
)

// formatMap writes a map as the kubelet writes a downward-API volume's annotations or labels
// file (k8s.io/kubernetes/pkg/fieldpath.FormatMap): sorted key="%q" lines.
func formatMap(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		lines = append(lines, fmt.Sprintf("%v=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// FuzzPodInfo reads arbitrary bytes as a downward-API volume's annotations and labels files.
// parseKeyValues (behind readPodInfo) must not panic; what it reads, written again as the kubelet writes it, reads back
// the same; and detection over it keeps its invariants (see checkFound).
func FuzzPodInfo(f *testing.F) {
	for _, s := range []map[string]string{
		{istioStatus: `{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"default"}`},
		{istioStatus: `{"initContainers":["istio-validation","istio-proxy"],"containers":[]}`, istioStatusPort: "15030"},
		{linkerdVersion: "edge-26.8.3", linkerdShutdown: "enabled", linkerdAdminPort: "4192"},
		{linkerdVersion: "v2", "config.beta.linkerd.io/proxy-enable-native-sidecar": "true"},
		{consulInjected: "injected", consulGracefulPort: "20700"},
		{kumaInjected: "true", kumaAdminPort: "x"},
		{daprEnabled: "true", daprHTTPPort: "3600"},
		{vaultInjected: "injected", vaultEnableQuit: "true"},
		{osmProxyLabel: "1b9c"},
		{SidecarsAnnotation: "istio,cloudsql:ready-port=9190,quit-port=9191,native=true"},
		{SidecarsAnnotation: "istio:host=10.0.0.3,linkerd:native=maybe,tcp:ready=tcp://[::1]:5432", istioStatus: "{}"},
		{"app": "x\ny\"z\\\u00e9\x93", "": "", "a=b": "c"},
	} {
		f.Add([]byte(formatMap(s)))
	}
	f.Add([]byte("no equals sign\nk=unquoted value\nk2=\"bad \\q quote\"\r\nk3=\"\"\n=\"\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ann := parseKeyValues(bytes.NewReader(data))
		labels := parseKeyValues(bytes.NewReader(data))
		if !reflect.DeepEqual(ann, labels) {
			t.Fatalf("parseKeyValues is not deterministic: %q, then %q", ann, labels)
		}
		if got := parseKeyValues(strings.NewReader(formatMap(ann))); !reflect.DeepEqual(got, ann) {
			t.Fatalf("read %q, written as the kubelet writes it %q, reads back as %q", ann, formatMap(ann), got)
		}
		var r Result
		fs := r.fromAnnotations(ann, labels, nil, noEnv)
		checkFound(t, fs)
		var r2 Result
		if fs2 := r2.fromAnnotations(ann, labels, nil, noEnv); !reflect.DeepEqual(fs, fs2) || !reflect.DeepEqual(r, r2) {
			t.Fatalf("detection is not deterministic")
		}
	})
}

// checkFound checks what detection found: known profiles, each found once and for a reason,
// with a loopback http:// quit URL (whatever the annotations say, detection never sends a quit
// elsewhere) and a readiness check sidesync can read.
func checkFound(t *testing.T, found []Found) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range found {
		if !sidecar.IsProfile(f.Profile) || f.Why == "" {
			t.Fatalf("found %+v: profile %q, why %q", f, f.Profile, f.Why)
		}
		if seen[f.Profile] {
			t.Fatalf("profile %s found twice: %+v", f.Profile, found)
		}
		seen[f.Profile] = true
		if q := f.Sidecar.Quit; q != nil && (!config.IsLoopback(q.URL) || !strings.HasPrefix(q.URL, "http://")) {
			t.Fatalf("%s: quit URL %q", f.Profile, q.URL)
		}
		if c := f.Sidecar.Ready; c != nil && c.Kind != sidecar.TCP && !strings.HasPrefix(c.URL, "http://") {
			t.Fatalf("%s: readiness URL %q", f.Profile, c.URL)
		}
	}
}

// FuzzPod reads arbitrary bytes as the Pod the Kubernetes API returns (kube.go), with an
// arbitrary container name in SIDESYNC_CONTAINER, and detects from it as Detect does: the
// sidecars (annotations, the Istio status JSON, the sidesync.io/sidecars list, containers and
// their flags) and the restart of this container. Nothing may panic; it is deterministic;
// the sidecars keep checkFound's invariants; and the restart read is either known, with where it
// came from, or unknown with a note, and decides every exit code.
func FuzzPod(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"job-x","namespace":"ns1","annotations":{"sidecar.istio.io/status":"{}"}},
	"spec":{"initContainers":[
	  {"name":"istio-proxy","image":"istio/proxyv2:1.28","restartPolicy":"Always","startupProbe":{"httpGet":{"path":"/healthz/ready","port":15021}}},
	  {"name":"setup","image":"busybox"}],
	"containers":[
	  {"name":"job","image":"example/job"},
	  {"name":"cloud-sql-proxy","image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0","args":["--health-check","--http-port=9190","--quitquitquit","--admin-port","9191","p:r:i"]},
	  {"name":"envoy","image":"840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29"},
	  {"name":"vault-agent","image":"hashicorp/vault"}]}}`), "job")
	f.Add([]byte(`{"metadata":{"annotations":{"sidecar.istio.io/status":"{\"initContainers\":[\"istio-validation\",\"istio-proxy\"]}","status.sidecar.istio.io/port":"15030",
	  "sidesync.io/sidecars":"cloudsql:ready-port=9190,quit-port=9191,bogus"}},
	"spec":{"restartPolicy":"OnFailure","containers":[{"name":"job","restartPolicy":"Never","restartPolicyRules":[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]},{"name":"other"}]}}`), "job")
	f.Add([]byte(`{"spec":{"restartPolicy":"Never","containers":[{"name":"job","restartPolicyRules":[{"action":"Reboot","exitCodes":{"operator":"In","values":[1]}}]}]}}`), "job")
	f.Add([]byte(`{"spec":{"restartPolicy":"Never","containers":[{"name":"job","restartPolicyRules":null},{"name":"other","restartPolicy":"Always"}]}}`), "")
	f.Add([]byte(`{"metadata":{"annotations":{"linkerd.io/proxy-version":"v2","config.linkerd.io/proxy-admin-port":"99999"},"labels":{"openservicemesh.io/sidecar-uid":"1"}},
	"spec":{"restartPolicy":"sometimes","containers":[{"name":"linkerd-proxy","image":"cr.l5d.io/linkerd/proxy"}]}}`), "jbo")
	f.Add([]byte(`{"metadata":null,"spec":{"containers":[null,{"name":"db","image":"gcr.io/cloudsql-docker/gce-proxy:1.33","command":["/cloud_sql_proxy","-health-check=true","--http-port","x"]}]}}`), "db")
	f.Fuzz(func(t *testing.T, body []byte, container string) {
		var p pod
		if err := json.Unmarshal(body, &p); err != nil {
			return
		}
		env := func(name string) (string, bool) {
			if name == "SIDESYNC_CONTAINER" {
				return container, true
			}
			return "", false
		}
		var r Result
		found := r.fromAnnotations(p.Metadata.Annotations, p.Metadata.Labels, &p, env)
		checkFound(t, found)
		spec, of, note := restartOf(&p, env)
		if (of == "") == (note == "") {
			t.Fatalf("restartOf: of %q, note %q: want exactly one", of, note)
		}
		if note != "" && spec.Known() {
			t.Fatalf("restartOf: note %q with a known spec %+v", note, spec)
		}
		for code := 0; code <= 255; code++ {
			spec.Restarts(code)
		}
		var p2 pod
		_ = json.Unmarshal(body, &p2)
		var r2 Result
		found2 := r2.fromAnnotations(p2.Metadata.Annotations, p2.Metadata.Labels, &p2, env)
		spec2, of2, note2 := restartOf(&p2, env)
		if !reflect.DeepEqual(found, found2) || !reflect.DeepEqual(r, r2) || !reflect.DeepEqual(spec, spec2) || of != of2 || note != note2 {
			t.Fatal("detection from a Pod is not deterministic")
		}
	})
}

// FuzzManifestSidecar recognises sidecars among arbitrary manifest containers, as `kubectl
// sidesync inject` does, and checks the contract between inject and the pod binary: the
// --sidecar value Spec writes for what it found (recorded in the sidesync.io/sidecars
// annotation) reads back, with config.ParseSidecars, as exactly that sidecar.
func FuzzManifestSidecar(f *testing.F) {
	const sqlImage = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0"
	for _, c := range []ManifestContainer{
		{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.0"},
		{Name: "linkerd-proxy", Native: true, StartupProbe: true},
		{Name: "linkerd-proxy", StartupProbe: true},
		{Name: "db", Image: sqlImage, Args: []string{"--health-check", "--http-port", "9190", "--quitquitquit", "--admin-port=9191", "p:r:i"}},
		{Name: "db", Image: sqlImage, Command: []string{"/cloud-sql-proxy", "--health-check", "--quitquitquit"}},
		{Name: "db", Image: sqlImage, Args: []string{"--quitquitquit=false", "p:r:i"}},
		{Name: "db", Image: sqlImage, Native: true, Args: []string{"--health-check", "--quitquitquit"}},
		{Name: "db", Image: sqlImage, Args: []string{"--health-check", "--http-port", "0", "--quitquitquit", "--admin-port=65536"}},
		{Name: "envoy", Image: "envoyproxy/envoy:v1.36"},
		{Name: "envoy", Image: "840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29"},
		{Name: "vault-agent", Image: "hashicorp/vault"},
		{Name: "daprd", Image: "ghcr.io/dapr/daprd:1.16"},
		{Name: "app", Image: "example/app"},
	} {
		f.Add(c.Name, c.Image, strings.Join(c.Command, "\n"), strings.Join(c.Args, "\n"), c.Native, c.StartupProbe)
	}
	f.Fuzz(func(t *testing.T, name, image, command, args string, native, startup bool) {
		mc := ManifestContainer{Name: name, Image: image, Native: native, StartupProbe: startup}
		if command != "" {
			mc.Command = strings.Split(command, "\n")
		}
		if args != "" {
			mc.Args = strings.Split(args, "\n")
		}
		found, spec, ok := ManifestSidecar(mc)
		if !ok {
			if spec != "" {
				t.Fatalf("no sidecar, but spec %q", spec)
			}
			return
		}
		checkFound(t, []Found{found})
		parsed, err := config.ParseSidecars(spec, noEnv)
		if err != nil || len(parsed) != 1 {
			t.Fatalf("%+v: Spec %q reads back as %+v, %v", mc, spec, parsed, err)
		}
		if parsed[0].Profile != found.Profile || !reflect.DeepEqual(parsed[0].Sidecar, found.Sidecar) {
			t.Fatalf("%+v: Spec %q reads back as\n%+v\nwant\n%+v", mc, spec, parsed[0].Sidecar, found.Sidecar)
		}
	})
}

// FuzzSpec reads arbitrary --sidecar lists with config.ParseSidecars and writes each sidecar
// back with Spec: what Spec writes must read back as one sidecar of the same profile, with the
// same endpoints (readiness check and quit URL) and the same native and startup-probe marks, the
// settings Spec writes. Spec is the one writer of the syntax ParseSidecars reads.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		"istio", "istio,cloudsql:ready-port=9190,quit-port=9191", "cloudsql:ready-port=9190,quit-port=9191,native=true",
		"linkerd:native=true,startup-probe=true", "cloudsql:ready=none,quit=none", "tcp:ready=tcp://127.0.0.1:5432,name=db",
		"istio:host=::1", "istio:quit-port=15099", "http:ready=http://localhost/health", "http:quit=http://[::1]:1/q",
		"envoy:ready=http://127.0.0.1:19000,quit=http://127.0.0.1:19000/quitquitquit", "consul:port=1", "vault",
		"linkerd:port=4192", "envoy:ready=http://127.0.0.1:1/x,quit-port=2", "istio:ready=http://127.0.0.1:15021/healthz/ready",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		parsed, _ := config.ParseSidecars(value, noEnv)
		for _, p := range parsed {
			spec := Spec(p.Profile, p.Sidecar)
			again, err := config.ParseSidecars(spec, noEnv)
			if err != nil || len(again) != 1 || again[0].Profile != p.Profile {
				t.Fatalf("%q: Spec %q reads back as %+v, %v", value, spec, again, err)
			}
			want, got := p.Sidecar, again[0].Sidecar
			if !reflect.DeepEqual(endpoints(want), endpoints(got)) || want.Native != got.Native || want.StartupProbe != got.StartupProbe {
				t.Fatalf("%q: Spec %q reads back as\n%+v\nwant\n%+v", value, spec, got, want)
			}
		}
	})
}

// endpoints are what Spec writes of a sidecar's readiness check and quit call.
func endpoints(sc sidecar.Sidecar) [2]string {
	var e [2]string
	if sc.Ready != nil {
		e[0] = fmt.Sprint(sc.Ready.Kind, " ", sc.Ready.URL)
	}
	if sc.Quit != nil {
		e[1] = sc.Quit.URL
	}
	return e
}
