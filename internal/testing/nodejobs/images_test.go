//go:build linux

package nodejobs

import (
	"bytes"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/testing/emulator"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
	"github.com/sidesync/sidesync/internal/testing/realsidecar"
	"github.com/sidesync/sidesync/sidecar"
)

// examplesDir is deploy/examples, from this package's directory.
const examplesDir = "../../../deploy/examples"

// exampleSidecar is the profile of each example's sidecar: the one its mesh injects or its
// manifest holds (deploy/examples/README.md's table).
var exampleSidecar = map[string]string{
	"osm": "osm", "istio": "istio", "linkerd": "linkerd", "dapr": "dapr", "cloudsql": "cloudsql",
	"cloudsql-native": "cloudsql", "argo": "istio", "tekton": "linkerd", "airflow": "vault",
}

// emulated are the sidecars the mesh stand-in injects, each as sidesync-emulator's profile of it
// (App Mesh's, which no annotation asks for, is written into the manifest by the rescue tests).
var emulated = []string{"osm", "istio", "linkerd", "dapr", "vault", "consul", "kuma", "appmesh"}

// sidecarImage is the image of the emulated sidecar called name.
func sidecarImage(name string) string { return "sidesync.invalid/sidecar-" + name + ":1" }

// readyAfter is how long an emulated sidecar takes to become ready: long enough that an app
// started at once would find it not ready, which sidesync must wait out.
const readyAfter = "2s"

// cloudSQLImage is the Cloud SQL Auth Proxy's image as the examples name it.
const cloudSQLImage = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.21.0"

// sidecarImages are the emulated sidecars, each listening on its real ports on loopback, and
// the real Cloud SQL Auth Proxy (when .ci/build-cloudsql-proxy.sh built it) under the examples'
// image name, offline with a fake token.
func sidecarImages(dir string) []kubetest.Image {
	var images []kubetest.Image
	for _, name := range emulated {
		p, ok := emulator.LookupProfile(name)
		if !ok {
			panic("no emulator profile " + name)
		}
		entry := []string{"/sidesync-emulator", "emulate", name, "-ready-after", readyAfter}
		for _, l := range p.Listeners {
			entry = append(entry, "-listen", l.Name+"=127.0.0.1:"+strconv.Itoa(l.Port))
		}
		images = append(images, kubetest.Image{Ref: sidecarImage(name),
			Files:      map[string]string{"/sidesync-emulator": filepath.Join(dir, "sidesync-emulator")},
			Entrypoint: entry})
	}
	proxy := filepath.Join(realsidecar.CloudSQLBinDir(), "cloud-sql-proxy")
	if _, err := os.Stat(proxy); err == nil {
		images = append(images, kubetest.Image{Ref: cloudSQLImage,
			Files:      map[string]string{"/cloud-sql-proxy": proxy},
			Entrypoint: []string{"/cloud-sql-proxy"},
			// Offline: a token instead of Google credentials, which it would fetch. It then
			// serves its health checks and /quitquitquit; it dials an instance only when a
			// client connects, which no example does.
			Env: []string{"CSQL_PROXY_TOKEN=fake-token"}})
	}
	return images
}

// appImages are the examples' own images (their apps, Argo's argoexec, Tekton's entrypoint,
// the orchestrators' helper containers): the stand-in program at the path each container's
// command names, and as /bin/sh. An app's image tells it to check its sidecar's readiness at
// start, so that the log says whether the sidecar was ready when the app ran.
func appImages(dir string) []kubetest.Image {
	app := filepath.Join(dir, "app")
	files := map[string]map[string]string{} // image → its files
	env := map[string][]string{}
	for ex, profile := range exampleSidecar {
		data, err := os.ReadFile(filepath.Join(examplesDir, "plain", ex+".yaml"))
		if err != nil {
			panic(err)
		}
		check := readyURL(profile)
		for _, doc := range splitYAML(data) {
			var obj map[string]any
			if yaml.Unmarshal(doc, &obj) != nil || obj == nil {
				continue
			}
			for _, c := range containersOf(obj) {
				img, _ := c["image"].(string)
				cmd, _ := c["command"].([]any)
				if img == "" || img == cloudSQLImage {
					continue
				}
				if files[img] == nil {
					files[img] = map[string]string{"/bin/sh": app}
					if check != "" {
						env[img] = []string{"APP_CHECK_URL=" + check}
					}
				}
				if len(cmd) > 0 {
					exe, _ := cmd[0].(string)
					if !path.IsAbs(exe) {
						exe = "/usr/local/bin/" + exe
					}
					files[img][exe] = app
				}
			}
		}
	}
	var images []kubetest.Image
	for _, img := range sortedKeys(files) {
		im := kubetest.Image{Ref: img, Files: files[img], Env: env[img]}
		if _, ok := files[img]["/bin/sh"]; ok && len(files[img]) == 1 {
			// No command in the manifest (Tekton's registry sidecar): run until stopped.
			im.Entrypoint, im.Env = []string{"/bin/sh"}, append(im.Env, "APP_SLEEP=24h")
		}
		images = append(images, im)
	}
	return images
}

// readyURL is the URL whose answer says that the profile's sidecar is ready, or "".
func readyURL(profile string) string {
	sc, ok := catalog.Profile(profile)
	if !ok || sc.Ready == nil {
		return ""
	}
	if sc.Ready.Kind == sidecar.EnvoyAdmin {
		return strings.TrimSuffix(sc.Ready.URL, "/") + "/ready"
	}
	return sc.Ready.URL
}

// containersOf returns the containers and init containers of a Pod, Job or CronJob object.
func containersOf(obj map[string]any) []map[string]any {
	spec := obj
	for _, key := range templatePath(obj) {
		next, _ := spec[key].(map[string]any)
		spec = next
	}
	var out []map[string]any
	for _, list := range []string{"initContainers", "containers"} {
		items, _ := spec[list].([]any)
		for _, it := range items {
			if c, ok := it.(map[string]any); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// templatePath is where an object's pod spec is.
func templatePath(obj map[string]any) []string {
	switch obj["kind"] {
	case "Job":
		return []string{"spec", "template", "spec"}
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	return []string{"spec"}
}

// splitYAML splits a YAML stream into its documents.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// yamlToMap reads one YAML document as JSON would: nil for an empty or comment-only one.
func yamlToMap(t testing.TB, doc []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		t.Fatalf("reading YAML: %v", err)
	}
	return obj
}

// streamObject returns the first object of kind in a YAML stream, or fails the test.
func streamObject(t testing.TB, stream []byte, kind string) map[string]any {
	t.Helper()
	for _, doc := range splitYAML(stream) {
		if obj := yamlToMap(t, doc); obj != nil && obj["kind"] == kind {
			return obj
		}
	}
	t.Fatalf("no %s in the stream", kind)
	return nil
}

// podTemplate returns a Job's pod template and its spec.
func podTemplate(job map[string]any) (tmpl, spec map[string]any) {
	tmpl = job["spec"].(map[string]any)["template"].(map[string]any)
	return tmpl, tmpl["spec"].(map[string]any)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
