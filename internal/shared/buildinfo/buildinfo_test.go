package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestImage(t *testing.T) {
	tests := []struct {
		version, want string
	}{
		{"v1.2.3", ImageRepository + ":v1.2.3"},
		{"v1.2.3-rc.1", ImageRepository + ":v1.2.3-rc.1"},
		{"v0.0.0-20261202150405-abcdef123456", ""},
		{"v1.2.3-dirty", ""},
		{"(devel)", ""},
	}
	for _, tt := range tests {
		got, ok := Info{Version: tt.version}.Image()
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Image of %s = %q, %v; want %q", tt.version, got, ok, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	got := Info{Version: "v1.2.3", Commit: "abc"}.Line("kubectl-sidesync")
	if want := "kubectl-sidesync v1.2.3 (commit abc, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	if c := Current(); c.Version == "" || c.Commit == "" {
		t.Errorf("Current() = %+v: want both filled", c)
	}
}

// TestImageFlag: --image wins; without it a release names its own image and a development
// build has none, which is an error naming the flag.
func TestImageFlag(t *testing.T) {
	release, dev := Info{Version: "v1.2.3"}, Info{Version: "v0.0.0-20261202150405-abcdef123456"}
	if got, err := dev.ImageFlag("example.com/sidesync:1"); err != nil || got != "example.com/sidesync:1" {
		t.Errorf("dev with --image: %q, %v", got, err)
	}
	if got, err := release.ImageFlag(""); err != nil || got != ImageRepository+":v1.2.3" {
		t.Errorf("release without --image: %q, %v", got, err)
	}
	if got, err := dev.ImageFlag(""); err == nil || got != "" || !strings.Contains(err.Error(), "--image is required: this is a development build (version v0.0.0-") {
		t.Errorf("dev without --image: %q, %v", got, err)
	}
}
