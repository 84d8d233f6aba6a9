package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSidecarsAnnotation: the sidecars that `kubectl sidesync inject` lists in the pod
// annotation sidesync.io/sidecars, read from the downward-API volume, are waited for and told to
// quit; where the mesh's own mark names the same profile, the annotation's entry (with its port)
// is the one used, once; a malformed entry is a warning with the annotation's text, and the run
// goes on with the others.
func TestSidecarsAnnotation(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "linkerd", "--ready-after-probes", "1")
	value := "linkerd:port=" + e.port("admin") + ",bogus"
	dir := t.TempDir()
	ann := "sidesync.io/sidecars=" + strconv.Quote(value) + "\nlinkerd.io/proxy-version=\"edge-26.8.3\"\n"
	if err := os.WriteFile(filepath.Join(dir, "annotations"), []byte(ann), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sidesync(t, nil, "--pod-info", dir, "--kube-api=false", "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("exit %d, %d quits; want 0, 1; stderr:\n%s", r.code, e.quits(), r.stderr)
	}
	mustContain(t, r.stderr, `detected sidecar sidecar=linkerd from="pod annotations in `+dir+`" by="annotation sidesync.io/sidecars"`,
		`WARN ignoring what cannot be read in the pod annotation sidesync.io/sidecars="`+value+`": unknown sidecar "bogus"`,
		"sidecar ready sidecar=linkerd")
	if n := strings.Count(r.stderr, "detected sidecar"); n != 1 {
		t.Errorf("%d sidecars detected, want linkerd once:\n%s", n, r.stderr)
	}
}
