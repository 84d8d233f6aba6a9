//go:build linux

package kubetest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image is a test image: files on scratch, built without a registry or a daemon and imported
// into the node's containerd by ImportImages. Pods name it by Ref with imagePullPolicy Never or
// IfNotPresent; nothing is ever pulled.
type Image struct {
	Ref string
	// Files maps an absolute path in the image to a file on the machine, copied with mode 0755.
	Files map[string]string
	// Links maps an absolute path in the image to the target of a symbolic link.
	Links      map[string]string
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	// Raw, when set, is the image itself (sidesync's release image, say): the fields above but
	// Ref are then unused.
	Raw v1.Image
}

// BuildStatic builds the module's main packages (import paths) as static Linux binaries into
// dir, each named after its package's last element.
func BuildStatic(ctx context.Context, dir string, pkgs ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath", "-o", dir + "/"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// ImportImages builds the images and imports them into the node's containerd, with the node's
// pause image. It can be called more than once, and from several goroutines at once (two may
// then both import the pause image, which is harmless).
func (n *Node) ImportImages(ctx context.Context, images ...Image) error {
	begin := time.Now()
	if !n.pauseImported.Load() {
		bin := n.path("bin")
		if err := BuildStatic(ctx, bin, "github.com/sidesync/sidesync/internal/testing/kubetest/pause"); err != nil {
			return err
		}
		images = append(images, Image{Ref: PauseImage, Files: map[string]string{"/pause": filepath.Join(bin, "pause")},
			Entrypoint: []string{"/pause"}, User: "65535:65535"})
	}
	refs := map[name.Reference]v1.Image{}
	for _, im := range images {
		img, err := im.build()
		if err != nil {
			return fmt.Errorf("image %s: %w", im.Ref, err)
		}
		ref, err := name.ParseReference(im.Ref)
		if err != nil {
			return fmt.Errorf("image %s: %w", im.Ref, err)
		}
		refs[ref] = img
	}
	archive := n.path(fmt.Sprintf("images-%d.tar", time.Now().UnixNano()))
	defer os.Remove(archive)
	if err := tarball.MultiRefWriteToFile(archive, refs); err != nil {
		return err
	}
	if err := n.ctr(ctx, "images", "import", "--local", archive); err != nil {
		return err
	}
	n.pauseImported.Store(true)
	n.logf("kubetest: %d images imported into the node in %s", len(refs), time.Since(begin).Round(time.Millisecond))
	return nil
}

// build makes the image: one layer on scratch, for linux on this machine's architecture.
func (im Image) build() (v1.Image, error) {
	if im.Raw != nil {
		return im.Raw, nil
	}
	layer, err := im.layer()
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH // the machine's: the node's
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User = im.Entrypoint, im.Cmd, im.User
	cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, im.Env...)
	return mutate.ConfigFile(img, cf)
}

// layer is the image's files as one uncompressed tar layer, with the directories above them.
func (im Image) layer() (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	var paths []string
	for p := range im.Files {
		paths = append(paths, p)
	}
	for p := range im.Links {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		var parents []string
		for d := path.Dir(p); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(parents[i], "/") + "/",
				Mode: 0o755, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		if target, ok := im.Links[p]; ok {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(p, "/"),
				Linkname: target, Mode: 0o777, ModTime: epoch}); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(im.Files[p])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"),
			Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}
