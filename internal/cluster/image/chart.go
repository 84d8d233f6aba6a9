package image

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Helm's media types for a chart stored in an OCI registry (helm.sh/helm/v4/pkg/registry's
// ConfigMediaType and ChartLayerMediaType; https://helm.sh/docs/topics/registries/).
const (
	HelmConfigMediaType types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType  types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// ChartsPath is the repository, under the image's, that the charts are pushed to: the image
// REGISTRY/PATH has its charts at REGISTRY/PATH/charts/NAME, tagged with their version, since
// Helm requires a chart's repository to end with the chart's name.
const ChartsPath = "charts"

// Chart is a Helm chart to store as an OCI artifact.
type Chart struct {
	// Name and Version are the chart's; Version is the artifact's tag.
	Name, Version string
	// Config is its Chart.yaml as JSON, as Helm's registry client writes it.
	Config []byte
	// Package is the packaged chart, the .tgz.
	Package []byte
	// Annotations are the manifest's (Helm writes the OCI title, version, description, url
	// and source from the Chart.yaml).
	Annotations map[string]string
}

// RefName is the chart's name in an OCI layout's index.json: charts/NAME:VERSION, its
// repository under the image's and its tag.
func (c Chart) RefName() string { return ChartsPath + "/" + c.Name + ":" + c.Version }

// ChartArtifact is c as Helm stores a chart in a registry (`helm push`): an OCI image manifest
// whose config is the Chart.yaml as JSON (HelmConfigMediaType) and whose one layer is the
// package (HelmChartMediaType). `helm install oci://REGISTRY/PATH/charts/NAME --version V`
// installs it.
func ChartArtifact(c Chart) (v1.Image, error) {
	var errs []error
	if c.Name == "" || c.Version == "" {
		errs = append(errs, errors.New("a chart needs a name and a version"))
	}
	if !json.Valid(c.Config) {
		errs = append(errs, fmt.Errorf("chart %s: the config is not JSON", c.Name))
	}
	if len(c.Package) == 0 {
		errs = append(errs, fmt.Errorf("chart %s: no package", c.Name))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	layer := blob{data: c.Package, mediaType: HelmChartMediaType}
	config := blob{data: c.Config, mediaType: HelmConfigMediaType}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        config.descriptor(),
		Layers:        []v1.Descriptor{layer.descriptor()},
		Annotations:   c.Annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(artifact{manifest: raw, config: config, layer: layer})
}

// blob is a config or a layer of an artifact.
type blob struct {
	data      []byte
	mediaType types.MediaType
}

func (b blob) descriptor() v1.Descriptor {
	h, n, _ := v1.SHA256(bytes.NewReader(b.data)) // reading from memory does not fail
	return v1.Descriptor{MediaType: b.mediaType, Size: n, Digest: h}
}

// artifact is a manifest, its config and its one layer: partial.CompressedImageCore, for
// go-containerregistry's layouts and pushes, whose own images (mutate) take only an image
// config.
type artifact struct {
	manifest []byte
	config   blob
	layer    blob
}

func (a artifact) RawConfigFile() ([]byte, error)      { return a.config.data, nil }
func (a artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }

func (a artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	switch h {
	case a.layer.descriptor().Digest:
		return layerBlob(a.layer), nil
	case a.config.descriptor().Digest:
		return layerBlob(a.config), nil
	}
	return nil, fmt.Errorf("the artifact has no blob %s", h)
}

// layerBlob is a blob as partial.CompressedLayer.
type layerBlob blob

func (l layerBlob) Digest() (v1.Hash, error) { return blob(l).descriptor().Digest, nil }
func (l layerBlob) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.data)), nil
}
func (l layerBlob) Size() (int64, error)                { return int64(len(l.data)), nil }
func (l layerBlob) MediaType() (types.MediaType, error) { return l.mediaType, nil }

// ChartRef is where the chart c goes when the image is pushed to img: REGISTRY/PATH/charts/NAME
// tagged with the chart's version, for img REGISTRY/PATH:TAG (or @DIGEST).
func ChartRef(img name.Reference, c Chart) (name.Tag, error) {
	repo := img.Context()
	return name.NewTag(repo.Name()+"/"+ChartsPath+"/"+c.Name+":"+c.Version, name.WithDefaultRegistry(repo.RegistryStr()))
}
