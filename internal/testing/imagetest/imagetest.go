// Package imagetest checks sidesync's images in tests: what internal/cluster/image builds, what a
// registry serves back, and what the Dockerfile would build, all hold to the same layout.
package imagetest

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CheckIndex checks an image index: an OCI index with one manifest per platform, in the order
// of platforms, with the platform in its descriptor, each image as CheckImage wants it, and
// labels as the index's annotations too. It returns the platforms' binaries, in that order.
func CheckIndex(t testing.TB, idx v1.ImageIndex, platforms []v1.Platform, labels map[string]string) [][]byte {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || m.SchemaVersion != 2 || len(m.Manifests) != len(platforms) {
		t.Fatalf("index: media type %s, schema %d, %d manifests; want an OCI index of %d", m.MediaType, m.SchemaVersion, len(m.Manifests), len(platforms))
	}
	if diff := cmp.Diff(labels, m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var bins [][]byte
	for i, d := range m.Manifests {
		if d.MediaType != types.OCIManifestSchema1 || d.Platform == nil || !d.Platform.Equals(platforms[i]) {
			t.Errorf("manifest %d: %s for %v, want an OCI manifest for %v", i, d.MediaType, d.Platform, platforms[i])
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		CheckImage(t, img, platforms[i], labels)
		bins = append(bins, LayerFile(t, img))
	}
	return bins
}

// CheckImage checks an image's manifest and config: one OCI layer, the entrypoint, the user and
// the labels, nothing else (no Cmd, no Env: scratch has no shell), every time the epoch.
func CheckImage(t testing.TB, img v1.Image, p v1.Platform, labels map[string]string) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("%v: manifest %s, config %s, %d layers; want OCI, one layer of %s", p, m.MediaType, m.Config.MediaType, len(m.Layers), types.OCILayer)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{Entrypoint: []string{"/sidesync"}, User: "65532:65532", Labels: labels}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("%v: config (-want +got):\n%s", p, diff)
	}
	if !cf.Platform().Equals(p) || !cf.Created.Equal(time.Unix(0, 0)) || len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
		t.Errorf("%v: config for %v, created %v, %d diff IDs, %d history entries; want the epoch and one each", p, cf.Platform(), cf.Created, len(cf.RootFS.DiffIDs), len(cf.History))
	}
}

// LayerFile checks that img's one layer holds one file, /sidesync, mode 0555, owned by root,
// dated the epoch, and returns its bytes.
func LayerFile(t testing.TB, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	got := [...]any{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime.Unix()}
	if want := [...]any{"sidesync", byte(tar.TypeReg), int64(0o555), 0, 0, int64(0)}; got != want {
		t.Errorf("layer entry (name, type, mode, uid, gid, mtime) = %v, want %v", got, want)
	}
	if next, err := tr.Next(); err != io.EOF {
		t.Errorf("the layer holds more than the binary: %v, %v", next, err)
	}
	return data
}

// FakeELF returns the smallest ELF executable header that debug/elf reads: 64-bit, for machine,
// and with a PT_INTERP program header naming interp (a dynamically linked binary) unless interp
// is empty. It cannot run; it stands in for a release binary where only its header matters.
func FakeELF(machine elf.Machine, interp string) []byte {
	const ehsize, phsize = 64, 56
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Ehsize: ehsize, Phentsize: phsize}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	if interp != "" {
		h.Phoff, h.Phnum = ehsize, 1
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, h)
	if interp != "" {
		n := uint64(len(interp) + 1)
		binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP), Off: ehsize + phsize, Filesz: n, Memsz: n})
		b.WriteString(interp + "\x00")
	}
	return b.Bytes()
}
