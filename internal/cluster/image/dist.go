package image

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultPlatforms are the platforms that scripts/release.sh builds by default.
const DefaultPlatforms = "linux/amd64,linux/arm64"

// ParsePlatforms parses a comma-separated list of "os/arch[/variant]". An arm64 platform that
// names no variant is v8, as containerd normalises it and as Go builds it (GOARM64=v8.0).
func ParsePlatforms(list string) ([]v1.Platform, error) {
	var ps []v1.Platform
	var errs []error
	for _, s := range strings.Split(list, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("platform %q: %w", s, err))
		case p.OS == "" || p.Architecture == "" || p.OSVersion != "":
			errs = append(errs, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s))
		default:
			if p.Architecture == "arm64" && p.Variant == "" {
				p.Variant = "v8"
			}
			ps = append(ps, *p)
		}
	}
	return ps, errors.Join(errs...)
}

// DistName is the name scripts/release.sh gives p's binary: sidesync-OS-ARCH.
func DistName(p v1.Platform) string {
	return "sidesync-" + p.OS + "-" + p.Architecture
}

// ReadDist reads the binaries of platforms from dir, where scripts/release.sh writes them, and
// checks each one (CheckBinary). It reports every problem at once.
func ReadDist(dir string, platforms []v1.Platform) ([]PlatformBinary, error) {
	var bins []PlatformBinary
	var errs []error
	for _, p := range platforms {
		path := filepath.Join(dir, DistName(p))
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w (scripts/release.sh builds it)", err)
		} else if err == nil {
			if err = CheckBinary(data, p); err != nil {
				err = fmt.Errorf("%s: %w", path, err)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bins = append(bins, PlatformBinary{Platform: p, Data: data})
	}
	return bins, errors.Join(errs...)
}

// CheckBinary checks that data is a static Linux executable for p's architecture. A scratch
// image has no dynamic loader, so a binary that needs one fails to start with the misleading
// "no such file or directory"; one for another machine fails with "exec format error".
func CheckBinary(data []byte, p v1.Platform) error {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
		"386": elf.EM_386, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}
	want, ok := machines[p.Architecture]
	if p.OS != "linux" || !ok {
		return fmt.Errorf("platform %s is not one sidesync is released for", p)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an executable for %s: %w", p, err)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %v, not for %s", f.Machine, p)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(prog.Open(), 256))
			return fmt.Errorf("dynamically linked (it needs %s), and a scratch image has no C library: build it with CGO_ENABLED=0, as scripts/release.sh does",
				strings.TrimRight(string(interp), "\x00"))
		}
	}
	return nil
}
