//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
	"github.com/sidesync/sidesync/internal/testing/registrytest"
	"github.com/sidesync/sidesync/internal/testing/releasetest"
)

// TestHelmInstallFromOCI installs both charts as a user does, from the OCI references that
// sidesync-image pushes them to (here a registry on loopback), with the real helm CLI, into a
// real kube-apiserver; the objects of each release are there, with the release's version in
// their labels and its images. Both with their default values: the injector's certificates
// are its own (tls.source self), with nothing else installed in the cluster. Skips without the API server
// (.ci/build-kube.sh) or helm (.ci/build-helm.sh).
func TestHelmInstallFromOCI(t *testing.T) {
	helm := releasetest.Tool(t, "helm")
	c := kubetest.Start(t)
	charts := filepath.Join(t.TempDir(), "charts")
	if _, err := chart.WritePackages(charts, testVersion); err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	runOK(t, "--dist", fakeDist(t), "--version", testVersion, "--commit", testCommit, "--charts", charts,
		"--push", reg+"/sidesync/sidesync:"+testVersion)

	chartVersion := strings.TrimPrefix(testVersion, "v")
	env := append(helmEnv(t), "KUBECONFIG="+c.Kubeconfig(t, c.AdminToken))
	for _, install := range []struct {
		chart  chart.Chart
		values []string
	}{
		{chart.Rescuer, nil},
		{chart.Injector, nil}, // its defaults: certificates of its own (tls.source self), nothing else installed
	} {
		t.Run(string(install.chart), func(t *testing.T) {
			ns := string(install.chart) + "-system"
			args := append([]string{"install", string(install.chart), "oci://" + reg + "/sidesync/sidesync/charts/" + string(install.chart),
				"--version", chartVersion, "--plain-http", "--namespace", ns, "--create-namespace"}, install.values...)
			start := time.Now()
			runHelm(t, helm, env, args...)
			t.Logf("helm install took %v", time.Since(start).Round(time.Millisecond))
			checkInstalled(t, c, ns, string(install.chart), chartVersion)
		})
	}
}

// TestHelmRepoIndex: the real helm takes the release's index.yaml as a chart repository's
// (`helm repo add`, served on loopback) and finds both charts in it at the release's versions.
// Skips without helm (.ci/build-helm.sh).
func TestHelmRepoIndex(t *testing.T) {
	helm := releasetest.Tool(t, "helm")
	charts := t.TempDir()
	if _, err := chart.WritePackages(charts, testVersion); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(charts)))
	defer srv.Close()
	env := helmEnv(t)
	out := runHelm(t, helm, env, "repo", "add", "sidesync", srv.URL)
	out += runHelm(t, helm, env, "search", "repo", "sidesync", "--devel", "-o", "json")
	var found []struct {
		Name, Version string
		AppVersion    string `json:"app_version"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &found); err != nil {
		t.Fatalf("helm search repo: %v\n%s", err, out)
	}
	chartVersion := strings.TrimPrefix(testVersion, "v")
	var got []string
	for _, f := range found {
		got = append(got, f.Name+" "+f.Version+" "+f.AppVersion)
	}
	want := []string{"sidesync/sidesync-injector " + chartVersion + " " + testVersion, "sidesync/sidesync-rescuer " + chartVersion + " " + testVersion}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("helm search repo found %q, want %q", got, want)
	}
}

// helmEnv is the environment helm runs in: its homes in the test's temporary directory.
func helmEnv(t *testing.T) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
}

// runHelm runs helm with args in env, which must succeed, and returns its output.
func runHelm(t *testing.T, helm string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkInstalled checks the Deployment of the release name in ns: the packaged chart's labels,
// and images of the release's version.
func checkInstalled(t *testing.T, c *kubetest.Cluster, ns, name, chartVersion string) {
	t.Helper()
	var dep struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image string
						Args  []string
					}
				}
			}
		}
	}
	if code := c.Do(t, "GET", "/apis/apps/v1/namespaces/"+ns+"/deployments/"+name, nil, &dep); code != 200 {
		t.Fatalf("the release's Deployment %s/%s: %d", ns, name, code)
	}
	labels := dep.Metadata.Labels
	if labels["helm.sh/chart"] != name+"-"+chartVersion || labels["app.kubernetes.io/version"] != testVersion || labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the Deployment's labels %v; want the chart %s-%s, version %s, managed by Helm", labels, name, chartVersion, testVersion)
	}
	ctrs := dep.Spec.Template.Spec.Containers
	if len(ctrs) == 0 || ctrs[0].Image != "ghcr.io/sidesync/"+name+":"+testVersion {
		t.Fatalf("the Deployment's containers %+v; want the image ghcr.io/sidesync/%s:%s", ctrs, name, testVersion)
	}
	if want := "ghcr.io/sidesync/sidesync:" + testVersion; !strings.Contains(strings.Join(ctrs[0].Args, " "), want) {
		t.Errorf("the %s's args %q do not name the sidesync image %s", name, ctrs[0].Args, want)
	}
	var secrets struct {
		Items []struct{ Metadata struct{ Name string } }
	}
	c.Do(t, "GET", "/api/v1/namespaces/"+ns+"/secrets?labelSelector=owner%3Dhelm", nil, &secrets)
	if len(secrets.Items) != 1 || secrets.Items[0].Metadata.Name != "sh.helm.release.v1."+name+".v1" {
		t.Errorf("helm's release records in %s: %+v, want sh.helm.release.v1.%s.v1", ns, secrets.Items, name)
	}
}

// TestKrewInstall installs kubectl-sidesync from the release's krew manifest and archive
// (scripts/release.sh's) with the real krew, offline, as `kubectl krew install --manifest
// --archive` does, and runs `kubectl sidesync version` with the real kubectl: it names the
// release's version, the manifest's. Skips without the release build (releasetest.Dist), krew
// (.ci/build-krew.sh) or kubectl (.ci/build-kubectl.sh).
func TestKrewInstall(t *testing.T) {
	platform := "linux/" + runtime.GOARCH
	dist := releasetest.Dist(t, []string{"kubectl-sidesync"}, []string{platform})
	krew := releasetest.Tool(t, "krew")
	kubectl := releasetest.Tool(t, "kubectl")
	manifest := filepath.Join(dist, "sidesync.yaml")
	archive := filepath.Join(dist, "kubectl-sidesync-linux-"+runtime.GOARCH+".tar.gz")
	var m krewManifestFile
	data, err := os.ReadFile(manifest)
	if err == nil {
		err = yaml.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatalf("the release's krew manifest: %v (scripts/release.sh writes it)", err)
	}

	root := filepath.Join(t.TempDir(), "krew")
	// No network: a proxy that refuses every connection, so that a download would fail.
	env := append(os.Environ(), "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1", "HOME="+t.TempDir(),
		"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=",
		"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	install := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archive)
	install.Env, install.Stdin = env, bytes.NewReader(nil)
	start := time.Now()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, out)
	}
	t.Logf("krew install took %v", time.Since(start).Round(time.Millisecond))

	// kubectl finds the plugin on the PATH krew's bin is in, as a user's shell has it.
	version := exec.Command(kubectl, "sidesync", "version")
	version.Env = env
	out, err := version.CombinedOutput()
	if want := "kubectl-sidesync " + m.Spec.Version + " (commit "; m.Spec.Version == "" || err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("kubectl sidesync version: %q (%v), want %q...", out, err, want)
	}
}
