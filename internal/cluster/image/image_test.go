package image

import (
	"bytes"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/testing/imagetest"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
)

// testRelease is a release of two made-up binaries: Build does not look inside them.
func testRelease() Release {
	return Release{
		Binaries: []PlatformBinary{{amd64, []byte("the amd64 binary")}, {arm64, []byte("the arm64 binary")}},
		Version:  "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567", Source: DefaultSource,
	}
}

func TestBuild(t *testing.T) {
	r := testRelease()
	idx, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{LabelSource: DefaultSource, LabelVersion: "v1.2.3", LabelRevision: r.Commit}
	bins := imagetest.CheckIndex(t, idx, []v1.Platform{amd64, arm64}, labels)
	for i, b := range r.Binaries {
		if !bytes.Equal(bins[i], b.Data) {
			t.Errorf("%v: the layer holds %q, want %q", b.Platform, bins[i], b.Data)
		}
	}
}

// TestReproducible: the digest depends on the binaries and the labels, and on nothing else.
func TestReproducible(t *testing.T) {
	digest := func(r Release) v1.Hash {
		t.Helper()
		idx, err := Build(r)
		if err != nil {
			t.Fatal(err)
		}
		h, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := digest(testRelease())
	if again := digest(testRelease()); again != first {
		t.Errorf("the same release built twice: %s, then %s", first, again)
	}
	otherBinary, otherVersion := testRelease(), testRelease()
	otherBinary.Binaries[1].Data = []byte("another arm64 binary")
	otherVersion.Version = "v1.2.4"
	for name, r := range map[string]Release{"another binary": otherBinary, "another version": otherVersion} {
		if digest(r) == first {
			t.Errorf("%s: the same digest %s", name, first)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	dup := testRelease()
	dup.Binaries[1].Platform = amd64
	dup.Version = ""
	_, err := Build(dup)
	if err == nil || !strings.Contains(err.Error(), "no version") || !strings.Contains(err.Error(), "two binaries for linux/amd64") {
		t.Errorf("Build with two amd64 binaries and no version: %v", err)
	}
	if _, err := Build(Release{Version: "v1", Commit: "c", Source: "s"}); err == nil {
		t.Error("Build with no binaries: no error")
	}
}
