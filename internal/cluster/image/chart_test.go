package image

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testCharts() []Chart {
	return []Chart{
		{Name: "sidesync-injector", Version: "1.2.3", Config: []byte(`{"name":"sidesync-injector","version":"1.2.3","apiVersion":"v2"}`),
			Package: []byte("injector's tgz"), Annotations: map[string]string{"org.opencontainers.image.title": "sidesync-injector"}},
		{Name: "sidesync-rescuer", Version: "1.2.3", Config: []byte(`{"name":"sidesync-rescuer","version":"1.2.3","apiVersion":"v2"}`),
			Package: []byte("rescuer's tgz")},
	}
}

// TestLayoutCharts: beside the image index, the layout holds each chart as Helm stores it in a
// registry: a manifest named charts/NAME:VERSION whose config is the Chart.yaml's JSON with
// Helm's config media type and whose one layer is the package with Helm's chart media type.
func TestLayoutCharts(t *testing.T) {
	idx, err := Build(testRelease())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	charts := testCharts()
	if err := WriteLayout(dir, idx, "v1.2.3", charts...); err != nil {
		t.Fatal(err)
	}
	var top v1.IndexManifest
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err == nil {
		err = json.Unmarshal(raw, &top)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1+len(charts) || top.Manifests[0].Annotations[RefName] != "v1.2.3" {
		t.Fatalf("index.json holds %d manifests, want the image index, then %d charts:\n%s", len(top.Manifests), len(charts), raw)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range charts {
		d := top.Manifests[1+i]
		if got, want := d.Annotations[RefName], "charts/"+c.Name+":1.2.3"; got != want || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("chart %s: ref.name %q, media type %s; want %q, %s", c.Name, got, d.MediaType, want, types.OCIManifestSchema1)
		}
		img, err := p.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkArtifact(t, img, c)
	}
}

// checkArtifact checks that img is c as Helm stores it.
func checkArtifact(t *testing.T, img v1.Image, c Chart) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		t.Errorf("chart %s: config %s, layers %v; want Helm's media types, one layer", c.Name, m.Config.MediaType, m.Layers)
		return
	}
	if m.Annotations["org.opencontainers.image.title"] != c.Annotations["org.opencontainers.image.title"] {
		t.Errorf("chart %s: annotations %v, want %v", c.Name, m.Annotations, c.Annotations)
	}
	config, err := img.RawConfigFile()
	if err != nil || !bytes.Equal(config, c.Config) {
		t.Errorf("chart %s: config %q (%v), want %q", c.Name, config, err, c.Config)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(data, c.Package) {
		t.Errorf("chart %s: layer %q (%v), want the package %q", c.Name, data, err, c.Package)
	}
}

func TestChartArtifactRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		chart Chart
		want  string
	}{
		{"no version", Chart{Name: "x", Config: []byte(`{}`), Package: []byte("tgz")}, "a name and a version"},
		{"config not JSON", Chart{Name: "x", Version: "1.0.0", Config: []byte(`name: x`), Package: []byte("tgz")}, "not JSON"},
		{"no package", Chart{Name: "x", Version: "1.0.0", Config: []byte(`{}`)}, "no package"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ChartArtifact(c.chart); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
			dir := filepath.Join(t.TempDir(), "layout")
			idx, err := Build(testRelease())
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteLayout(dir, idx, "v1.2.3", c.chart); err == nil {
				t.Error("WriteLayout took the chart")
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("WriteLayout wrote %s (%v)", dir, err)
			}
		})
	}
}

func TestChartRef(t *testing.T) {
	c := testCharts()[0]
	for in, want := range map[string]string{
		"ghcr.io/sidesync/sidesync:v1.2.3":                     "ghcr.io/sidesync/sidesync/charts/sidesync-injector:1.2.3",
		"127.0.0.1:5000/a/b@sha256:" + strings.Repeat("0", 64): "127.0.0.1:5000/a/b/charts/sidesync-injector:1.2.3",
		"localhost:5000/sidesync":                              "localhost:5000/sidesync/charts/sidesync-injector:1.2.3",
	} {
		ref, err := name.ParseReference(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ChartRef(ref, c)
		if err != nil || got.String() != want {
			t.Errorf("ChartRef(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
