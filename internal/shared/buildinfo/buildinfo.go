// Package buildinfo says what a sidesync program was built as: its version and commit, stamped
// the same way into every binary (sidesync, kubectl-sidesync, sidesync-image) by
// scripts/release.sh, and the image a release publishes. Standard library only: the pod binary
// uses it too.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version and commit are set by a release build (scripts/release.sh) with -ldflags
// "-X github.com/sidesync/sidesync/internal/shared/buildinfo.version=v1.2.3 -X ...buildinfo.commit=<git
// commit>"; otherwise Version and Commit read what the Go toolchain recorded.
var version, commit string

// ImageRepository is where releases publish the sidesync image; a release's tag is its version.
const ImageRepository = "ghcr.io/sidesync/sidesync"

// Info is what a program was built as.
type Info struct {
	Version string // "v1.2.3", a pseudo-version, or "(devel)"
	Commit  string // the git commit, "-dirty" when the tree had changes, or "unknown"
}

// Current is what this program was built as: a release's stamps, else what the Go toolchain
// recorded (the module version of `go install ...@vX`; the commit of a build in a git
// checkout).
func Current() Info {
	i := Info{Version: version, Commit: commit}
	bi, ok := debug.ReadBuildInfo()
	if i.Version == "" && ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	if i.Commit == "" && ok {
		i.Commit = vcsCommit(bi)
	}
	return Info{Version: or(i.Version, "(devel)"), Commit: or(i.Commit, "unknown")}
}

// vcsCommit is the commit the Go toolchain recorded, "-dirty" when the tree had changes.
func vcsCommit(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		return rev + "-dirty"
	}
	return rev
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// Line is what `PROGRAM version` prints: "sidesync v1.2.3 (commit abc..., go1.26.8 linux/amd64)".
func (i Info) Line(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)", program, i.Version, i.Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// ImageFlag is the sidesync image a program's --image flag names: flag when set, else this
// release's image; a development build has none, and then the flag is required.
func (i Info) ImageFlag(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if image, released := i.Image(); released {
		return image, nil
	}
	return "", fmt.Errorf("--image is required: this is a development build (version %s), for which no image is published", i.Version)
}

// Image is the sidesync image of this release (ImageRepository:VERSION), and whether there is
// one: a development build, a pseudo-version or a dirty tree has no published image.
func (i Info) Image() (string, bool) {
	v := i.Version
	if !strings.HasPrefix(v, "v") || strings.HasPrefix(v, "v0.0.0-") || strings.HasSuffix(v, "-dirty") {
		return "", false
	}
	return ImageRepository + ":" + v, true
}
