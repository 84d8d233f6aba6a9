// Package detect finds out which sidecars the pod has, when none is configured: from the pod's
// annotations and labels in a downward-API volume, or else from the pod itself in the
// Kubernetes API (one small, bounded, standard-library request). Probing well-known ports is
// not detection: the sidecar may not have started yet.
package detect

import (
	"strconv"

	"github.com/sidesync/sidesync/sidecar"
)

// Found is a sidecar found by detection, and what was learnt on the way.
type Found struct {
	Profile string // the sidecar profile it is (Sidecar.Name may differ: name=)
	Sidecar sidecar.Sidecar
	Why     string   // the annotation, label or container that gave it away
	Notes   []string // things the user should know (a quit endpoint that is off, say)
}

// fromMetadata finds the sidecars that injectors marked on the pod, in the order of Signatures.
func fromMetadata(ann, labels map[string]string) []Found {
	var found []Found
	for _, s := range Signatures() {
		m, ok := s.marked(ann, labels)
		if !ok {
			continue
		}
		var port string
		if s.Port.Key != "" {
			port = ann[s.Port.Key]
		}
		f := withPort(s.Profile, m.String(), port, s.Port.QuitOnly)
		if s.fromMarks != nil {
			s.fromMarks(&f, ann)
		}
		found = append(found, f)
	}
	return found
}

// withPort is the profile called name, moved to port when an annotation gives one: both the
// readiness check and the quit call, or only the quit call when quitOnly.
func withPort(name, why, port string, quitOnly bool) Found {
	sc, _ := sidecar.Profile(name)
	f := Found{Profile: name, Sidecar: sc, Why: why}
	if port == "" {
		return f
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		f.Notes = append(f.Notes, "ignoring port "+strconv.Quote(port)+" from the annotations: not a port")
		return f
	}
	if quitOnly {
		f.Sidecar = f.Sidecar.WithPorts(0, n)
	} else {
		f.Sidecar = f.Sidecar.WithPorts(n, n)
	}
	return f
}
