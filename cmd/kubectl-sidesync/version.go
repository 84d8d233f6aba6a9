package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion and buildCommit are set by a release build (-ldflags "-X main.buildVersion=v1.2.3
// -X main.buildCommit=..."), as for sidesync; otherwise version reads the build information.
var buildVersion, buildCommit string

// version is the version kubectl-sidesync was built as: a release's, the module version of
// "go install ...@vX", or "(devel)".
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "(devel)"
}

// commit is the commit kubectl-sidesync was built from: a release's, else the build
// information's vcs.revision, else "unknown".
func commit() string {
	if buildCommit != "" {
		return buildCommit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// versionLine is what `kubectl sidesync version` prints, in the form of `sidesync version`.
func versionLine() string {
	return fmt.Sprintf("kubectl-sidesync %s (commit %s, %s %s/%s)",
		version(), commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
