//go:build !nokubeapi

package detect

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestNativeUnknownAsksTheAPI: Linkerd leaves the same marks on a pod whether it injected a
// native or a classic proxy, so detection from the downward API asks the Pod in the API, whose
// containers tell; when it cannot ask, the proxy is waited for and not told to quit.
func TestNativeUnknownAsksTheAPI(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
	ann := map[string]string{linkerdVersion: "edge-26.5.2", linkerdShutdown: "enabled", "linkerd.io/trust-root-sha256": "5090806b"}
	labels := map[string]string{"linkerd.io/control-plane-ns": "linkerd", "linkerd.io/workload-ns": "jobs"}
	const native = `{"metadata":{"name":"job-x","namespace":"jobs","annotations":{"linkerd.io/proxy-version":"edge-26.5.2","config.linkerd.io/proxy-admin-shutdown":"enabled"}},
	  "spec":{"initContainers":[{"name":"linkerd-init","image":"cr.l5d.io/linkerd/proxy-init"},{"name":"linkerd-proxy","image":"cr.l5d.io/linkerd/proxy:edge-26.5.2","restartPolicy":"Always"}],
	  "containers":[{"name":"job","image":"example/job"}]}}`
	classic := strings.Replace(strings.Replace(native, `,"restartPolicy":"Always"}],`, `}],`, 1), `{"name":"job","image":"example/job"}`, `{"name":"job","image":"example/job"},{"name":"linkerd-proxy","image":"cr.l5d.io/linkerd/proxy"}`, 1)
	classic = strings.Replace(classic, `,{"name":"linkerd-proxy","image":"cr.l5d.io/linkerd/proxy:edge-26.5.2"}`, ``, 1)
	for _, tt := range []struct {
		name, pod string
		status    int
		wantQuit  bool // told to quit: a quit call, and not native (sidesync never quits a native sidecar)
		wantNat   bool
		wantFrom  string
	}{
		{"the Pod shows a native proxy", native, 200, false, true, "the Kubernetes API"},
		{"the Pod shows a classic proxy", classic, 200, true, false, "the Kubernetes API"},
		{"the Pod cannot be read (403)", "", http.StatusForbidden, false, false, "pod annotations"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.status != 200 || r.Header.Get("Authorization") != "Bearer "+token {
					http.Error(w, `{"kind":"Status","reason":"Forbidden"}`, http.StatusForbidden)
					return
				}
				w.Write([]byte(tt.pod))
			}))
			defer api.Close()
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
			sa := accountVolume(t, map[string]func(*testing.T, string){"token": holding(token), "namespace": holding("jobs"), "ca.crt": holding(string(ca))})
			u, err := url.Parse(api.URL)
			mustOK(t, err)
			host, port, err := net.SplitHostPort(u.Host)
			mustOK(t, err)
			r := detectWithin(t, Options{PodInfoDir: writePodInfo(t, ann, labels), KubeAPI: true, ServiceAccountDir: sa,
				LookupEnv: inPodAt(host, port, "POD_NAME=job-x"), Timeout: guard}, "the Pod")
			if len(r.Found) != 1 || r.Found[0].Profile != "linkerd" {
				t.Fatalf("Detect = %+v, want linkerd", r)
			}
			f := r.Found[0]
			if (f.Sidecar.Quit != nil && !f.Sidecar.Native) != tt.wantQuit || f.Sidecar.Native != tt.wantNat || f.Sidecar.Ready == nil || !strings.Contains(r.Source, tt.wantFrom) {
				t.Errorf("found %+v from %q; want told to quit %v, native %v, a readiness check, from %q", f.Sidecar, r.Source, tt.wantQuit, tt.wantNat, tt.wantFrom)
			}
			if notes := strings.Join(f.Notes, "\n"); !tt.wantQuit && !tt.wantNat && (!strings.Contains(notes, "may be a native sidecar") || !strings.Contains(notes, "403")) {
				t.Errorf("notes %q; want why the proxy is not told to quit, and what the API said", notes)
			}
		})
	}
}
