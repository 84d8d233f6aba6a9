package inject

import "fmt"

// NativeMode says when injection makes native sidecars (Options.Native): the flag --native of
// kubectl sidesync inject and of the webhook.
type NativeMode string

// The modes.
const (
	// NativeAuto makes native sidecars where the cluster runs them: the caller decides, since
	// inject knows nothing of nodes.
	NativeAuto NativeMode = "auto"
	// NativeAlways makes native sidecars.
	NativeAlways NativeMode = "always"
	// NativeNever leaves the sidecars as written.
	NativeNever NativeMode = "never"
)

// ParseNativeMode reads a mode: auto, always or never.
func ParseNativeMode(s string) (NativeMode, error) {
	switch m := NativeMode(s); m {
	case NativeAuto, NativeAlways, NativeNever:
		return m, nil
	}
	return "", fmt.Errorf("%q: auto, always or never", s)
}
