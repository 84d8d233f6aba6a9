package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlatformMatching: the names an image index may give the platform sidesync runs on, and
// which entry of a platform-commands map is picked.
func TestPlatformMatching(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		goos, goarch  string
		arm           int
		cmds          []string // the map's platforms, each with the command [platform]
		want          string   // the platform picked; "" for none
		wantCandidate []string
	}{
		{"amd64", "linux", "amd64", 7, []string{"linux/arm64", "linux/amd64"}, "linux/amd64", []string{"linux/amd64"}},
		{"amd64 absent", "linux", "amd64", 7, []string{"linux/arm64", "linux/arm/v7"}, "", []string{"linux/amd64"}},
		{"arm64 as linux/arm64", "linux", "arm64", 7, []string{"linux/amd64", "linux/arm64"}, "linux/arm64", []string{"linux/arm64", "linux/arm64/v8"}},
		{"arm64 as linux/arm64/v8", "linux", "arm64", 7, []string{"linux/amd64", "linux/arm64/v8"}, "linux/arm64/v8", []string{"linux/arm64", "linux/arm64/v8"}},
		{"arm64 is no arm", "linux", "arm64", 7, []string{"linux/arm/v7"}, "", []string{"linux/arm64", "linux/arm64/v8"}},
		{"arm v7", "linux", "arm", 7, []string{"linux/arm/v6", "linux/arm/v7"}, "linux/arm/v7", []string{"linux/arm/v7", "linux/arm", "linux/arm/v6", "linux/arm/v5"}},
		{"arm v7 as bare arm", "linux", "arm", 7, []string{"linux/arm", "linux/arm/v6"}, "linux/arm", []string{"linux/arm/v7", "linux/arm", "linux/arm/v6", "linux/arm/v5"}},
		{"arm v7 runs v6", "linux", "arm", 7, []string{"linux/arm/v6"}, "linux/arm/v6", []string{"linux/arm/v7", "linux/arm", "linux/arm/v6", "linux/arm/v5"}},
		{"arm v6 does not run v7", "linux", "arm", 6, []string{"linux/arm/v7", "linux/arm"}, "", []string{"linux/arm/v6", "linux/arm/v5"}},
		{"another os", "windows", "amd64", 7, []string{"linux/amd64"}, "", []string{"windows/amd64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			candidates := platformCandidates(tt.goos, tt.goarch, tt.arm)
			if diff := cmp.Diff(tt.wantCandidate, candidates); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			cmds := make(map[string][]string)
			for _, p := range tt.cmds {
				cmds[p] = []string{p}
			}
			argv, got, err := pickPlatform(cmds, candidates)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("picked %s, want none", got)
			case tt.want == "" && !strings.Contains(err.Error(), "it has "+strings.Join(sorted(tt.cmds), ", ")):
				t.Errorf("error %q does not list the platforms", err)
			case tt.want != "" && (got != tt.want || argv[0] != tt.want || err != nil):
				t.Errorf("picked %s (%q, %v), want %s", got, argv, err, tt.want)
			}
		})
	}
}

// thisPlatform is this machine's platform as a platform-commands key.
func thisPlatform() string { return platformCandidates(runtime.GOOS, runtime.GOARCH, armVersion())[0] }

// TestPlatformCommands: with nothing after "--", the command of this platform runs; none for
// this platform exits 127 naming those there are; a command after "--" wins; malformed JSON is
// a usage error.
func TestPlatformCommands(t *testing.T) {
	t.Parallel()
	cmds := `{"` + thisPlatform() + `": ["` + bin.testcmd + `", "exit", "7"], "plan9/386": ["/job"]}`
	r := sidesync(t, []string{"SIDESYNC_PLATFORM_COMMANDS=" + cmds}, "--disabled", "--")
	if r.code != 7 {
		t.Errorf("exit %d, want the platform command's 7; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "running the command of this platform platform="+thisPlatform())

	r = sidesync(t, nil, "--disabled", "--platform-commands", `{"plan9/386": ["/job"], "aix/ppc64": ["/job"]}`)
	if r.code != 127 {
		t.Errorf("no command for this platform: exit %d, want 127", r.code)
	}
	mustContain(t, r.stderr, "no command for this platform ("+thisPlatform()+")", "it has aix/ppc64, plan9/386")

	r = sidesync(t, []string{"SIDESYNC_PLATFORM_COMMANDS=" + cmds}, "--disabled", "--log-level", "debug", "--", bin.testcmd, "exit", "3")
	if r.code != 3 {
		t.Errorf("with a command after --: exit %d, want its 3", r.code)
	}
	mustContain(t, r.stderr, "DEBUG SIDESYNC_PLATFORM_COMMANDS is ignored: a command follows --")

	r = sidesync(t, []string{`SIDESYNC_PLATFORM_COMMANDS={"linux/amd64": "/job"}`}, "--disabled", "--")
	if r.code != 2 {
		t.Errorf("malformed: exit %d, want 2", r.code)
	}
	mustContain(t, r.stderr, `SIDESYNC_PLATFORM_COMMANDS="{\"linux/amd64\": \"/job\"}": not a JSON object from platform to command`)
}
