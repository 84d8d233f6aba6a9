package inject

import (
	"strings"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
)

// Report is what Apply did to one object, for a person (String) or a webhook's warnings.
type Report struct {
	// Object names the object: "Job/report".
	Object string
	// Injected is false for an object of a kind or API version inject leaves alone; Reason says
	// why, and also why a pod inject read is left unchanged (nothing for sidesync to do, or an
	// app that cannot be wrapped).
	Injected bool
	Reason   string
	// Changed says whether the object changed; false for an object injected before with the
	// same options.
	Changed bool
	// Delivery is how the binary gets into the pod, when a container is wrapped.
	Delivery Delivery
	// Wrapped are the containers wrapped now; AlreadyWrapped those wrapped before, of which
	// Updated are those whose flags, variables or mounts inject brought up to date.
	Wrapped        []string
	AlreadyWrapped []string
	Updated        []string
	// Left are the containers left alone, with why: sidecars, init containers, containers
	// not selected, containers without a command whose image was not resolved.
	Left []Left
	// Sidecars are the sidecars the manifest shows, as recorded in contract.FoundAnnotation.
	Sidecars []string
	// Warnings say what the user should do: each names its container.
	Warnings []string

	// Converted are the classic sidecars that Options.Native made native sidecars, with what
	// they got ("startup probe GET :9090/startup"); Asked the annotations added to ask a mesh's
	// injector for a native sidecar, with the mesh's releases that honour them.
	Converted []Left
	Asked     []string
	// Unfixed says, for each classic sidecar of a Job's pod that nothing can tell to quit,
	// wrapped or not, why the pod still never completes: inject fixed nothing there.
	Unfixed []string
	// Needs are the Kubernetes features the object uses, as inject leaves it: native sidecars,
	// an image volume, container restart rules. kubeversion.Needs gives the version.
	Needs []kubeversion.Feature
}

// Left is a container left alone, and why.
type Left struct {
	Container string
	Why       string // "a known sidecar: istio", "an init container", "no command"
}

// String is the report as one line:
//
//	Job/report: wrapped job (init-copy); left istio-proxy (a known sidecar: istio)
//	Job/report: unchanged: job already wrapped (init-copy); left istio-proxy (a known sidecar: istio)
//	Job/report: job already wrapped, updated (init-copy); left istio-proxy (a known sidecar: istio)
//	Job/report: left unchanged (an app container cannot be wrapped); left job (no command)
//	ConfigMap/settings: passed through (kind ConfigMap is not injected: ...)
func (r Report) String() string {
	if !r.Injected {
		return r.Object + ": passed through (" + r.Reason + ")"
	}
	s := r.Object + ": " + r.native() + r.what()
	var left []string
	for _, l := range r.Left {
		left = append(left, l.Container+" ("+l.Why+")")
	}
	if len(left) > 0 {
		s += "; left " + strings.Join(left, ", ")
	}
	return s
}

// what says what happened to the apps.
func (r Report) what() string {
	switch {
	case r.Reason != "" && len(r.Converted)+len(r.Asked) > 0:
		return "apps not wrapped (" + r.Reason + ")"
	case r.Reason != "":
		return "left unchanged (" + r.Reason + ")"
	}
	var what []string
	if len(r.Wrapped) > 0 {
		what = append(what, "wrapped "+strings.Join(r.Wrapped, ", "))
	}
	if len(r.AlreadyWrapped) > 0 {
		w := strings.Join(r.AlreadyWrapped, ", ") + " already wrapped"
		if len(r.Updated) > 0 {
			w += ", updated " + strings.Join(r.Updated, ", ")
		}
		what = append(what, w)
	}
	switch {
	case len(what) == 0:
		return "wrapped nothing"
	case !r.Changed:
		return "unchanged: " + strings.Join(what, ", ") + " (" + string(r.Delivery) + ")"
	}
	return strings.Join(what, ", ") + " (" + string(r.Delivery) + ")"
}

// native says what Options.Native did, ending in "; ", or "".
func (r Report) native() string {
	var what []string
	if len(r.Converted) > 0 {
		var cs []string
		for _, c := range r.Converted {
			cs = append(cs, c.Container+" ("+c.Why+")")
		}
		what = append(what, "made native "+strings.Join(cs, ", "))
	}
	if len(r.Asked) > 0 {
		what = append(what, "asked for native sidecars with "+strings.Join(r.Asked, ", "))
	}
	if len(what) == 0 {
		return ""
	}
	return strings.Join(what, "; ") + "; "
}
