package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// testRelease is a release version as scripts/release.sh makes one for an untagged commit.
const testRelease = "v0.0.0-20261206221000-0123456789ab"

func TestChartVersion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-rc.1", "1.2.3-rc.1"},
		{testRelease, "0.0.0-20261206221000-0123456789ab"},
		{testRelease + "-dirty", "0.0.0-20261206221000-0123456789ab-dirty"},
		{"v0.0.0-unknown", "0.0.0-unknown"},
	} {
		got, err := ChartVersion(c.in)
		if err != nil || got != c.want {
			t.Errorf("ChartVersion(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "1.2.3", "v1.2", "v1", "vnext", "v1.2.3+"} {
		if got, err := ChartVersion(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ChartVersion(%q) = %q, %v; want an error that names it", bad, got, err)
		}
	}
}

// TestPackage: each package is what Helm's loader reads back as the chart of the checkout
// (every file there but those .helmignore leaves out), with the release's version and
// appVersion, under NAME/ in the archive, and the same bytes every time.
func TestPackage(t *testing.T) {
	for _, ch := range Charts() {
		t.Run(string(ch), func(t *testing.T) {
			p, err := ch.Package(testRelease)
			if err != nil {
				t.Fatal(err)
			}
			if want := string(ch) + "-0.0.0-20261206221000-0123456789ab.tgz"; p.File != want {
				t.Errorf("File = %q, want %q", p.File, want)
			}
			got, err := loader.LoadArchive(bytes.NewReader(p.Data))
			if err != nil {
				t.Fatal(err)
			}
			dir, err := ch.Dir()
			if err != nil {
				t.Fatal(err)
			}
			want, err := loader.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Metadata.Version != "0.0.0-20261206221000-0123456789ab" || got.Metadata.AppVersion != testRelease {
				t.Errorf("version %q, appVersion %q; want the release's", got.Metadata.Version, got.Metadata.AppVersion)
			}
			wantMeta := *want.Metadata
			wantMeta.Version, wantMeta.AppVersion = got.Metadata.Version, got.Metadata.AppVersion
			if diff := cmp.Diff(&wantMeta, got.Metadata); diff != "" {
				t.Errorf("Chart.yaml (-checkout +package):\n%s", diff)
			}
			if diff := cmp.Diff(rawFiles(t, want.Raw), rawFiles(t, got.Raw), ignoreChartYAML()); diff != "" {
				t.Errorf("files (-checkout +package):\n%s", diff)
			}
			names, err := tarNames(p.Data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if !strings.HasPrefix(n, string(ch)+"/") {
					t.Errorf("%s is not under %s/", n, ch)
				}
			}
			again, err := ch.Package(testRelease)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p.Data, again.Data) {
				t.Error("packaging the chart twice gave different bytes")
			}
			t.Logf("%s: %d bytes, %d files", p.File, len(p.Data), len(names))
		})
	}
}

func rawFiles(t *testing.T, files []*common.File) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, f := range files {
		m[f.Name] = string(f.Data)
	}
	if len(m) < 3 {
		t.Fatalf("only %d files in the chart", len(m))
	}
	return m
}

// ignoreChartYAML leaves Chart.yaml out: the package's is the metadata, rewritten with the
// release's versions (as `helm package` does), and compared as such above.
func ignoreChartYAML() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		mi, ok := p.Last().(cmp.MapIndex)
		return ok && mi.Key().String() == "Chart.yaml"
	}, cmp.Ignore())
}

// tarNames lists the names in a gzipped tar, whose every mtime must be the epoch.
func tarNames(data []byte) ([]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if h.ModTime.Unix() != 0 {
			return nil, fmt.Errorf("%s: mtime %v, want the epoch", h.Name, h.ModTime)
		}
		names = append(names, h.Name)
	}
}

// TestPackageImages: rendered from its package with no values, a chart names the release's
// images, since its image tags are empty and default to the appVersion.
func TestPackageImages(t *testing.T) {
	p, err := Rescuer.Package(testRelease)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), p.File)
	if err := os.WriteFile(path, p.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := renderDir(path, string(Rescuer), nil, testNamespace, KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	dep := files["sidesync-rescuer/templates/deployment.yaml"]
	for _, want := range []string{`image: "ghcr.io/sidesync/sidesync-rescuer:` + testRelease + `"`, "--image=ghcr.io/sidesync/sidesync:" + testRelease} {
		if !strings.Contains(dep, want) {
			t.Errorf("the deployment has no %q:\n%s", want, dep)
		}
	}
	dir, err := Rescuer.Dir()
	if err != nil {
		t.Fatal(err)
	}
	checkout, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if strings.Contains(content, checkout.Metadata.AppVersion) {
			t.Errorf("%s names the checkout's appVersion %s", name, checkout.Metadata.AppVersion)
		}
	}
}

// TestWritePackages: the directory gets both packages and an index.yaml that lists each at the
// release's URL with the sha256 of the file beside it.
func TestWritePackages(t *testing.T) {
	dir := t.TempDir()
	paths, err := WritePackages(dir, testRelease)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "sidesync-injector-0.0.0-20261206221000-0123456789ab.tgz"),
		filepath.Join(dir, "sidesync-rescuer-0.0.0-20261206221000-0123456789ab.tgz"),
		filepath.Join(dir, IndexFile),
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(want) {
		t.Errorf("the directory holds %d files (%v), want %d", len(entries), err, len(want))
	}
	data, err := os.ReadFile(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		APIVersion string `json:"apiVersion"`
		Entries    map[string][]struct {
			Name, Version, AppVersion, Digest string
			URLs                              []string
		}
	}
	if err := yaml.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `generated: "1970-01-01T00:00:00Z"`) {
		t.Errorf("index.yaml is not generated at the epoch:\n%s", data)
	}
	if index.APIVersion != "v1" || len(index.Entries) != 2 {
		t.Fatalf("index.yaml: apiVersion %q, %d entries:\n%s", index.APIVersion, len(index.Entries), data)
	}
	for i, ch := range Charts() {
		e := index.Entries[string(ch)]
		if len(e) != 1 {
			t.Errorf("%s: %d versions in the index, want 1", ch, len(e))
			continue
		}
		tgz, err := os.ReadFile(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(tgz)
		file := filepath.Base(paths[i])
		got := e[0]
		if got.Name != string(ch) || got.Version != "0.0.0-20261206221000-0123456789ab" || got.AppVersion != testRelease ||
			got.Digest != hex.EncodeToString(sum[:]) || len(got.URLs) != 1 || got.URLs[0] != ReleaseURL(testRelease)+"/"+file {
			t.Errorf("%s's entry: %+v; want its version, its file's sha256 %x and %s/%s", ch, got, sum, ReleaseURL(testRelease), file)
		}
	}
}

// TestWritePackagesReproducible: written twice, every file has the same bytes (no time of the
// run in the packages or the index).
func TestWritePackagesReproducible(t *testing.T) {
	var runs [2][]string
	for i := range runs {
		paths, err := WritePackages(t.TempDir(), testRelease)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			runs[i] = append(runs[i], filepath.Base(p)+" "+hex.EncodeToString(sum[:]))
		}
	}
	if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("two runs (-first +second):\n%s", diff)
	}
}

// TestWritePackagesRefuses: a version that is no release's writes nothing.
func TestWritePackagesRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := WritePackages(dir, "1.2.3"); err == nil || !strings.Contains(err.Error(), `"1.2.3"`) {
		t.Errorf("err = %v, want one naming the version", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was made (%v)", err)
	}
}
