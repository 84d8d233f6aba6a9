package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/image"
	"github.com/sidesync/sidesync/internal/testing/registrytest"
)

// runOK runs sidesync-image in this process with args, which must succeed, and returns its
// stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("sidesync-image %q: exit %d\n%s", args, code, stderr.String())
	}
	return stdout.String()
}

// krewDist writes stand-ins for kubectl-sidesync for both platforms and a license.
func krewDist(t *testing.T) (dist, license string) {
	t.Helper()
	dist = t.TempDir()
	for _, p := range []string{"linux-amd64", "linux-arm64"} {
		if err := os.WriteFile(filepath.Join(dist, "kubectl-sidesync-"+p), []byte("#!/bin/sh\necho "+p+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	license = filepath.Join(t.TempDir(), "LICENSE")
	if err := os.WriteFile(license, []byte("the license\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dist, license
}

// krewManifestFile is what TestKrew reads back of sidesync.yaml.
type krewManifestFile struct {
	APIVersion, Kind string
	Metadata         struct{ Name string }
	Spec             struct {
		Version, Homepage, ShortDescription, Description string
		Platforms                                        []struct {
			Selector         struct{ MatchLabels map[string]string }
			URI, Sha256, Bin string
			Files            []struct{ From, To string }
		}
	}
}

// TestKrew: `sidesync-image krew` packs each platform's kubectl-sidesync with the license into
// an archive, the same bytes every time, and writes a manifest that names each archive at the
// release's URL with its sha256; TestKrewInstall installs them with the real krew.
func TestKrew(t *testing.T) {
	dist, license := krewDist(t)
	args := []string{"krew", "--version", testVersion, "--dist", dist, "--license", license, "--platforms", "linux/amd64 linux/arm64"}
	out := runOK(t, args...)
	want := []string{"kubectl-sidesync-linux-amd64.tar.gz", "kubectl-sidesync-linux-arm64.tar.gz", "sidesync.yaml"}
	for i := range want {
		want[i] = filepath.Join(dist, want[i])
	}
	if diff := cmp.Diff(want, strings.Fields(out)); diff != "" {
		t.Fatalf("printed paths (-want +got):\n%s", diff)
	}
	var m krewManifestFile
	data, err := os.ReadFile(want[2])
	if err == nil {
		err = yaml.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "sidesync" ||
		m.Spec.Version != testVersion || m.Spec.ShortDescription == "" || strings.Contains(m.Spec.ShortDescription, "\n") ||
		m.Spec.Homepage != "https://github.com/sidesync/sidesync" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("the manifest is not krew's Plugin sidesync %s:\n%s", testVersion, data)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		p := m.Spec.Platforms[i]
		archive, err := os.ReadFile(want[i])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(archive)
		if p.Sha256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s, but the archive's is %x", arch, p.Sha256, sum)
		}
		wantURI := "https://github.com/sidesync/sidesync/releases/download/" + testVersion + "/kubectl-sidesync-linux-" + arch + ".tar.gz"
		if p.URI != wantURI || p.Bin != "kubectl-sidesync" || !cmp.Equal(p.Selector.MatchLabels, map[string]string{"os": "linux", "arch": arch}) {
			t.Errorf("%s: uri %s, bin %s, selector %v; want %s, kubectl-sidesync, os linux and arch %s", arch, p.URI, p.Bin, p.Selector.MatchLabels, wantURI, arch)
		}
		bin, err := os.ReadFile(filepath.Join(dist, "kubectl-sidesync-linux-"+arch))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]tarEntry{{"LICENSE", 0o644, "the license\n"}, {"kubectl-sidesync", 0o755, string(bin)}}, untar(t, archive)); diff != "" {
			t.Errorf("%s's archive (-want +got):\n%s", arch, diff)
		}
	}
	before := tree(t, dist)
	runOK(t, args...)
	if after := tree(t, dist); after != before {
		t.Errorf("packing again gave other bytes:\n%s\n%s", before, after)
	}
}

type tarEntry struct {
	Name string
	Mode int64
	Data string
}

// untar lists a gzipped tar's regular files, checking that each is owned by root at the epoch.
func untar(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var entries []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 || h.Typeflag != tar.TypeReg {
			t.Errorf("%s: uid %d, gid %d, mtime %v, type %c; want a file of root's at the epoch", h.Name, h.Uid, h.Gid, h.ModTime, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, tarEntry{h.Name, h.Mode, string(b)})
	}
}

// tree lists the files in dir with their sha256s.
func tree(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name() + " " + hex.EncodeToString(sha256Of(data)) + "\n")
	}
	return b.String()
}

func sha256Of(data []byte) []byte {
	sum := sha256.Sum256(data)
	return sum[:]
}

// TestKrewRefuses: bad flags are usage errors (exit 2), a missing binary fails (exit 1), and
// neither writes anything.
func TestKrewRefuses(t *testing.T) {
	dist, license := krewDist(t)
	before := tree(t, dist)
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"bad flags", []string{"--version", "1.2.3", "--platforms", "linux,linux/amd64,linux/amd64"}, exitUsage,
			[]string{`--version: version "1.2.3" does not start with v`, `platform "linux": want os/arch`, `platform "linux/amd64" twice`}},
		{"no binary", []string{"--version", testVersion, "--platforms", "linux/amd64,darwin/arm64"}, exitFailed,
			[]string{"kubectl-sidesync-darwin-arm64: no such file", "scripts/release.sh builds it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"krew", "--dist", dist, "--license", license}, c.args...)
			if code := run(args, &stdout, &stderr); code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if after := tree(t, dist); after != before {
				t.Errorf("it wrote:\n%s", after)
			}
		})
	}
}

// TestCharts: `sidesync-image charts` writes both packages and the index, and refuses a version
// that is not a release's with exit 2, writing nothing.
func TestCharts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dist")
	out := runOK(t, "charts", "--version", testVersion, "--out", dir)
	var want []string
	for _, ch := range chart.Charts() {
		file, err := chart.PackageFile(ch, testVersion)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, filepath.Join(dir, file))
	}
	want = append(want, filepath.Join(dir, "index.yaml"))
	if diff := cmp.Diff(want, strings.Fields(out)); diff != "" {
		t.Errorf("printed paths (-want +got):\n%s", diff)
	}
	for _, p := range want {
		if !fileExists(p) {
			t.Errorf("%s was not written", p)
		}
	}
	other := filepath.Join(t.TempDir(), "other")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"charts", "--version", "9.8.7", "--out", other}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--version") {
		t.Errorf("a version without v: exit %d, want %d naming --version\n%s", code, exitUsage, stderr.String())
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("it made %s (%v)", other, err)
	}
}

// TestPushCharts: with --charts, the image's push puts each chart beside it, at
// REPO/charts/NAME:X.Y.Z, as Helm's artifact of the package in the directory.
func TestPushCharts(t *testing.T) {
	charts := filepath.Join(t.TempDir(), "charts")
	if _, err := chart.WritePackages(charts, testVersion); err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	ref := reg + "/sidesync/sidesync:" + testVersion
	var stdout, stderr bytes.Buffer
	args := []string{"--dist", fakeDist(t), "--version", testVersion, "--commit", testCommit, "--charts", charts, "--push", ref}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, ch := range chart.Charts() {
		file, _ := chart.PackageFile(ch, testVersion)
		pkg, err := os.ReadFile(filepath.Join(charts, file))
		if err != nil {
			t.Fatal(err)
		}
		at := reg + "/sidesync/sidesync/charts/" + string(ch) + ":" + strings.TrimPrefix(testVersion, "v")
		if !strings.Contains(stderr.String(), "pushed the chart oci://"+strings.TrimSuffix(at, ":"+strings.TrimPrefix(testVersion, "v"))) {
			t.Errorf("the log does not say where %s went:\n%s", ch, stderr.String())
		}
		r, err := name.ParseReference(at)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r)
		if err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers (%v)", at, len(layers), err)
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" || !bytes.Equal(got, pkg) {
			t.Errorf("%s: config %s, layer %s (%d bytes); want Helm's media types and %s (%d bytes)", at, m.Config.MediaType, m.Layers[0].MediaType, len(got), file, len(pkg))
		}
	}
}

// TestInstallDocs: the install guide and the README give the chart's OCI reference where
// --push of the release image puts it (image.ChartRef), and the krew manifest's release URL.
func TestInstallDocs(t *testing.T) {
	img, err := name.ParseReference("ghcr.io/sidesync/sidesync:vX.Y.Z")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := image.ChartRef(img, image.Chart{Name: string(chart.Injector), Version: "X.Y.Z"})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"../../docs/INSTALL.md", "../../README.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"helm install sidesync-injector oci://" + ref.Context().String() + " --version X.Y.Z",
			"kubectl krew install --manifest-url=" + chart.ReleaseURL("vX.Y.Z") + "/sidesync.yaml",
		} {
			if !strings.Contains(string(data), want) {
				t.Errorf("%s does not say %q", doc, want)
			}
		}
	}
}
