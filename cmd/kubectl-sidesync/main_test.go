package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// TestVersion prints the version, the commit and Go, as `sidesync version` does; a release
// build's stamps win over the build information.
func TestVersion(t *testing.T) {
	build := buildinfo.Info{Version: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567"}
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, build, nil, &out, &errOut); code != 0 || errOut.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	want := "kubectl-sidesync v1.2.3 (commit 0123456789abcdef0123456789abcdef01234567, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if out.String() != want {
		t.Errorf("version printed %q, want %q", out.String(), want)
	}
}

// TestUsage: no command is a usage error (exit 2), help is not, an unknown command names itself.
func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		code       int
		out, inErr string
	}{
		{nil, 2, "", "Usage:"},
		{[]string{"help"}, 0, "Usage:", ""},
		{[]string{"--help"}, 0, "Usage:", ""},
		{[]string{"injet"}, 2, "", `unknown command "injet"`},
	} {
		var out, errOut bytes.Buffer
		code := run(tt.args, devBuild, nil, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.inErr) {
			t.Errorf("kubectl sidesync %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tt.args, code, out.String(), errOut.String(), tt.code, tt.out, tt.inErr)
		}
	}
}
