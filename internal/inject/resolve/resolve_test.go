package resolve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/inject"
	rt "github.com/sidesync/sidesync/internal/inject/resolve/registrytest"
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

// TestPlatforms: Options.Platforms selects platforms of an index (linux/arm64 matches
// linux/arm64/v8); an index with none of them, or with no linux image, is an error.
func TestPlatforms(t *testing.T) {
	host := rt.Start(t)
	rt.PushIndex(t, host+"/multi:1", true, amd64, arm64Other)
	rt.PushIndex(t, host+"/win:1", true, windows)
	arm := anonymous
	arm.Platforms = []v1.Platform{{OS: "linux", Architecture: "arm64"}}
	got, err := resolveOne(t, host+"/multi:1", arm)
	if err != nil || !cmp.Equal(got.Platforms, map[string]inject.ImageCommand{"linux/arm64/v8": {Entrypoint: []string{"/app-arm64"}}}) {
		t.Errorf("linux/arm64 only: %+v, %v", got, err)
	}
	s390x := anonymous
	s390x.Platforms = []v1.Platform{{OS: "linux", Architecture: "s390x"}}
	if _, err := resolveOne(t, host+"/multi:1", s390x); err == nil || !strings.Contains(err.Error(), "it has linux/amd64, linux/arm64/v8") {
		t.Errorf("linux/s390x: error %v, want one naming the platforms there are", err)
	}
	if _, err := resolveOne(t, host+"/win:1", anonymous); err == nil || !strings.Contains(err.Error(), "no linux image") {
		t.Errorf("windows only: error %v", err)
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
