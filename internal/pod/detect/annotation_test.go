package detect

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/sidecar"
)

// TestSidecarsAnnotation: the sidecars that `kubectl sidesync inject` lists in the pod
// annotation sidesync.io/sidecars are found from the downward-API volume, merged with what the
// mesh's own marks reveal (one per profile, the annotation's winning), and a malformed entry is
// a warning that leaves the others standing.
func TestSidecarsAnnotation(t *testing.T) {
	nativeIstio := mustProfile(t, "istio")
	nativeIstio.Native, nativeIstio.StartupProbe = true, true
	movedSQL := mustProfile(t, "cloudsql").WithPorts(9190, 9191)
	tests := []struct {
		name        string
		annotations map[string]string
		want        []sidecar.Sidecar
		wantWhy     []string
		wantWarning string
	}{
		{"alone", map[string]string{contract.SidecarsAnnotation: "cloudsql:ready-port=9190,quit-port=9191"},
			[]sidecar.Sidecar{movedSQL}, []string{"annotation sidesync.io/sidecars"}, ""},
		{"wins over the mesh's mark for the same profile", map[string]string{contract.SidecarsAnnotation: "istio:native=true,startup-probe=true", istioStatus: `{"containers":["istio-proxy"]}`},
			[]sidecar.Sidecar{nativeIstio}, []string{"annotation sidesync.io/sidecars"}, ""},
		{"beside the mesh's mark for another", map[string]string{contract.SidecarsAnnotation: "cloudsql:ready-port=9190,quit-port=9191", istioStatus: "{}"},
			[]sidecar.Sidecar{movedSQL, mustProfile(t, "istio")}, []string{"annotation sidesync.io/sidecars", "annotation " + istioStatus}, ""},
		{"a malformed entry is left out", map[string]string{contract.SidecarsAnnotation: "istio,bogus:port=1", kumaInjected: "true"},
			[]sidecar.Sidecar{mustProfile(t, "istio"), noQuit(mustProfile(t, "kuma"))}, []string{"annotation sidesync.io/sidecars", `annotation kuma.io/sidecar-injected: "true"`},
			`ignoring what cannot be read in the pod annotation sidesync.io/sidecars="istio,bogus:port=1": unknown sidecar "bogus"`},
		{"inject's list, with the user's winning for a profile both name", map[string]string{
			"sidesync.io/found-sidecars": "cloudsql:ready-port=9190,quit-port=9191,vault",
			contract.SidecarsAnnotation:  "vault:quit-port=8201"},
			[]sidecar.Sidecar{mustProfile(t, "vault").WithPorts(0, 8201), movedSQL},
			[]string{"annotation sidesync.io/sidecars", "annotation sidesync.io/found-sidecars"}, ""},
		{"nothing readable", map[string]string{contract.SidecarsAnnotation: "native=true"}, nil, nil,
			`sidesync.io/sidecars="native=true": "native=true": a setting before any sidecar name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Detect(context.Background(), Options{PodInfoDir: writePodInfo(t, tt.annotations, nil), LookupEnv: noEnv})
			var got []sidecar.Sidecar
			var why []string
			for _, f := range r.Found {
				got, why = append(got, f.Sidecar), append(why, f.Why)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sidecars (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWhy, why); diff != "" {
				t.Errorf("why (-want +got):\n%s", diff)
			}
			if warnings := strings.Join(r.Warnings, "\n"); tt.wantWarning != "" && !strings.Contains(warnings, tt.wantWarning) ||
				tt.wantWarning == "" && warnings != "" {
				t.Errorf("warnings %q, want %q", warnings, tt.wantWarning)
			}
		})
	}
}

// TestSidecarsAnnotationInPod: in a Pod object, the annotation also wins over the container
// that reveals the same profile, and is read once when both sources carry it.
func TestSidecarsAnnotationInPod(t *testing.T) {
	const podJSON = `{"metadata":{"annotations":{"sidesync.io/sidecars":"cloudsql:ready-port=9190,quit-port=9191,vault:bad=1","linkerd.io/proxy-version":"v2"}},
	"spec":{"containers":[{"name":"job"},
	  {"name":"sql","image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2","args":["--health-check","--quitquitquit"]}]}}`
	p, err := readPod([]byte(podJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	for range 2 {
		found := r.fromPod(p, noEnv)
		if diff := cmp.Diff([]string{"cloudsql", "linkerd"}, names(found)); diff != "" {
			t.Fatalf("found (-want +got):\n%s", diff)
		}
		if got := found[0].Sidecar.Quit.URL; got != "http://localhost:9191/quitquitquit" {
			t.Errorf("cloudsql quits at %s, want the annotation's port 9191", got)
		}
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `vault: bad="1": unknown setting`) {
		t.Errorf("warnings %q, want one about vault's bad setting", r.Warnings)
	}
}
