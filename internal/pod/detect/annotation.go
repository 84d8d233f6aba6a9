package detect

import (
	"fmt"
	"slices"

	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// fromSidecarsAnnotations reads the sidecars that the pod's sidesync annotations list: the
// user's own (contract.SidecarsAnnotation), then those inject found in the manifest
// (contract.FoundAnnotation) whose profile the user's list does not name. A malformed entry is
// left out and reported as a warning, never fatal: the pod is already running, and the entries
// that can be read still count.
func (r *Result) fromSidecarsAnnotations(ann map[string]string, lookupEnv func(string) (string, bool)) []Found {
	user := r.fromAnnotation(ann, contract.SidecarsAnnotation, lookupEnv)
	return withAnnotated(user, r.fromAnnotation(ann, contract.FoundAnnotation, lookupEnv))
}

// fromAnnotation reads one annotation in the syntax of --sidecar.
func (r *Result) fromAnnotation(ann map[string]string, key string, lookupEnv func(string) (string, bool)) []Found {
	value, ok := ann[key]
	if !ok {
		return nil
	}
	parsed, err := config.ParseSidecars(value, lookupEnv)
	var found []Found
	for _, p := range parsed {
		found = append(found, Found{Profile: p.Profile, Sidecar: p.Sidecar, Why: "annotation " + key})
	}
	if err != nil {
		w := fmt.Sprintf("ignoring what cannot be read in the pod annotation %s=%q: %v", key, value, err)
		if !slices.Contains(r.Warnings, w) {
			r.Warnings = append(r.Warnings, w)
		}
	}
	return found
}

// withAnnotated merges what an annotation lists with what the rest reveals: the annotation's
// entries first, then the others whose profile the annotation does not name. Where both name a
// profile, the annotation wins: it carries the ports and whether the sidecar is native, which
// its writer knew; a mesh's own marks (added later, by its webhook) still reveal the sidecars
// the annotation could not list.
func withAnnotated(annotated, others []Found) []Found {
	named := make(map[string]bool)
	for _, f := range annotated {
		named[f.Profile] = true
	}
	return append(slices.Clip(annotated), slices.DeleteFunc(others, func(f Found) bool { return named[f.Profile] })...)
}
