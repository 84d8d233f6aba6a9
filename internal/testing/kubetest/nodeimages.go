//go:build linux

package kubetest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
	Raw v1.Image `json:"-"`
}

// BuildStatic builds the module's main packages (import paths) as static Linux binaries into
// dir, each named after its package's last element. The flags that decide how packages compile
// are scripts/release.sh's (static, trimmed), so that in CI, after the release step, only the
// links are left to do.
func BuildStatic(ctx context.Context, dir string, pkgs ...string) error {
	return BuildStaticStamped(ctx, dir, "", pkgs...)
}

// BuildStaticStamped is BuildStatic with the linker flags ldflags ("" for none), such as -X
// settings that stamp a version.
func BuildStaticStamped(ctx context.Context, dir, ldflags string, pkgs ...string) error {
	args := []string{"build", "-trimpath", "-o", dir + "/"}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// The node's helpers, built by StartNode into its directory: the pods' sandbox image's program,
// and the program that writes test images (ImportImages).
const (
	pausePackage    = "github.com/sidesync/sidesync/internal/testing/kubetest/pause"
	imagetarPackage = "github.com/sidesync/sidesync/internal/testing/kubetest/imagetar"
)

// buildHelpers builds the node's helpers while the node starts, and sends the outcome.
func (n *Node) buildHelpers() <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), nodeReadyTimeout)
		defer cancel()
		done <- BuildStatic(ctx, n.path("bin"), pausePackage, imagetarPackage)
	}()
	return done
}

// importPause imports the pods' sandbox image, once the helpers are built (built is the
// outcome of that build).
func (n *Node) importPause(built error) error {
	if built != nil {
		return built
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeReadyTimeout)
	defer cancel()
	return n.ImportImages(ctx, Image{Ref: PauseImage, Files: map[string]string{"/pause": n.path("bin/pause")},
		Entrypoint: []string{"/pause"}, User: "65535:65535"})
}

// ImportImages builds the images and imports them into the node's containerd. It can be called
// more than once, and from several goroutines at once.
//
// The images of files are written by the imagetar helper, which StartNode built without the race
// detector: under -race, the test process's copying and hashing of the images' megabytes is tens
// of times slower (over a minute for the nodejobs tests' images on 2 busy cores, against a
// second). Raw images, already built, are written in the test process.
func (n *Node) ImportImages(ctx context.Context, images ...Image) error {
	begin := time.Now()
	var files, raw []Image
	for _, im := range images {
		if im.Raw != nil {
			raw = append(raw, im)
		} else {
			files = append(files, im)
		}
	}
	var archives []string
	defer func() {
		for _, a := range archives {
			os.Remove(a)
		}
	}()
	for _, set := range [][]Image{files, raw} {
		if len(set) == 0 {
			continue
		}
		f, err := os.CreateTemp(n.dir, "images-*.tar")
		if err != nil {
			return err
		}
		f.Close()
		archives = append(archives, f.Name())
		if set[0].Raw != nil {
			err = WriteImageArchive(f.Name(), set)
		} else {
			err = n.imagetar(ctx, f.Name(), set)
		}
		if err != nil {
			return err
		}
	}
	for _, a := range archives {
		if err := n.ctr(ctx, "images", "import", "--local", a); err != nil {
			return err
		}
	}
	n.logf("kubetest: %d images imported into the node in %s", len(images), time.Since(begin).Round(time.Millisecond))
	return nil
}

// imagetar runs the imagetar helper: images as JSON on its stdin, the archive written at path.
func (n *Node) imagetar(ctx context.Context, path string, images []Image) error {
	spec, err := json.Marshal(images)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, n.path("bin/imagetar"), path)
	cmd.Stdin = bytes.NewReader(spec)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("imagetar: %v: %s", err, out)
	}
	return nil
}

// WriteImageArchive writes the images as one docker archive (the format of `docker save`) at
// path, each under its Ref, for `ctr images import`. The imagetar helper runs it.
func WriteImageArchive(path string, images []Image) error {
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
	return tarball.MultiRefWriteToFile(path, refs)
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
	// Uncompressed, as `docker save` writes layers: containerd imports them as they are, and
	// nothing is spent on gzip.
	return static.NewLayer(buf.Bytes(), types.DockerUncompressedLayer), nil
}
