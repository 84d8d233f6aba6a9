package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
// Each of charts is beside it as Helm's OCI artifact (ChartArtifact), its ref.name
// charts/NAME:VERSION ("oras cp --from-oci-layout DIR:charts/NAME:VERSION REF" pushes one).
//
// The layout is written into a temporary directory beside dir, synced, and renamed to dir only
// once whole; on failure the temporary directory is removed and dir is as it was. A disk that
// filled part way used to leave half a layout in dir, which the retry then refused.
func WriteLayout(dir string, idx v1.ImageIndex, tag string, charts ...Chart) error {
	dir = filepath.Clean(dir)
	if err := checkNew(dir); err != nil {
		return err
	}
	arts, err := chartArtifacts(charts)
	if err != nil {
		return err
	}
	if err := writeLayoutAtomically(dir, idx, tag, arts); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}

// refImage is an image and its ref.name in a layout.
type refImage struct {
	img     v1.Image
	refName string
}

// chartArtifacts builds the charts' artifacts.
func chartArtifacts(charts []Chart) ([]refImage, error) {
	var arts []refImage
	var errs []error
	for _, c := range charts {
		img, err := ChartArtifact(c)
		errs = append(errs, err)
		arts = append(arts, refImage{img, c.RefName()})
	}
	return arts, errors.Join(errs...)
}

// checkNew checks that dir is empty or does not exist.
func checkNew(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: remove it, or name a new directory", dir)
	}
	return nil
}

// writeLayoutAtomically writes the layout into a temporary directory beside dir, then renames
// it to dir.
func writeLayoutAtomically(dir string, idx v1.ImageIndex, tag string, arts []refImage) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	if err := fillLayout(tmp, idx, tag, arts); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := replaceEmpty(tmp, dir); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	return syncPath(parent)
}

// replaceEmpty renames tmp to dir, removing dir first when it is there and empty (os.Rename
// does not replace a directory; os.Remove refuses one that is no longer empty).
func replaceEmpty(tmp, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, dir)
}

// fillLayout writes the layout into tmp, a new directory, and syncs it to disk, so that an
// error the file system reports late (at fsync) is seen before the rename.
func fillLayout(tmp string, idx v1.ImageIndex, tag string, arts []refImage) error {
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700, to a layout.Write's mode
		return err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: tag})); err != nil {
		return err
	}
	for _, a := range arts {
		if err := p.AppendImage(a.img, layout.WithAnnotations(map[string]string{RefName: a.refName})); err != nil {
			return err
		}
	}
	return filepath.WalkDir(tmp, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return syncPath(path)
	})
}

// syncPath flushes a file or a directory to disk.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
