// Package releasetest gives tests the release binaries of scripts/release.sh. Building them
// from a cold cache takes minutes (every program's dependencies again, static and trimmed, and
// once more per platform), so the default `go test ./...` skips these tests with one line;
// CI builds the binaries once and hands them over:
//
//	SIDESYNC_RELEASE_DIST=DIR       use the binaries in DIR (scripts/release.sh DIR), built from this checkout
//	SIDESYNC_RELEASE_REQUIRED=1     never skip: without SIDESYNC_RELEASE_DIST, build what the test needs
//
// so that `SIDESYNC_RELEASE_REQUIRED=1 go test -run TestRelease ./cmd/...` runs them anywhere.
package releasetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	// EnvDist names the directory of release binaries that .ci/run built with scripts/release.sh.
	EnvDist = "SIDESYNC_RELEASE_DIST"
	// EnvRequired, set to anything but "" or "0", makes the release tests run: with the binaries
	// of EnvDist, else with ones built for the test.
	EnvRequired = "SIDESYNC_RELEASE_REQUIRED"
)

// Need is what a test needs from a release build: each program for each platform ("linux/arm64"),
// and, when it builds them itself, the variables to stamp them with (VERSION=, COMMIT=).
type Need struct {
	Programs  []string
	Platforms []string
	Env       []string
}

// Names are the file names scripts/release.sh gives the binaries: PROGRAM-OS-ARCH.
func (n Need) Names() []string {
	var names []string
	for _, p := range n.Platforms {
		for _, prog := range n.Programs {
			names = append(names, prog+"-"+strings.ReplaceAll(p, "/", "-"))
		}
	}
	return names
}

// Dist returns a directory holding the binaries of need: EnvDist, whose binaries must all be
// there; or, with EnvRequired set, a temporary directory that scripts/release.sh builds them
// into; or it skips the test with one line that says how to run it.
func Dist(t testing.TB, need Need) string {
	t.Helper()
	if dir := os.Getenv(EnvDist); dir != "" {
		var missing []string
		for _, name := range need.Names() {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("%s=%s lacks %s: build them with `PROGRAMS=%q PLATFORMS=%q scripts/release.sh %s`",
				EnvDist, dir, strings.Join(missing, ", "), strings.Join(need.Programs, " "), strings.Join(need.Platforms, " "), dir)
		}
		return dir
	}
	if r := os.Getenv(EnvRequired); r == "" || r == "0" {
		t.Skipf("builds release binaries (minutes from a cold cache): set %s=1 to run it (CI does, with %s)", EnvRequired, EnvDist)
	}
	script, err := releaseScript()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command("bash", script, dir)
	build.Env = append(os.Environ(), "PROGRAMS="+strings.Join(need.Programs, " "), "PLATFORMS="+strings.Join(need.Platforms, " "))
	build.Env = append(build.Env, need.Env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	return dir
}

// releaseScript finds scripts/release.sh in the module the test runs in.
func releaseScript() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("finding the module to run scripts/release.sh in: go env GOMOD: %q, %v", mod, err)
	}
	return filepath.Join(filepath.Dir(mod), "scripts", "release.sh"), nil
}
