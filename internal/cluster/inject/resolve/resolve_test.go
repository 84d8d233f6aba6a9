package resolve

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	rt "github.com/sidesync/sidesync/internal/testing/registrytest"
)

var (
	amd64 = rt.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}
	arm64 = rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}
	// arm64Other runs another ENTRYPOINT on arm64.
	arm64Other = rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/app-arm64"}}
	windows    = rt.Platform{OS: "windows", Architecture: "amd64", Entrypoint: []string{`C:\app.exe`}}
)

// anonymous keeps the tests off the developer's Docker credentials.
var anonymous = Options{Keychain: authn.NewMultiKeychain()}

func resolveOne(t *testing.T, image string, o Options) (inject.ResolvedImage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard
	defer cancel()
	return Image(ctx, image, o)
}

// TestImage reads single images and indexes from a registry on loopback: every linux platform,
// attestation manifests and windows images skipped, pinned to the digest read.
func TestImage(t *testing.T) {
	host := rt.Start(t)
	tests := []struct {
		name, ref, repo string
		push            func(ref string) v1.Hash
		want            map[string]inject.ImageCommand
	}{
		{"index, platforms agree, attestation skipped", host + "/same:1", host + "/same",
			func(ref string) v1.Hash { return rt.PushIndex(t, ref, true, amd64, arm64) },
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}},
				"linux/arm64/v8": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}}},
		{"index, platforms differ, windows skipped", host + "/team/differ:2", host + "/team/differ",
			func(ref string) v1.Hash { return rt.PushIndex(t, ref, true, amd64, arm64Other, windows) },
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}},
				"linux/arm64/v8": {Entrypoint: []string{"/app-arm64"}}}},
		{"single image", host + "/single:3", host + "/single",
			func(ref string) v1.Hash { return rt.PushImage(t, ref, arm64) },
			map[string]inject.ImageCommand{"linux/arm64/v8": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}}},
		{"no tag", host + "/untagged", host + "/untagged",
			func(ref string) v1.Hash { return rt.PushImage(t, ref+":latest", amd64) },
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			digest := tt.push(tt.ref)
			got, err := resolveOne(t, tt.ref, anonymous)
			if err != nil {
				t.Fatal(err)
			}
			want := inject.ResolvedImage{Pinned: tt.repo + "@" + digest.String(), Platforms: tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Image(%s) (-want +got):\n%s", tt.ref, diff)
			}
		})
	}
}

// TestIndexPlatforms: entries are read under their platform as containerd reads it (linux/AMD64
// is linux/amd64; of two entries for one platform the first counts), and an entry whose platform
// the wrapper could not look up is skipped with a warning naming it. Today's code wrote
// "linux/AMD64" into SIDESYNC_PLATFORM_COMMANDS, which the wrapper refuses on every platform.
func TestIndexPlatforms(t *testing.T) {
	host := rt.Start(t)
	upper := rt.Platform{OS: "linux", Architecture: "AMD64", Entrypoint: []string{"/app-upper"}}
	beta := rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8-beta", Entrypoint: []string{"/app-beta"}}
	bare := rt.Platform{OS: "linux", Architecture: "arm64", Entrypoint: []string{"/app-bare"}}
	tests := []struct {
		name      string
		ps        []rt.Platform
		platforms []v1.Platform // Options.Platforms
		want      map[string]inject.ImageCommand
		warnings  []string
	}{
		{"upper case", []rt.Platform{upper, arm64Other}, nil,
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app-upper"}}, "linux/arm64/v8": {Entrypoint: []string{"/app-arm64"}}}, nil},
		{"upper case after lower case: the first counts", []rt.Platform{amd64, upper}, nil,
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}}, nil},
		{"arm64 and arm64/v8 are one platform: the first counts", []rt.Platform{bare, arm64Other}, nil,
			map[string]inject.ImageCommand{"linux/arm64": {Entrypoint: []string{"/app-bare"}}}, nil},
		{"an entry the wrapper could not look up", []rt.Platform{amd64, beta}, nil,
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}},
			[]string{`: the wrapper could not look it up: "linux/arm64/v8-beta" is not a platform`}},
		{"an entry the wrapper could not look up, not asked for: no warning", []rt.Platform{amd64, beta}, []v1.Platform{{OS: "linux", Architecture: "amd64"}},
			map[string]inject.ImageCommand{"linux/amd64": {Entrypoint: []string{"/app"}, Cmd: []string{"serve"}}}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := host + "/p" + strconv.Itoa(i) + ":1"
			rt.PushIndex(t, ref, true, tt.ps...)
			var warnings []string
			o := anonymous
			o.Platforms = tt.platforms
			o.Warn = func(m string) { warnings = append(warnings, m) }
			got, err := resolveOne(t, ref, o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Platforms); diff != "" {
				t.Errorf("platforms (-want +got):\n%s", diff)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.HasPrefix(warnings[i], "image "+ref+": skipped the index entry sha256:") || !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q, want one naming the image, the entry and %q", warnings[i], w)
				}
			}
		})
	}
}

// TestPlatforms: Options.Platforms selects platforms of an index: linux/arm64 and linux/arm64/v8
// match each other both ways, as do linux/arm and linux/arm/v7 (today's code matched
// linux/arm64/v8 to no linux/arm64 entry). An index with none of them, or with no linux image,
// is an error that says what it has.
func TestPlatforms(t *testing.T) {
	host := rt.Start(t)
	bareArm64 := rt.Platform{OS: "linux", Architecture: "arm64", Entrypoint: []string{"/app-arm64"}}
	bareArm := rt.Platform{OS: "linux", Architecture: "arm", Entrypoint: []string{"/app-arm"}}
	armV7 := rt.Platform{OS: "linux", Architecture: "arm", Variant: "v7", Entrypoint: []string{"/app-arm"}}
	rt.PushIndex(t, host+"/v8:1", true, amd64, arm64Other)
	rt.PushIndex(t, host+"/bare:1", true, amd64, bareArm64, bareArm)
	rt.PushIndex(t, host+"/v7:1", true, amd64, armV7)
	rt.PushIndex(t, host+"/win:1", true, windows)
	arm64Cmd := inject.ImageCommand{Entrypoint: []string{"/app-arm64"}}
	armCmd := inject.ImageCommand{Entrypoint: []string{"/app-arm"}}
	tests := []struct {
		image, platform string
		want            map[string]inject.ImageCommand
		wantErr         string
	}{
		{"v8:1", "linux/arm64", map[string]inject.ImageCommand{"linux/arm64/v8": arm64Cmd}, ""},
		{"v8:1", "linux/arm64/v8", map[string]inject.ImageCommand{"linux/arm64/v8": arm64Cmd}, ""},
		{"bare:1", "linux/arm64/v8", map[string]inject.ImageCommand{"linux/arm64": arm64Cmd}, ""},
		{"bare:1", "linux/arm64", map[string]inject.ImageCommand{"linux/arm64": arm64Cmd}, ""},
		{"bare:1", "linux/arm/v7", map[string]inject.ImageCommand{"linux/arm": armCmd}, ""},
		{"v7:1", "linux/arm", map[string]inject.ImageCommand{"linux/arm/v7": armCmd}, ""},
		{"v7:1", "linux/arm/v6", nil, "no platform of the image index is among linux/arm/v6 (it has linux/amd64, linux/arm/v7)"},
		{"v8:1", "linux/s390x", nil, "no platform of the image index is among linux/s390x (it has linux/amd64, linux/arm64/v8)"},
		{"win:1", "", nil, "no linux image"},
	}
	for _, tt := range tests {
		t.Run(tt.image+" "+tt.platform, func(t *testing.T) {
			o := anonymous
			if tt.platform != "" {
				p, err := v1.ParsePlatform(tt.platform)
				if err != nil {
					t.Fatal(err)
				}
				o.Platforms = []v1.Platform{*p}
			}
			got, err := resolveOne(t, host+"/"+tt.image, o)
			if diff := cmp.Diff(tt.want, got.Platforms); diff != "" {
				t.Errorf("platforms (-want +got):\n%s", diff)
			}
			if (err == nil) != (tt.wantErr == "") || !strings.Contains(fmt.Sprint(err), tt.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestImagesErrors: each image that cannot be read has its error; the others resolve.
func TestImagesErrors(t *testing.T) {
	host := rt.Start(t)
	rt.PushImage(t, host+"/ok:1", amd64)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eps, errs := Images(ctx, []string{host + "/ok:1", host + "/missing:1", "UPPER/case:x", host + "/ok:1"}, anonymous)
	if _, ok := eps[host+"/ok:1"]; !ok || len(eps) != 1 {
		t.Errorf("resolved %v, want only ok:1", eps)
	}
	if len(errs) != 2 || errs[host+"/missing:1"] == nil || errs["UPPER/case:x"] == nil {
		t.Errorf("errors %v, want missing:1 and UPPER/case:x", errs)
	}
}

func TestPin(t *testing.T) {
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	for in, want := range map[string]string{
		"python:3.12":                        "python@" + d.String(),
		"python":                             "python@" + d.String(),
		"127.0.0.1:5000/team/app:1":          "127.0.0.1:5000/team/app@" + d.String(),
		"localhost:5000/app":                 "localhost:5000/app@" + d.String(),
		"ghcr.io/a/b:v1@sha256:" + d.Hex[:8]: "ghcr.io/a/b@" + d.String(),
	} {
		if got := pin(in, d); got != want {
			t.Errorf("pin(%q) = %q, want %q", in, got, want)
		}
	}
}
