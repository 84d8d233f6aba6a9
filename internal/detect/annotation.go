package detect

import (
	"fmt"
	"slices"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/contract"
)

// SidecarsAnnotation is the pod annotation that lists the pod's sidecars in the syntax of
// --sidecar and SIDESYNC_SIDECARS (contract.SidecarsAnnotation).
const SidecarsAnnotation = contract.SidecarsAnnotation

// fromSidecarsAnnotation reads the sidecars the annotation lists. A malformed entry is left out
// and reported in warning, never fatal: the pod is already running, and the entries that can be
// read still count.
func fromSidecarsAnnotation(ann map[string]string, lookupEnv func(string) (string, bool)) (found []Found, warning string) {
	value, ok := ann[SidecarsAnnotation]
	if !ok {
		return nil, ""
	}
	parsed, err := config.ParseSidecars(value, lookupEnv)
	for _, p := range parsed {
		found = append(found, Found{Profile: p.Profile, Sidecar: p.Sidecar, Why: "annotation " + SidecarsAnnotation})
	}
	if err != nil {
		warning = fmt.Sprintf("ignoring what cannot be read in the pod annotation %s=%q: %v", SidecarsAnnotation, value, err)
	}
	return found, warning
}

// withAnnotated merges what the sidesync.io/sidecars annotation lists with what the other marks
// and containers reveal: the annotation's entries first, then the others whose profile the
// annotation does not name. Where both name a profile, the annotation wins: it carries the ports
// and whether the sidecar is native, which inject read from the manifest; a mesh's own marks
// (added later, by its webhook) still reveal the sidecars inject could not see.
func withAnnotated(annotated, others []Found) []Found {
	named := make(map[string]bool)
	for _, f := range annotated {
		named[f.Profile] = true
	}
	return append(slices.Clip(annotated), slices.DeleteFunc(others, func(f Found) bool { return named[f.Profile] })...)
}
