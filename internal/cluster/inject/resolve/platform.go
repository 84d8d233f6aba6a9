package resolve

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/shared/config"
)

// Platforms are named as containerd names them when a node picks its image from an index, so
// that the command inject reads for a platform is the command of the image that platform runs.
// OCI says the fields are GOOS and GOARCH values, case-sensitive; containerd lower-cases them
// and knows a few other spellings before matching, and so does Normalize. What the wrapper then
// looks its platform up by is config.CheckPlatform's form, which every key written must pass.

// Normalize is p as containerd reads an index entry or a --platform value: lower case; x86_64
// is amd64, aarch64 is arm64, armhf is arm/v7, armel arm/v6, i386 386; amd64's v1 is no
// variant; a bare number as the variant of arm or arm64 gets its "v". A bare arm64 and a
// bare arm stay bare: see same.
func Normalize(p v1.Platform) v1.Platform {
	os, arch, variant := strings.ToLower(p.OS), strings.ToLower(p.Architecture), strings.ToLower(p.Variant)
	switch arch {
	case "x86_64", "x86-64":
		arch = "amd64"
	case "aarch64":
		arch = "arm64"
	case "armhf":
		arch, variant = "arm", "v7"
	case "armel":
		arch, variant = "arm", "v6"
	case "i386":
		arch, variant = "386", ""
	}
	switch {
	case arch == "amd64" && variant == "v1":
		variant = ""
	case arch == "arm64" && (variant == "8" || variant == "v8.0"):
		variant = "v8"
	case arch == "arm" && len(variant) == 1 && variant >= "5" && variant <= "8":
		variant = "v" + variant
	}
	return v1.Platform{OS: os, Architecture: arch, Variant: variant}
}

// defaultVariant is the variant a platform without one means: arm64 has only v8, and a bare
// arm is v7, as containerd reads them.
func defaultVariant(arch string) string {
	switch arch {
	case "arm64":
		return "v8"
	case "arm":
		return "v7"
	}
	return ""
}

// same reports whether a and b name one platform: equal once normalised, a missing variant
// being the architecture's default (linux/arm64 is linux/arm64/v8, linux/arm is linux/arm/v7).
func same(a, b v1.Platform) bool {
	a, b = Normalize(a), Normalize(b)
	return a.OS == b.OS && a.Architecture == b.Architecture && variantOrDefault(a) == variantOrDefault(b)
}

// matches reports whether an index entry is among the platforms that want names: the same
// platform (same, so linux/arm64/v8 matches linux/arm64 and the other way round), or any
// variant of want's architecture when want names none (linux/arm matches linux/arm/v6 too).
func matches(entry, want v1.Platform) bool {
	if same(entry, want) {
		return true
	}
	e, w := Normalize(entry), Normalize(want)
	return w.Variant == "" && e.OS == w.OS && e.Architecture == w.Architecture
}

func variantOrDefault(p v1.Platform) string {
	if p.Variant == "" {
		return defaultVariant(p.Architecture)
	}
	return p.Variant
}

// PlatformKey is p's key in SIDESYNC_PLATFORM_COMMANDS, "os/arch[/variant]", normalised; the
// error, config.CheckPlatform's, says why the wrapper could not look it up.
func PlatformKey(p v1.Platform) (string, error) {
	key := format(Normalize(p))
	return key, config.CheckPlatform(key)
}

// format is p as "os/arch[/variant]", as it is written.
func format(p v1.Platform) string {
	k := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		k += "/" + p.Variant
	}
	return k
}
