// Package registrytest serves container images from an in-process registry on loopback, for
// tests of entrypoint resolution: single images, multi-platform indexes and the attestation
// manifests that BuildKit adds to them. Tests only; it never reaches the internet.
package registrytest

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Start serves an empty registry on 127.0.0.1 until the test ends and returns its host:port,
// which go-containerregistry reaches over plain HTTP since it is loopback.
func Start(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Platform is one image of an index: its platform and what its config runs.
type Platform struct {
	OS, Architecture, Variant string
	Entrypoint, Cmd           []string
}

// Image builds a single-platform image whose config says p.
func Image(t testing.TB, p Platform) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Entrypoint, cf.Config.Cmd = p.Entrypoint, p.Cmd
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// PushImage pushes a single-platform image to ref and returns its digest.
func PushImage(t testing.TB, ref string, p Platform) v1.Hash {
	t.Helper()
	img := Image(t, p)
	if err := remote.Write(parse(t, ref), img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// PushIndex pushes an OCI image index of the platforms to ref, with an attestation manifest
// (platform unknown/unknown, as BuildKit writes it) when attest, and returns its digest.
func PushIndex(t testing.TB, ref string, attest bool, ps ...Platform) v1.Hash {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range ps {
		adds = append(adds, mutate.IndexAddendum{Add: Image(t, p), Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}}})
	}
	if attest {
		adds = append(adds, mutate.IndexAddendum{Add: Image(t, Platform{OS: "unknown", Architecture: "unknown"}), Descriptor: v1.Descriptor{
			Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if err := remote.WriteIndex(parse(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func parse(t testing.TB, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
