package catalog_test

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
)

// handshakePod is the pre-native pattern: a Cloud SQL Auth Proxy started by sh -c in the
// background, killed once the app's EXIT trap touches a file on a shared emptyDir. Each case
// of TestHandshakeQuit changes one thing in it.
const handshakePod = `{"metadata": {}, "spec": {"restartPolicy": "Never",
  "volumes": [{"name": "tmp-pod", "emptyDir": {}}],
  "containers": [
    {"name": "main", "image": "example/batch:1", "command": ["/bin/sh", "-c"],
     "args": ["trap \"touch /tmp/pod/main-terminated\" EXIT\n/app/bin/main --config=/config/job.yaml\n"],
     "volumeMounts": [{"name": "tmp-pod", "mountPath": "/tmp/pod"}]},
    {"name": "cloudsql-proxy", "image": "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0", "command": ["/bin/sh", "-c"],
     "args": ["/cloud-sql-proxy --port 5432 project:region:db &\nCHILD_PID=$!\n(while true; do if [[ -f \"/tmp/pod/main-terminated\" ]]; then kill $CHILD_PID; fi; sleep 1; done) &\nwait $CHILD_PID\nif [[ -f \"/tmp/pod/main-terminated\" ]]; then exit 0; fi\n"],
     "volumeMounts": [{"name": "tmp-pod", "mountPath": "/tmp/pod", "readOnly": true}]}]}}`

// TestHandshakeQuit: a hand-written shutdown handshake is found when every part of it is there,
// and not when one is missing.
func TestHandshakeQuit(t *testing.T) {
	for _, tt := range []struct {
		name     string
		from, to string
		want     bool
	}{
		{"the handshake", "", "", true},
		{"the sidecar waits and exits with no kill, its proxy in the background", "kill $CHILD_PID", "exit 0", true},
		{"the app mounts the volume elsewhere and names it there", `"trap \"touch /tmp/pod/`, `"trap \"touch /shared/`, false},
		{"no kill and nothing in the background", `/cloud-sql-proxy --port 5432 project:region:db &\nCHILD_PID=$!\n(while true; do if [[ -f \"/tmp/pod/main-terminated\" ]]; then kill $CHILD_PID; fi; sleep 1; done) &\nwait $CHILD_PID`,
			`until [ -f /tmp/pod/main-terminated ]; do sleep 1; done 2>&1`, false},
		{"the app writes nothing there", `trap \"touch /tmp/pod/main-terminated\" EXIT\n`, ``, false},
		{"the sidecar watches no file on the shared volume", `[[ -f \"/tmp/pod/main-terminated\" ]]`, `[[ -f \"/tmp/other/main-terminated\" ]]`, false},
		{"another volume", `{"name": "tmp-pod", "mountPath": "/tmp/pod", "readOnly": true}`, `{"name": "other", "mountPath": "/tmp/pod"}`, false},
		{"no shell", `"command": ["/bin/sh", "-c"],
     "args": ["/cloud-sql-proxy`, `"command": ["/cloud-sql-proxy"], "args": ["`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			js := handshakePod
			if tt.from != "" {
				if !strings.Contains(js, tt.from) {
					t.Fatalf("the pod has no %q", tt.from)
				}
				js = strings.ReplaceAll(js, tt.from, tt.to)
			}
			v := podOf(t, js)
			why, got := catalog.HandshakeQuit(v.Containers[1], v)
			if got != tt.want {
				t.Errorf("HandshakeQuit = %q, %v; want %v", why, got, tt.want)
			}
			if got && !strings.Contains(why, "/tmp/pod") {
				t.Errorf("why = %q; want it to name the watched directory", why)
			}
			// Sort gives the same answer, and a sidecar that quits by itself has no note about its quit endpoint.
			s := catalog.Sort(v, catalog.Options{}).Sidecars[0]
			if (s.Handshake != "") != tt.want {
				t.Errorf("Sort's Handshake = %q; want %v", s.Handshake, tt.want)
			}
			if tt.want && strings.Contains(strings.Join(s.Notes, "\n"), "quit") {
				t.Errorf("notes of a sidecar with a handshake talk of its quit: %q", s.Notes)
			}
		})
	}
	// The app itself is no sidecar with a handshake.
	v := podOf(t, handshakePod)
	if why, ok := catalog.HandshakeQuit(v.Containers[0], v); ok {
		t.Errorf("HandshakeQuit(main) = %q, true; want false", why)
	}
}
