package image

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// errDiskFull is what the failing layer's reader says, standing in for ENOSPC.
var errDiskFull = errors.New("no space left on device (the test's)")

// failingLayer is a layer whose bytes stop with errDiskFull after half of them, as a write to a
// full disk stops part way: the layout is half written when it fails.
type failingLayer struct{ size int64 }

func (l failingLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}, nil
}
func (l failingLayer) DiffID() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("cd", 32)}, nil
}
func (l failingLayer) Size() (int64, error)                { return l.size, nil }
func (l failingLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l failingLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(io.LimitReader(zeros{}, l.size/2), errReader{errDiskFull})), nil
}
func (l failingLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// failingIndex is an index whose second image cannot be written: the first is, before it fails.
func failingIndex(t *testing.T) v1.ImageIndex {
	good, err := Build(testRelease())
	if err != nil {
		t.Fatal(err)
	}
	bad, err := mutate.AppendLayers(empty.Image, failingLayer{size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return mutate.AppendManifests(good, mutate.IndexAddendum{Add: bad, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}})
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestWriteLayoutFails: a layout that cannot be written whole (a disk that fills part way)
// leaves nothing behind: DIR as it was (absent, or empty), no temporary directory beside it, so
// that the retry writes it. Today's code left half a layout in DIR, which the retry refused as
// "not empty".
func TestWriteLayoutFails(t *testing.T) {
	good, err := Build(testRelease())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		exists bool // DIR exists, empty
	}{
		{"new directory", false},
		{"empty directory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "image")
			want := []string(nil)
			if tt.exists {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				want = []string{"image"}
			}
			err := WriteLayout(dir, failingIndex(t), "v1.2.3")
			if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "writing the OCI layout "+dir+": ") {
				t.Fatalf("WriteLayout: %v, want the write's error, naming the layout", err)
			}
			if diff := cmp.Diff(want, names(t, parent)); diff != "" {
				t.Errorf("left beside the layout (-want +got):\n%s", diff)
			}
			if tt.exists && len(names(t, dir)) > 0 {
				t.Errorf("left in %s: %v", dir, names(t, dir))
			}
			if err := WriteLayout(dir, good, "v1.2.3"); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if diff := cmp.Diff([]string{"blobs", "index.json", "oci-layout"}, names(t, dir)); diff != "" {
				t.Errorf("the retry's layout (-want +got):\n%s", diff)
			}
		})
	}
}
