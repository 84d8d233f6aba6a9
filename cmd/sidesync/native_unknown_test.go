package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestLinkerdMaybeNative: a Linkerd proxy found by its marks in the downward-API volume, which
// Linkerd leaves the same on a native and a classic proxy, is waited for but not told to quit
// when sidesync cannot read its Pod (here --kube-api=false): it may be native, and sidesync
// never tells a native sidecar to quit. The pod's own native-sidecar annotation settles it.
func TestLinkerdMaybeNative(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		native string // config.linkerd.io/proxy-enable-native-sidecar, "" for none
		quits  int
		log    string
	}{
		{"nothing says", "", 0, `WARN not telling linkerd to quit: it may be a native sidecar`},
		{"classic by its annotation", "false", 1, `INFO sidecar quit sidecar=linkerd`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startProfile(t, "linkerd", "--ready-after-probes", "1")
			ann := "linkerd.io/proxy-version=\"edge-26.5.2\"\nconfig.linkerd.io/proxy-admin-shutdown=\"enabled\"\n" +
				"config.linkerd.io/admin-port=" + strconv.Quote(e.port("admin")) + "\n"
			if tt.native != "" {
				ann += "config.linkerd.io/proxy-enable-native-sidecar=" + strconv.Quote(tt.native) + "\n"
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "annotations"), []byte(ann), 0o644); err != nil {
				t.Fatal(err)
			}
			r := sidesync(t, nil, "--pod-info", dir, "--kube-api=false", "--", bin.testcmd, "exit", "0")
			e.Kill()
			e.waitExit() // every event it printed is read
			if r.code != 0 || e.quits() != tt.quits || e.requests("/shutdown") != tt.quits {
				t.Errorf("exit %d, %d quits, %d requests for /shutdown; want 0, %d, %d; stderr:\n%s", r.code, e.quits(), e.requests("/shutdown"), tt.quits, tt.quits, r.stderr)
			}
			mustContain(t, r.stderr, "sidecar ready sidecar=linkerd", tt.log)
		})
	}
}
