// Package releasetest hands the release tests (cmd/sidesync's TestReleaseVersion,
// cmd/sidesync-image's TestReleaseImage and TestKrewInstall) their release binaries, and the
// install tests the real install tools (Tool). Those take minutes to build from
// a cold cache (every program's dependencies again, static and trimmed, once per platform): the
// default run skips them. CI builds the binaries once and hands them over in
// SIDESYNC_RELEASE_DIST; SIDESYNC_RELEASE_REQUIRED=1 (anything but "" or "0") alone builds what
// the test needs.
package releasetest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	envDist     = "SIDESYNC_RELEASE_DIST"
	envRequired = "SIDESYNC_RELEASE_REQUIRED"
)

// Dist returns a directory that holds the release binary of each program for each platform
// (PROGRAM-OS-ARCH, as scripts/release.sh names them): SIDESYNC_RELEASE_DIST, which must hold
// them all; or, with SIDESYNC_RELEASE_REQUIRED set, a temporary directory that
// scripts/release.sh builds them into, with env added to its environment; or it skips the test
// with one line that says how to run it.
func Dist(t *testing.T, programs, platforms []string, env ...string) string {
	t.Helper()
	if dir := os.Getenv(envDist); dir != "" {
		for _, p := range platforms {
			for _, prog := range programs {
				if _, err := os.Stat(filepath.Join(dir, prog+"-"+strings.ReplaceAll(p, "/", "-"))); err != nil {
					t.Fatalf("%s: %v: build it with `PROGRAMS=%q PLATFORMS=%q scripts/release.sh %s`", envDist, err,
						strings.Join(programs, " "), strings.Join(platforms, " "), dir)
				}
			}
		}
		return dir
	}
	if r := os.Getenv(envRequired); r == "" || r == "0" {
		t.Skipf("builds release binaries (minutes from a cold cache): set %s=1 to run it (CI does, with %s)", envRequired, envDist)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), dir)
	build.Env = append(os.Environ(), "PROGRAMS="+strings.Join(programs, " "), "PLATFORMS="+strings.Join(platforms, " "))
	build.Env = append(build.Env, env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	return dir
}

// moduleRoot is the directory of the go.mod above the test's working directory (its package's).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("releasetest: no go.mod above the working directory")
		}
		dir = parent
	}
}
