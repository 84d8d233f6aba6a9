package detect

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
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
		{contract.SidecarsAnnotation: "istio,cloudsql:ready-port=9190,quit-port=9191,native=true"},
		{contract.SidecarsAnnotation: "istio:host=10.0.0.3,linkerd:native=maybe,tcp:ready=tcp://[::1]:5432", istioStatus: "{}"},
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
		fs := r.fromPod(&manifest.PodView{Annotations: ann, Labels: labels}, noEnv)
		checkFound(t, fs)
		var r2 Result
		if fs2 := r2.fromPod(&manifest.PodView{Annotations: ann, Labels: labels}, noEnv); !reflect.DeepEqual(fs, fs2) || !reflect.DeepEqual(r, r2) {
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
		if !catalog.IsProfile(f.Profile) || f.Why == "" {
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
		p, err := readPod(body)
		if err != nil {
			return
		}
		env := func(name string) (string, bool) {
			if name == "SIDESYNC_CONTAINER" {
				return container, true
			}
			return "", false
		}
		var r Result
		found := r.fromPod(p, env)
		checkFound(t, found)
		spec, of, note := restartOf(p, env)
		if (of == "") == (note == "") {
			t.Fatalf("restartOf: of %q, note %q: want exactly one", of, note)
		}
		if note != "" && spec.Known() {
			t.Fatalf("restartOf: note %q with a known spec %+v", note, spec)
		}
		for code := 0; code <= 255; code++ {
			spec.Restarts(code)
		}
		p2, _ := readPod(body)
		var r2 Result
		found2 := r2.fromPod(p2, env)
		spec2, of2, note2 := restartOf(p2, env)
		if !reflect.DeepEqual(found, found2) || !reflect.DeepEqual(r, r2) || !reflect.DeepEqual(spec, spec2) || of != of2 || note != note2 {
			t.Fatal("detection from a Pod is not deterministic")
		}
	})
}
