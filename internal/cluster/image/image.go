// Package image builds sidesync's container image without a container runtime (issue 9): from
// the release binaries that scripts/release.sh writes, one image per platform, each the binary
// alone at /sidesync in one layer on scratch, gathered in one OCI image index. It runs no
// Docker daemon and pulls no base image, and the same binaries give the same digests, byte for
// byte. The Dockerfile at the repository root builds the same layout with Docker.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout: the contract with the pods that internal/cluster/inject writes (its ImageBinary)
// and with the Dockerfile, which TestContract checks.
const (
	// Binary is where the image holds the binary: its root, and its entrypoint.
	Binary = "/sidesync"
	// Mode is the binary's mode: executable and readable by any user (install reads it to copy
	// it), writable by none.
	Mode = 0o555
	// User is the user and group the image runs as: distroless's "nonroot". A scratch image
	// has no /etc/passwd, so it is numeric. The binary belongs to root, so that user cannot
	// change it.
	User = "65532:65532"
	// DefaultSource is the org.opencontainers.image.source label of a release.
	DefaultSource = "https://github.com/sidesync/sidesync"
)

// The OCI annotation keys that the image's labels and the index's annotations set.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
)

// epoch is every timestamp in the image (config, history, the file's mtime): fixed, so that
// the digests depend on the binaries and labels alone, as ko and Bazel's rules_oci do.
func epoch() v1.Time { return v1.Time{Time: time.Unix(0, 0).UTC()} }

// Release is what an image index is built from.
type Release struct {
	// Binaries are the platforms' binaries, in the index's order.
	Binaries []PlatformBinary
	// Version, Commit and Source are the labels' values: the version and commit that the
	// binaries are stamped with, and the repository's URL.
	Version, Commit, Source string
}

// PlatformBinary is one platform's release binary.
type PlatformBinary struct {
	Platform v1.Platform
	Data     []byte
}

// Build builds the image index of r: an OCI index with one image per platform, the platform in
// each manifest's descriptor and in its config. It does no I/O.
func Build(r Release) (v1.ImageIndex, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	labels := map[string]string{LabelSource: r.Source, LabelVersion: r.Version, LabelRevision: r.Commit}
	adds := make([]mutate.IndexAddendum, 0, len(r.Binaries))
	for _, b := range r.Binaries {
		img, err := NewImage(b.Data, b.Platform, labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Platform, err)
		}
		p := b.Platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

// validate lists every problem of r at once.
func (r Release) validate() error {
	var errs []error
	for _, f := range []struct{ name, value string }{{"version", r.Version}, {"commit", r.Commit}, {"source", r.Source}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("no %s for the image's labels", f.name))
		}
	}
	if len(r.Binaries) == 0 {
		errs = append(errs, errors.New("no binaries to build an image of"))
	}
	seen := map[string]bool{}
	for _, b := range r.Binaries {
		if p := b.Platform.String(); seen[p] {
			errs = append(errs, fmt.Errorf("two binaries for %s", p))
		} else {
			seen[p] = true
		}
	}
	return errors.Join(errs...)
}

// NewImage builds one platform's image: bin at Binary in one layer on scratch, run as User,
// with labels.
func NewImage(bin []byte, p v1.Platform, labels map[string]string) (v1.Image, error) {
	layer, err := Layer(bin)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: epoch(), CreatedBy: "sidesync-image: the release binary at " + Binary}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion, cf.OSFeatures = p.OS, p.Architecture, p.Variant, p.OSVersion, p.OSFeatures
	cf.Created = epoch()
	cf.Config = v1.Config{Entrypoint: []string{Binary}, User: User, Labels: labels}
	return mutate.ConfigFile(img, cf)
}

// Layer is the image's one layer: a gzipped tar of one regular file, bin at Binary, mode Mode,
// owned by root, every timestamp the epoch. It is compressed here, once, so that its bytes do
// not depend on go-containerregistry's choice of compressor and level.
func Layer(bin []byte) (v1.Layer, error) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz) // no name, no mtime in the header: reproducible
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(Binary, "/"), Mode: Mode,
		Size: int64(len(bin)), ModTime: epoch().Time, Format: tar.FormatUSTAR}
	err := tw.WriteHeader(hdr)
	if err == nil {
		_, err = tw.Write(bin)
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	data := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
