// Package detect finds out which sidecars the pod has, when none is configured: from the pod's
// annotations and labels in a downward-API volume, or else from the pod itself in the
// Kubernetes API (one small, bounded, standard-library request). Probing well-known ports is
// not detection: the sidecar may not have started yet.
package detect

import (
	"github.com/sidesync/sidesync/sidecar"
)

// Found is a sidecar found by detection, and what was learnt on the way.
type Found struct {
	Profile string // the sidecar profile it is (Sidecar.Name may differ: name=)
	Sidecar sidecar.Sidecar
	Why     string   // the annotation, label or container that gave it away
	Notes   []string // things the user should know (a quit endpoint that is off, say)
	// NativeUnknown, when not empty, says why this sidecar may be a native one although the
	// pod's annotations and labels cannot say (Linkerd 2.20+ injects native sidecars by
	// default, and leaves the same marks either way): Detect then asks the Pod in the API, and
	// when it cannot, the sidecar is not told to quit.
	NativeUnknown string
	settle        string // the annotations that would settle NativeUnknown, for the note
}
