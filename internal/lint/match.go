package lint

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/detect"
)

// Reading the detection table (internal/detect, Signatures) as detection reads it in the pod:
// the same rows, the same rules. Lint uses only the table's exported data, so that it does not
// depend on how detection is put together inside.

// containerProfile returns the profile that a container of this name and image reveals: the
// first row of the table with a matching Containers entry (a name, if given, equal; an image, if
// given, contained in the image, in lower case).
func containerProfile(name, image string) (string, bool) {
	image = strings.ToLower(image)
	for _, s := range detect.Signatures() {
		if slices.ContainsFunc(s.Containers, func(m detect.ContainerMatch) bool {
			return (m.Name == "" || m.Name == name) && strings.Contains(image, m.Image)
		}) {
			return s.Profile, true
		}
	}
	return "", false
}

// markOn reports whether the pod carries the table's mark: the annotation (or label) with the
// mark's value, or any value if the mark gives none.
func markOn(m detect.Mark, ann, labels map[string]string) bool {
	from := ann
	if m.Label {
		from = labels
	}
	v, ok := from[m.Key]
	return ok && (m.Value == "" || v == m.Value)
}

// marked returns the mark of s that the pod carries, unless one of s's Unless marks is there.
func marked(s detect.Signature, ann, labels map[string]string) (detect.Mark, bool) {
	for _, u := range s.Unless {
		if markOn(u, ann, labels) {
			return detect.Mark{}, false
		}
	}
	for _, m := range s.Marks {
		if markOn(m, ann, labels) {
			return m, true
		}
	}
	return detect.Mark{}, false
}

// istioStatus is the annotation Istio's injector leaves, a JSON object that lists the containers
// it injected; the proxy is native when it is among the initContainers (as detection reads it).
const istioStatus = "sidecar.istio.io/status"

func istioNativeByStatus(ann map[string]string) bool {
	var st struct {
		InitContainers []string `json:"initContainers"`
	}
	return json.Unmarshal([]byte(ann[istioStatus]), &st) == nil && slices.Contains(st.InitContainers, "istio-proxy")
}

// flagValue reads flags as detection reads the Cloud SQL Auth Proxy's: --name, --name=V or
// --name V, also with one dash; --name=false counts as absent.
var flagValue = detect.FlagValue
