package image

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/testing/imagetest"
)

func TestParsePlatforms(t *testing.T) {
	for _, tt := range []struct {
		list string
		want []v1.Platform
		err  string
	}{
		{list: DefaultPlatforms, want: []v1.Platform{amd64, arm64}},
		{list: "linux/arm64/v9, linux/arm/v7", want: []v1.Platform{{OS: "linux", Architecture: "arm64", Variant: "v9"}, {OS: "linux", Architecture: "arm", Variant: "v7"}}},
		{list: "linux", err: `platform "linux": want os/arch`},
		{list: "linux/amd64,", err: `platform "": want os/arch`},
		{list: "a/b/c/d", err: "too many slashes"},
	} {
		got, err := ParsePlatforms(tt.list)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePlatforms(%q): error %v, want %q", tt.list, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePlatforms(%q): %v", tt.list, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParsePlatforms(%q) (-want +got):\n%s", tt.list, diff)
		}
	}
}

func TestCheckBinary(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		p    v1.Platform
		err  string // "" for none
	}{
		{"static amd64", imagetest.FakeELF(elf.EM_X86_64, ""), amd64, ""},
		{"static arm64", imagetest.FakeELF(elf.EM_AARCH64, ""), arm64, ""},
		{"arm64 binary as amd64", imagetest.FakeELF(elf.EM_AARCH64, ""), amd64, "built for EM_AARCH64, not for linux/amd64"},
		{"dynamically linked", imagetest.FakeELF(elf.EM_X86_64, "/lib64/ld-linux-x86-64.so.2"), amd64, "dynamically linked (it needs /lib64/ld-linux-x86-64.so.2)"},
		{"not ELF", []byte("#!/bin/sh\necho hi\n"), amd64, "not an executable for linux/amd64"},
		{"windows", imagetest.FakeELF(elf.EM_X86_64, ""), v1.Platform{OS: "windows", Architecture: "amd64"}, "not one sidesync is released for"},
	} {
		err := CheckBinary(tt.data, tt.p)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: CheckBinary: %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestReadDist(t *testing.T) {
	dir := t.TempDir()
	static := imagetest.FakeELF(elf.EM_X86_64, "")
	if err := os.WriteFile(filepath.Join(dir, "sidesync-linux-amd64"), static, 0o755); err != nil {
		t.Fatal(err)
	}
	bins, err := ReadDist(dir, []v1.Platform{amd64})
	if err != nil || len(bins) != 1 || !bins[0].Platform.Equals(amd64) || string(bins[0].Data) != string(static) {
		t.Errorf("ReadDist: %v, %v", bins, err)
	}
	// Every problem at once: arm64's binary is missing, and riscv64's is amd64's.
	if err := os.WriteFile(filepath.Join(dir, "sidesync-linux-riscv64"), static, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = ReadDist(dir, []v1.Platform{amd64, arm64, {OS: "linux", Architecture: "riscv64"}})
	if err == nil || !strings.Contains(err.Error(), "open "+filepath.Join(dir, "sidesync-linux-arm64")+": no such file or directory (scripts/release.sh builds it)") || !strings.Contains(err.Error(), "sidesync-linux-riscv64: built for EM_X86_64") {
		t.Errorf("ReadDist with arm64 missing and riscv64 wrong: %v", err)
	}
}
