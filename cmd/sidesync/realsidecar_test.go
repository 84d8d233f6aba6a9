package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/realsidecar"
)

// TestRealCloudSQLProxy runs sidesync against the real Cloud SQL Auth Proxy v2, built from the Go
// module proxy by .ci/build-cloudsql-proxy.sh: it must wait for /startup, run the command, quit
// the proxy on its admin port (bound to "localhost"), and the proxy must exit 0.
func TestRealCloudSQLProxy(t *testing.T) {
	t.Parallel()
	p := realsidecar.StartCloudSQLProxy(t)
	marker := filepath.Join(t.TempDir(), "ran")
	spec := fmt.Sprintf("cloudsql:ready-port=%d,quit-port=%d", p.HTTPPort, p.AdminPort)
	r := sidesync(t, nil, "--sidecar", spec, "--", bin.testcmd, "touch", marker)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the command did not run")
	}
	if code := p.Wait(t); code != 0 {
		t.Errorf("the proxy exited %d after the quit, want 0", code)
	}
	mustContain(t, r.stderr, "sidecar ready sidecar=cloudsql url="+p.StartupURL())
	// The proxy may exit before its 200 reaches us (a few in a thousand quits): that is a
	// success too (internal/testing/realsidecar/README.md).
	if !strings.Contains(r.stderr, "sidecar quit sidecar=cloudsql url="+p.QuitURL()+" status=200") &&
		!strings.Contains(r.stderr, "sidecar quit: it closed the connection after the request sidecar=cloudsql") {
		t.Errorf("no successful quit logged:\n%s", r.stderr)
	}
}
