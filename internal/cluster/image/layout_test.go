package image

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/sidesync/sidesync/internal/testing/imagetest"
)

// TestWriteLayout: the layout's index.json names the image index by its tag, the index reads
// back whole, and the same release writes the same bytes.
func TestWriteLayout(t *testing.T) {
	idx, err := Build(testRelease())
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := idx.Digest()
	dirs := []string{filepath.Join(t.TempDir(), "new"), t.TempDir()} // one to create, one empty
	for _, dir := range dirs {
		if err := WriteLayout(dir, idx, "v1.2.3"); err != nil {
			t.Fatal(err)
		}
	}
	var top v1.IndexManifest
	raw, err := os.ReadFile(filepath.Join(dirs[0], "index.json"))
	if err == nil {
		err = json.Unmarshal(raw, &top)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest != digest || top.Manifests[0].MediaType != types.OCIImageIndex || top.Manifests[0].Annotations[RefName] != "v1.2.3" {
		t.Errorf("index.json does not name the image index %s as v1.2.3:\n%s", digest, raw)
	}
	p, err := layout.FromPath(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	read, err := p.ImageIndex()
	if err == nil {
		idx, err = read.ImageIndex(digest)
	}
	if err != nil {
		t.Fatal(err)
	}
	imagetest.CheckIndex(t, idx, []v1.Platform{amd64, arm64}, map[string]string{LabelSource: DefaultSource, LabelVersion: "v1.2.3", LabelRevision: testRelease().Commit})
	if a, b := tree(t, dirs[0]), tree(t, dirs[1]); a != b {
		t.Errorf("the same release wrote two different layouts:\n%s\n%s", a, b)
	}
	if err := WriteLayout(dirs[0], idx, "v1.2.3"); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("WriteLayout into an earlier layout: %v, want an error", err)
	}
}

// tree lists the files under dir and their sizes, and index.json's contents; the blobs are named
// by their digests.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %d\n", rel, len(data))
		if rel == "index.json" {
			b.Write(data)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
