package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// RefName is the annotation that names an image in an OCI layout's index.json (the tag of
// "skopeo copy oci:DIR:TAG").
const RefName = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as a new OCI image layout in dir, which must be empty or not exist
// (a layout never forgets blobs, so writing into an old one would keep the old images' too).
// Its index.json holds one descriptor, of idx, with tag as its ref.name: "crane push DIR REF"
// and "skopeo copy --all oci:DIR:TAG docker://REF" push the multi-platform index as it is.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: remove it, or name a new directory", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: tag})); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}
