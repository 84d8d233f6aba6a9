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
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidesync/sidesync/internal/cluster/image"
	"github.com/sidesync/sidesync/internal/testing/imagetest"
)

// The version and commit the test's release binaries are stamped with.
const (
	testVersion = "v9.8.7-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}

// TestReleaseImage (issue 9): the release binaries of both platforms, built by
// scripts/release.sh, make an image index that a registry serves back whole; the binary for
// this machine, taken from its layer, runs and prints the version it was stamped with; and
// building it again gives the same digest. sidesync-image runs as its own process, built
// without -race, which would make compressing the layers ten times slower.
func TestReleaseImage(t *testing.T) {
	dist := releaseBinaries(t)
	cli := filepath.Join(t.TempDir(), "sidesync-image")
	if out, err := exec.Command("go", "build", "-o", cli, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/sidesync/sidesync:" + testVersion
	args := []string{"--dist", dist, "--version", testVersion, "--commit", testCommit}
	digest, stderr := mustRun(t, cli, append(args, "--layout", filepath.Join(t.TempDir(), "image"), "--push", ref)...)
	for _, want := range []string{"linux/amd64 ", "linux/arm64/v8 ", "pushed " + strings.TrimSuffix(ref, ":"+testVersion) + "@" + digest} {
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
	labels := map[string]string{image.LabelSource: image.DefaultSource, image.LabelVersion: testVersion, image.LabelRevision: testCommit}
	bins := imagetest.CheckIndex(t, pulled, platforms, labels)
	for i, p := range platforms {
		want, err := os.ReadFile(filepath.Join(dist, image.DistName(p)))
		if err != nil || !bytes.Equal(bins[i], want) {
			t.Errorf("%v: the layer's binary is not the release binary (%v)", p, err)
		}
		if p.Architecture == runtime.GOARCH {
			runVersion(t, bins[i])
		}
	}

	again, _ := mustRun(t, cli, append(args, "--layout", filepath.Join(t.TempDir(), "again"))...)
	if again != digest {
		t.Errorf("the same binaries built again: %s, then %s", digest, again)
	}
}

// releaseBinaries builds the release binaries of both platforms, as a release does.
func releaseBinaries(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	dist := t.TempDir()
	build := exec.Command("bash", "../../scripts/release.sh", dist)
	build.Env = append(os.Environ(), "PLATFORMS=linux/amd64 linux/arm64", "VERSION="+testVersion, "COMMIT="+testCommit)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	return dist
}

// runVersion runs binary, as the image would, and checks the version it prints.
func runVersion(t *testing.T, binary []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidesync")
	if err := os.WriteFile(path, binary, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").Output()
	if want := "sidesync " + testVersion + " (commit " + testCommit + ", "; err != nil || !strings.HasPrefix(string(out), want) {
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
	fake := t.TempDir()
	for _, p := range []struct {
		name    string
		machine elf.Machine
	}{{"sidesync-linux-amd64", elf.EM_X86_64}, {"sidesync-linux-arm64", elf.EM_AARCH64}} {
		if err := os.WriteFile(filepath.Join(fake, p.name), imagetest.FakeELF(p.machine, ""), 0o755); err != nil {
			t.Fatal(err)
		}
	}
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
