package inject

import (
	"fmt"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
)

// NativeMode is the one setting of native conversion, as `kubectl sidesync inject --native`,
// the webhook's chart value and `kubectl sidesync policy` take it: auto, always or never. The
// inject package itself takes Options.Native, a bool: its callers resolve auto (kubectl inject
// from --kube-version, the webhook from the cluster's nodes), since inject does not know nodes.
type NativeMode string

// The native modes.
const (
	// NativeAuto converts where every node that can run the pod runs a kubelet that runs native
	// sidecars by default (kubeversion.NativeKubelet).
	NativeAuto NativeMode = "auto"
	// NativeAlways converts, whatever the nodes.
	NativeAlways NativeMode = "always"
	// NativeNever keeps inject as it was before native conversion: sidecars stay as written,
	// and the apps are wrapped.
	NativeNever NativeMode = "never"
)

// ParseNativeMode reads a --native value; "" is NativeAuto.
func ParseNativeMode(s string) (NativeMode, error) {
	switch m := NativeMode(s); m {
	case "":
		return NativeAuto, nil
	case NativeAuto, NativeAlways, NativeNever:
		return m, nil
	}
	return "", fmt.Errorf("--native %q: not %s, %s or %s", s, NativeAuto, NativeAlways, NativeNever)
}

// Native resolves the mode into Options.Native for a cluster whose oldest kubelet (of the nodes
// that can run the pod) is oldest: auto converts only where that kubelet runs native sidecars
// by default.
func (m NativeMode) Native(oldest kubeversion.Version) bool {
	switch m {
	case NativeAlways:
		return true
	case NativeNever:
		return false
	}
	return oldest.AtLeast(kubeversion.NativeKubelet)
}
