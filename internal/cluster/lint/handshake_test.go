package lint

import (
	"strings"
	"testing"
)

// handshakeJob is the pattern from before native sidecars: the Cloud SQL Auth Proxy (v1 here,
// which has neither --quitquitquit nor a health check) started by sh -c in the background and
// killed once the app's EXIT trap touches a file on a shared emptyDir. The pod completes.
const handshakeJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
      volumes:
      - name: tmp-pod
        emptyDir: {}
      containers:
      - name: main
        image: example/migrate:1.0
        command: ["/bin/bash", "-c"]
        args:
        - |
          trap "touch /tmp/pod/main-terminated" EXIT
          /app/migrate --db-host=127.0.0.1
        volumeMounts:
        - name: tmp-pod
          mountPath: /tmp/pod
      - name: cloudsql-proxy
        image: gcr.io/cloudsql-docker/gce-proxy:1.33.2
        command: ["/bin/sh", "-c"]
        args:
        - |
          /cloud_sql_proxy -instances=project:region:db=tcp:5432 &
          CHILD_PID=$!
          (while true; do if [[ -f "/tmp/pod/main-terminated" ]]; then kill $CHILD_PID; echo "Killed $CHILD_PID as the main container terminated."; fi; sleep 1; done) &
          wait $CHILD_PID
          if [[ -f "/tmp/pod/main-terminated" ]]; then exit 0; echo "Job completed. Exiting..."; fi
        volumeMounts:
        - name: tmp-pod
          mountPath: /tmp/pod
          readOnly: true
`

// TestHandshake: a sidecar that a hand-written handshake ends gets neither the never-quits nor
// the switch findings, which would fail CI on a Job that completes, but an info that says why.
func TestHandshake(t *testing.T) {
	runCases(t, []lintCase{
		{"v1 proxy ended by the handshake", handshakeJob, []short{{Info, RuleHandshake, "cloudsql-proxy"}}},
		{"v2 proxy without --quitquitquit nor --health-check, ended by the handshake",
			strings.Replace(handshakeJob, "gcr.io/cloudsql-docker/gce-proxy:1.33.2", "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0", 1),
			[]short{{Info, RuleHandshake, "cloudsql-proxy"}}},
		{"the same proxy when the app touches nothing: the errors stay",
			strings.Replace(handshakeJob, `trap "touch /tmp/pod/main-terminated" EXIT`, "", 1),
			[]short{errorOf(RuleNeverQuits, "cloudsql-proxy"), errorOf(RuleCloudSQLQuit, "cloudsql-proxy"), warningOf(RuleCloudSQLHealth, "cloudsql-proxy")}},
	})
	fs := lintOne(t, handshakeJob)
	if got := fs[0].String(); !strings.Contains(got, "/tmp/pod (volume tmp-pod)") || !strings.Contains(got, "main") || !strings.Contains(got, "native sidecar") {
		t.Errorf("finding = %q; want it to name the volume, the app and the native sidecar", got)
	}
}
