package main

import (
	"bytes"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidesync/sidesync/internal/cluster/image"
	"github.com/sidesync/sidesync/internal/testing/imagetest"
	"github.com/sidesync/sidesync/internal/testing/releasetest"
)

// The version and commit the test's binaries are stamped with.
const (
	testVersion = "v9.8.7-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}

// TestPush: sidesync-image, run in this process on stand-ins for both platforms' binaries,
// writes a layout and pushes an image index that a registry serves back whole; building it
// again gives the same digest. TestReleaseImage does the same with the release binaries.
func TestPush(t *testing.T) {
	dist := fakeDist(t)
	pushAndCheck(t, dist, testVersion, testCommit, func(t *testing.T, args ...string) (string, string) {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("sidesync-image %q: exit %d\n%s", args, code, stderr.String())
		}
		return strings.TrimSpace(stdout.String()), stderr.String()
	})
}

// TestReleaseImage (issue 9): the release binaries of both platforms, built by
// scripts/release.sh, make an image index that a registry serves back whole; the binary for
// this machine, taken from its layer, runs and prints the version it was stamped with; and
// building it again gives the same digest. sidesync-image runs as its own process: the release
// build's when the dist has it, else one built here without -race, which would make compressing
// the layers ten times slower. The default run skips it (releasetest.Dist).
func TestReleaseImage(t *testing.T) {
	dist := releasetest.Dist(t, []string{"sidesync"}, []string{"linux/amd64", "linux/arm64"}, "VERSION="+testVersion, "COMMIT="+testCommit)
	native := slices.IndexFunc(platforms, func(p v1.Platform) bool { return p.Architecture == runtime.GOARCH })
	if native < 0 {
		t.Skipf("runs the image's binary, so it needs a linux/amd64 or linux/arm64 machine, not %s", runtime.GOARCH)
	}
	version, commit := stampOf(t, filepath.Join(dist, image.DistName(platforms[native])))
	cli := imageCLI(t, dist)
	bins := pushAndCheck(t, dist, version, commit, func(t *testing.T, args ...string) (string, string) {
		return mustRun(t, cli, args...)
	})
	runVersion(t, bins[native], version, commit)
}

// pushAndCheck runs sidesync-image with runImage on the binaries in dist: the index it writes as
// a layout and pushes to a registry in this process must come back from the registry whole, with
// the labels, and with each platform's binary as it is in dist; built again, it must have the
// same digest. It returns the binaries taken from the pulled index's layers, in platforms' order.
func pushAndCheck(t *testing.T, dist, version, commit string, runImage func(t *testing.T, args ...string) (digest, log string)) [][]byte {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/sidesync/sidesync:" + version
	args := []string{"--dist", dist, "--version", version, "--commit", commit}
	digest, stderr := runImage(t, append(args, "--layout", filepath.Join(t.TempDir(), "image"), "--push", ref)...)
	if _, err := v1.NewHash(digest); err != nil {
		t.Fatalf("sidesync-image printed %q, want the index digest: %v", digest, err)
	}
	for _, want := range []string{"linux/amd64 ", "linux/arm64/v8 ", "pushed " + strings.TrimSuffix(ref, ":"+version) + "@" + digest} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the log lacks %q:\n%s", want, stderr)
		}
	}

	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pulled.Digest(); err != nil || got.String() != digest {
		t.Errorf("the registry serves %s as %v (%v), want %s", ref, got, err, digest)
	}
	labels := map[string]string{image.LabelSource: image.DefaultSource, image.LabelVersion: version, image.LabelRevision: commit}
	bins := imagetest.CheckIndex(t, pulled, platforms, labels)
	for i, p := range platforms {
		want, err := os.ReadFile(filepath.Join(dist, image.DistName(p)))
		if err != nil || i >= len(bins) || !bytes.Equal(bins[i], want) {
			t.Errorf("%v: the layer's binary is not the one in %s (%v)", p, dist, err)
		}
	}

	again, _ := runImage(t, append(args, "--layout", filepath.Join(t.TempDir(), "again"))...)
	if again != digest {
		t.Errorf("the same binaries built again: %s, then %s", digest, again)
	}
	return bins
}

// fakeDist writes stand-ins for both platforms' release binaries: ELF headers that
// sidesync-image accepts and that cannot run.
func fakeDist(t *testing.T) string {
	t.Helper()
	dist := t.TempDir()
	for _, p := range []struct {
		name    string
		machine elf.Machine
	}{{"sidesync-linux-amd64", elf.EM_X86_64}, {"sidesync-linux-arm64", elf.EM_AARCH64}} {
		if err := os.WriteFile(filepath.Join(dist, p.name), imagetest.FakeELF(p.machine, ""), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dist
}

// stampOf runs a release binary's "version" (sidesync VERSION (commit COMMIT, go1.x os/arch))
// and returns the version and the commit it was stamped with.
func stampOf(t *testing.T, binary string) (version, commit string) {
	t.Helper()
	out, err := exec.Command(binary, "version").Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 4 || f[0] != "sidesync" || f[2] != "(commit" {
		t.Fatalf("%s version: %q, %v; want sidesync VERSION (commit COMMIT, ...)", binary, out, err)
	}
	return f[1], strings.TrimSuffix(f[3], ",")
}

// imageCLI returns sidesync-image to run as a process: the release build in dist, or else one
// built here.
func imageCLI(t *testing.T, dist string) string {
	t.Helper()
	if cli := filepath.Join(dist, "sidesync-image-linux-"+runtime.GOARCH); fileExists(cli) {
		return cli
	}
	cli := filepath.Join(t.TempDir(), "sidesync-image")
	if out, err := exec.Command("go", "build", "-o", cli, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return cli
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// runVersion runs binary, as the image would, and checks the version it prints.
func runVersion(t *testing.T, binary []byte, version, commit string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidesync")
	if err := os.WriteFile(path, binary, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").Output()
	if want := "sidesync " + version + " (commit " + commit + ", "; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("the image's binary printed %q (%v), want %q...", out, err, want)
	}
}

// mustRun runs the program cli, sidesync-image, which must succeed, and returns the digest it
// printed and its log.
func mustRun(t *testing.T, cli string, args ...string) (digest, log string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sidesync-image %q: %v\n%s", args, err, stderr.String())
	}
	digest = strings.TrimSpace(stdout.String())
	if _, err := v1.NewHash(digest); err != nil {
		t.Errorf("sidesync-image printed %q, want the index digest: %v", stdout.String(), err)
	}
	return digest, stderr.String()
}

// TestRun runs sidesync-image in this process, on stand-ins for the release binaries: it
// prints the digest; every problem with the command line is listed at once (exit 2); a problem
// with the binaries or the layout directory fails the build (exit 1).
func TestRun(t *testing.T) {
	fake := fakeDist(t)
	full := filepath.Join(t.TempDir(), "image")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version", "v1", "--commit", "c", "--dist", fake, "--layout", full}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if _, err := v1.NewHash(strings.TrimSpace(stdout.String())); err != nil {
		t.Errorf("printed %q, want the index digest: %v", stdout.String(), err)
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Usage: sidesync-image") || !strings.Contains(stdout.String(), "-push REF") {
		t.Errorf("--help: exit %d, stdout:\n%s", code, stdout.String())
	}
	for _, tt := range []struct {
		args []string
		code int
		want []string
	}{
		{nil, 2, []string{"--version is required", "--commit is required", "nothing to do"}},
		{[]string{"--version", "v1", "--commit", "c", "--layout", "x", "--platforms", "linux", "--push", "UPPER/Case", "extra"},
			2, []string{`platform "linux"`, "--push UPPER/Case", `unexpected arguments ["extra"]`}},
		{[]string{"--version", "v1", "--commit", "c", "--layout", "x", "--dist", t.TempDir()}, 1, []string{"sidesync-image: open ", "/sidesync-linux-amd64: no such file", "sidesync-image: open ", "/sidesync-linux-arm64: no such file"}},
		{[]string{"--version", "v1", "--commit", "c", "--layout", full, "--dist", fake}, 1, []string{full + " is not empty"}},
		{[]string{"--layout"}, 2, []string{"flag needs an argument: -layout"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != tt.code {
			t.Errorf("sidesync-image %q: exit %d, want %d\n%s", tt.args, code, tt.code, stderr.String())
		}
		for _, want := range tt.want {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("sidesync-image %q: the error lacks %q:\n%s", tt.args, want, stderr.String())
			}
		}
	}
}

// TestVersion: sidesync-image says what it was built as, as sidesync and kubectl-sidesync do.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "sidesync-image ") || errOut.Len() > 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
