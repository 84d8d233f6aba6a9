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

// TestServiceAccountCARefused: the cluster's CA is read as the token is: a FIFO in its place is
// refused at once, a file over the bound without being read.
func TestServiceAccountCARefused(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(t *testing.T, path string)
		want string
	}{
		"a FIFO":         {fifo, "reading the cluster CA: a named pipe (FIFO), not a regular file"},
		"over the bound": {huge, "reading the cluster CA: larger than 1048576 bytes (67108864): a cluster's CA bundle is PEM certificates of 1 to 2 KiB each"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := accountVolume(t, map[string]func(*testing.T, string){"token": holding("t"), "namespace": holding("jobs"), "ca.crt": tc.make})
			before := bytesRead(t)
			r := askAPI(t, dir, inPod("POD_NAME=job-x"))
			if read := bytesRead(t) - before; read > 64<<10 {
				t.Errorf("read %d bytes, want at most 64 KiB", read)
			}
			if r.Failed == nil || r.Failed.Error() != tc.want {
				t.Errorf("Failed = %v, want %q", r.Failed, tc.want)
			}
		})
	}
}

// TestServiceAccountFilesRead: from a service account's volume laid out as the kubelet lays it
// out (symlinks through ..data), the token, the CA and the namespace are read, and the Pod is got
// from the API server over TLS with them.
func TestServiceAccountFilesRead(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/jobs/pods/job-x" || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"metadata":{"name":"job-x","namespace":"jobs"},"spec":{"initContainers":[
		  {"name":"istio-proxy","image":"istio/proxyv2:1.28","restartPolicy":"Always"}],"containers":[{"name":"job","image":"example/job"}]}}`))
	}))
	defer api.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	dir := accountVolume(t, map[string]func(*testing.T, string){"token": holding(token + "\n"), "namespace": holding("jobs\n"), "ca.crt": holding(string(ca))})
	u, err := url.Parse(api.URL)
	mustOK(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	mustOK(t, err)

	r := askAPI(t, dir, inPodAt(host, port, "POD_NAME=job-x"))
	if r.Failed != nil || len(r.Found) != 1 || r.Found[0].Profile != "istio" || !strings.Contains(r.Source, "pod jobs/job-x") {
		t.Errorf("Detect = %+v, want istio found in the Kubernetes API, pod jobs/job-x", r)
	}
}

// inPodAt is inPod with the API server at host:port.
func inPodAt(host, port string, extra ...string) func(string) (string, bool) {
	return inPod(append([]string{"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}, extra...)...)
}
