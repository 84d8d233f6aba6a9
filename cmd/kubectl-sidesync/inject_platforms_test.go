package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/shared/config"
	rt "github.com/sidesync/sidesync/internal/testing/registrytest"
)

// podOf is a Pod whose one container, c, runs image without a command.
func podOf(image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers:\n  - {name: c, image: \"" + image + "\"}\n"
}

// platformCommands returns the container's SIDESYNC_PLATFORM_COMMANDS, "" for none.
func platformCommands(c map[string]any) string {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if e := e.(map[string]any); e["name"] == "SIDESYNC_PLATFORM_COMMANDS" {
			return e["value"].(string)
		}
	}
	return ""
}

// TestInjectWritesWhatTheWrapperTakes: SIDESYNC_PLATFORM_COMMANDS is checked with the
// wrapper's own parser (config.ParsePlatformCommands) before it is written. An index entry
// linux/AMD64 is read as linux/amd64 (as containerd reads it); an entry whose platform the
// wrapper could not look up is skipped with a warning naming it; an image that runs nothing on
// one platform leaves its container alone, with a warning. Today's code wrote "linux/AMD64",
// "linux/arm64/v8-beta" and null, each of which stops the wrapper on every platform.
func TestInjectWritesWhatTheWrapperTakes(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := rt.Start(t)
	amd := rt.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/srv"}}
	arm := rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/srv-arm64"}}
	tests := []struct {
		name     string
		ps       []rt.Platform
		wantEnv  string // "" when the container is left alone
		warnings []string
	}{
		{"upper-case architecture", []rt.Platform{{OS: "linux", Architecture: "AMD64", Entrypoint: []string{"/srv"}}, arm},
			`{"linux/amd64":["/srv"],"linux/arm64/v8":["/srv-arm64"]}`, nil},
		{"a variant the wrapper cannot look up", []rt.Platform{amd, {OS: "linux", Architecture: "arm64", Variant: "v8-beta", Entrypoint: []string{"/beta"}}, arm},
			`{"linux/amd64":["/srv"],"linux/arm64/v8":["/srv-arm64"]}`,
			[]string{`kubectl sidesync inject: warning: image ` + host + `/t1:1: skipped the index entry sha256:`, `"linux/arm64/v8-beta" is not a platform`}},
		{"one platform runs nothing", []rt.Platform{amd, {OS: "linux", Architecture: "arm64", Variant: "v8"}}, "",
			[]string{`Pod/p: warning: container c has no command, and the commands per platform of its image ` + host + `/t2:1 are not a value the wrapper takes ("linux/arm64/v8": the command is empty)`}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := host + "/t" + strconv.Itoa(i) + ":1"
			rt.PushIndex(t, image, true, tt.ps...)
			cs, stderr := resolvedContainers(t, podOf(image), "--resolve")
			got := platformCommands(cs[0])
			if got != "" {
				if _, err := config.ParsePlatformCommands(got); err != nil {
					t.Errorf("wrote SIDESYNC_PLATFORM_COMMANDS=%s, which the wrapper refuses: %v", got, err)
				}
			}
			if got != tt.wantEnv {
				t.Errorf("SIDESYNC_PLATFORM_COMMANDS = %q, want %q", got, tt.wantEnv)
			}
			if wrapped := cs[0]["command"] != nil; wrapped != (tt.wantEnv != "") {
				t.Errorf("wrapped %v, want %v: %v", wrapped, tt.wantEnv != "", cs[0])
			}
			for _, w := range tt.warnings {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestInjectPlatformVariants: --platform linux/arm64/v8 reads an index entry linux/arm64, and
// the other way round (arm64's only variant is v8), as --platform linux/arm/v7 reads linux/arm.
// Today's code left the container alone: "no platform of the image index is among
// linux/arm64/v8 (it has linux/amd64, linux/arm64)".
func TestInjectPlatformVariants(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := rt.Start(t)
	amd := rt.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/srv"}}
	rt.PushIndex(t, host+"/bare:1", true, amd,
		rt.Platform{OS: "linux", Architecture: "arm64", Entrypoint: []string{"/srv-arm64"}},
		rt.Platform{OS: "linux", Architecture: "arm", Entrypoint: []string{"/srv-arm"}})
	rt.PushIndex(t, host+"/v8:1", true, amd,
		rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/srv-arm64"}})
	tests := []struct {
		image, platform, wantArgv string
	}{
		{"bare:1", "linux/arm64/v8", "/srv-arm64"},
		{"v8:1", "linux/arm64", "/srv-arm64"},
		{"bare:1", "linux/arm/v7", "/srv-arm"},
		{"bare:1", "linux/AMD64", "/srv"},
	}
	for _, tt := range tests {
		t.Run(tt.image+" "+tt.platform, func(t *testing.T) {
			cs, stderr := resolvedContainers(t, podOf(host+"/"+tt.image), "--resolve", "--platform="+tt.platform)
			if diff := cmp.Diff([]any{"--pod-info=/sidesync/podinfo", "--", tt.wantArgv}, cs[0]["args"]); diff != "" {
				t.Errorf("args (-want +got):\n%s\nstderr:\n%s", diff, stderr)
			}
		})
	}
}

// TestParsePlatformFlag: --platform is read as containerd reads it, and must be a linux
// platform the wrapper can look up.
func TestParsePlatformFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    v1.Platform
		wantErr bool
	}{
		{"linux/amd64", v1.Platform{OS: "linux", Architecture: "amd64"}, false},
		{"linux/AMD64", v1.Platform{OS: "linux", Architecture: "amd64"}, false},
		{"Linux/aarch64/8", v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, false},
		{"linux/arm", v1.Platform{OS: "linux", Architecture: "arm"}, false},
		{"windows/amd64", v1.Platform{}, true},
		{"linux", v1.Platform{}, true},
		{"linux/arm64/v8-beta", v1.Platform{}, true},
	}
	for _, tt := range tests {
		got, err := parsePlatform(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" || (err != nil) != tt.wantErr {
			t.Errorf("parsePlatform(%q) (-want +got):\n%s\nerror %v, want one: %v", tt.in, diff, err, tt.wantErr)
		}
	}
}
