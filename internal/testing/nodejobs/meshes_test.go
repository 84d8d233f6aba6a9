//go:build linux

package nodejobs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/catalog"
)

// meshAnnotations are what a Job's pod template says to ask each mesh of no example for its
// sidecar, with its quit switched on: Consul's lifecycle server (consul-k8s 1.2+), Vault Agent's
// quit API.
var meshAnnotations = map[string]string{
	"consul": `consul.hashicorp.com/connect-inject: "true"
        consul.hashicorp.com/enable-sidecar-proxy-lifecycle: "true"`,
	"vault": `vault.hashicorp.com/agent-inject: "true"
        vault.hashicorp.com/agent-enable-quit: "true"
        vault.hashicorp.com/role: exporter`,
}

// TestMeshes runs the OSM example's Job under the meshes that no example shows, Consul and
// Vault Agent as a Job's sidecar: the stand-in of the mesh's webhook adds its container (the
// catalog's name and marks, the emulator of its endpoints), sidesync finds it through the
// downward API, waits for it where it can be waited for, and tells it to quit by its protocol.
func TestMeshes(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	plain := exampleStream(t, "osm", "plain")
	for _, mesh := range sortedKeys(meshAnnotations) {
		t.Run(mesh, func(t *testing.T) {
			t.Parallel()
			manifest := bytes.Replace(plain, []byte("openservicemesh.io/sidecar-injection: enabled"), []byte(meshAnnotations[mesh]), 1)
			if bytes.Equal(manifest, plain) {
				t.Fatal("the OSM example has no openservicemesh.io/sidecar-injection annotation to replace")
			}
			file := filepath.Join(t.TempDir(), mesh+".yaml")
			if err := os.WriteFile(file, manifest, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "inject", "-f", file, "--image", sidesyncImage).Output()
			if err != nil {
				t.Fatalf("kubectl sidesync inject: %v", err)
			}
			ns := namespace(t, n, mesh)
			begin := time.Now()
			job := createOne(t, n, ns, "Job", out)
			p := waitJob(t, n, ns, job, "Complete", begin)
			e, _ := catalog.Lookup(mesh)
			checkRunOf(t, n, ns, p, mesh, e.Container, false)
		})
	}
}
