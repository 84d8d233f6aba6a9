package resolve

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func plat(os, arch, variant string) v1.Platform {
	return v1.Platform{OS: os, Architecture: arch, Variant: variant}
}

// TestNormalize: index entries and --platform values read as containerd reads them.
func TestNormalize(t *testing.T) {
	tests := []struct {
		in   v1.Platform
		want string
	}{
		{plat("linux", "amd64", ""), "linux/amd64"},
		{plat("linux", "AMD64", ""), "linux/amd64"},
		{plat("Linux", "Arm64", "V8"), "linux/arm64/v8"},
		{plat("linux", "x86_64", ""), "linux/amd64"},
		{plat("linux", "x86-64", "v1"), "linux/amd64"},
		{plat("linux", "amd64", "v3"), "linux/amd64/v3"},
		{plat("linux", "aarch64", ""), "linux/arm64"},
		{plat("linux", "arm64", "8"), "linux/arm64/v8"},
		{plat("linux", "arm64", "v8.0"), "linux/arm64/v8"},
		{plat("linux", "arm", ""), "linux/arm"},
		{plat("linux", "arm", "7"), "linux/arm/v7"},
		{plat("linux", "armhf", ""), "linux/arm/v7"},
		{plat("linux", "armel", ""), "linux/arm/v6"},
		{plat("linux", "i386", ""), "linux/386"},
		{plat("linux", "s390x", ""), "linux/s390x"},
	}
	for _, tt := range tests {
		if got := format(Normalize(tt.in)); got != tt.want {
			t.Errorf("Normalize(%s) = %s, want %s", format(tt.in), got, tt.want)
		}
	}
}

// TestMatches: --platform against index entries. arm64's only variant is v8, and a bare arm
// is arm/v7, both ways round, as containerd matches them; a --platform without a variant
// matches every variant.
func TestMatches(t *testing.T) {
	tests := []struct {
		entry, want v1.Platform
		same, match bool
	}{
		{plat("linux", "arm64", ""), plat("linux", "arm64", "v8"), true, true},
		{plat("linux", "arm64", "v8"), plat("linux", "arm64", ""), true, true},
		{plat("linux", "arm64", "v8"), plat("linux", "arm64", "v8"), true, true},
		{plat("linux", "arm64", "v9"), plat("linux", "arm64", "v8"), false, false},
		{plat("linux", "arm64", "v9"), plat("linux", "arm64", ""), false, true},
		{plat("linux", "arm", ""), plat("linux", "arm", "v7"), true, true},
		{plat("linux", "arm", "v7"), plat("linux", "arm", ""), true, true},
		{plat("linux", "arm", "v6"), plat("linux", "arm", ""), false, true},
		{plat("linux", "arm", "v6"), plat("linux", "arm", "v7"), false, false},
		{plat("linux", "AMD64", ""), plat("linux", "amd64", ""), true, true},
		{plat("linux", "amd64", "v3"), plat("linux", "amd64", ""), false, true},
		{plat("linux", "amd64", ""), plat("linux", "amd64", "v3"), false, false},
		{plat("linux", "amd64", ""), plat("linux", "arm64", ""), false, false},
		{plat("windows", "amd64", ""), plat("linux", "amd64", ""), false, false},
	}
	for _, tt := range tests {
		e, w := format(tt.entry), format(tt.want)
		if got := same(tt.entry, tt.want); got != tt.same {
			t.Errorf("same(%s, %s) = %v, want %v", e, w, got, tt.same)
		}
		if got := same(tt.want, tt.entry); got != tt.same {
			t.Errorf("same(%s, %s) = %v, want %v (not symmetric)", w, e, got, tt.same)
		}
		if got := matches(tt.entry, tt.want); got != tt.match {
			t.Errorf("matches(entry %s, --platform %s) = %v, want %v", e, w, got, tt.match)
		}
	}
}

// TestPlatformKey: every key is one the wrapper's parser takes, or an error saying why not.
func TestPlatformKey(t *testing.T) {
	tests := []struct {
		in      v1.Platform
		want    string
		wantErr bool
	}{
		{plat("linux", "AMD64", ""), "linux/amd64", false},
		{plat("linux", "arm64", "v8"), "linux/arm64/v8", false},
		{plat("linux", "arm64", "v8-beta"), "linux/arm64/v8-beta", true},
		{plat("linux", "riscv64", "rva22u64"), "linux/riscv64/rva22u64", false},
		{plat("linux", "", ""), "linux/", true},
		{plat("linux", "amd64", "v2 "), "linux/amd64/v2 ", true},
	}
	for _, tt := range tests {
		got, err := PlatformKey(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("PlatformKey(%q) = %q, %v; want %q, error %v", format(tt.in), got, err, tt.want, tt.wantErr)
		}
	}
}
