package inject

import (
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// deliver puts the binary's volume, the pod-info volume, with several wrapped containers their
// state volume, and for InitCopy the install init container into the pod, replacing inject's
// earlier ones: changing the delivery of an injected pod leaves nothing of the old one behind.
func deliver(pod *manifest.PodView, o Options, peers int) error {
	specPath := manifest.Join(pod.Path, "spec")
	vols, err := manifest.ListAt(pod.Spec, "volumes", specPath)
	if err != nil {
		return err
	}
	vols = append(without(vols, ownedVolume), binVolume(o), podInfoVolume())
	if peers > 1 {
		vols = append(vols, stateVolume())
	}
	pod.Spec["volumes"] = vols

	inits, err := manifest.ListAt(pod.Spec, "initContainers", specPath)
	if err != nil {
		return err
	}
	inits = without(inits, ownedInit)
	if o.delivery() == InitCopy {
		// First, before any native sidecar: the binary must be there before anything starts
		// that a wrapped container might wait on, and it costs a few milliseconds.
		inits = append([]any{installContainer(o.Image)}, inits...)
	}
	if len(inits) == 0 {
		delete(pod.Spec, "initContainers")
	} else {
		pod.Spec["initContainers"] = inits
	}
	return nil
}

// binVolume holds the binary: an emptyDir that the install init container fills, or the
// sidesync image itself, whose root (the binary is ImageBinary there) is mounted at BinDir.
func binVolume(o Options) map[string]any {
	if o.delivery() == ImageVolume {
		return map[string]any{"name": contract.BinVolume,
			"image": map[string]any{"reference": o.Image, "pullPolicy": "IfNotPresent"}}
	}
	return map[string]any{"name": contract.BinVolume, "emptyDir": map[string]any{"sizeLimit": "64Mi"}}
}

// podInfoVolume shows the pod's annotations and labels to the wrapper, which finds its
// sidecars there (FoundAnnotation, the user's SidecarsAnnotation, and the marks a mesh's
// webhook adds) and its peers (WrappedAnnotation), with no API credentials.
func podInfoVolume() map[string]any {
	item := func(path, field string) map[string]any {
		return map[string]any{"path": path, "fieldRef": map[string]any{"fieldPath": field}}
	}
	return map[string]any{"name": contract.PodInfoVolume, "downwardAPI": map[string]any{"items": []any{
		item(contract.PodInfoAnnotations, "metadata.annotations"), item(contract.PodInfoLabels, "metadata.labels")}}}
}

// stateVolume is where the wrapped containers mark that their command runs or has ended: a few
// bytes each, on disk (a memory-backed emptyDir would count against the pod's memory).
func stateVolume() map[string]any {
	return map[string]any{"name": contract.StateVolume, "emptyDir": map[string]any{"sizeLimit": "1Mi"}}
}

// installCommand is what the install init container runs: the image's binary copying itself.
func installCommand() []string {
	return []string{contract.ImageBinary, "install", contract.InstallDir}
}

// installResources are the install container's requests and limits: equal, for cpu and memory,
// so that a Guaranteed pod stays Guaranteed (its CPU pinning kept) and a ResourceQuota that
// requires limits admits it. The copy of a 6 MB binary needs a few MiB and little CPU.
func installResources() map[string]any {
	r := map[string]any{"cpu": "50m", "memory": "32Mi"}
	return map[string]any{"requests": r, "limits": map[string]any{"cpu": "50m", "memory": "32Mi"}}
}

// installContainer copies the binary into BinVolume. Its securityContext passes Pod Security
// "restricted" without naming a user: the image's user is the numeric 65532, which satisfies
// runAsNonRoot, and clusters that pick users themselves (OpenShift's restricted-v2) refuse a
// fixed one.
func installContainer(image string) map[string]any {
	return map[string]any{
		"name":         contract.InitContainer,
		"image":        image,
		"command":      anyList(installCommand()),
		"volumeMounts": []any{map[string]any{"name": contract.BinVolume, "mountPath": contract.InstallDir}},
		"resources":    installResources(),
		"securityContext": map[string]any{
			"runAsNonRoot":             true,
			"allowPrivilegeEscalation": false,
			"readOnlyRootFilesystem":   true,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
			"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
		},
	}
}

// annotate records on the pod what inject did (InjectedAnnotation: "VERSION DELIVERY"), the
// wrapped containers (WrappedAnnotation), and the sidecars the manifest shows
// (FoundAnnotation), or removes a stale list when it shows none. The user's own
// SidecarsAnnotation is never touched.
func annotate(holder map[string]any, o Options, wrapped, found []string) {
	ann := ensureMap(ensureMap(holder, "metadata"), "annotations")
	ann[contract.InjectedAnnotation] = o.Version + " " + string(o.delivery())
	ann[contract.WrappedAnnotation] = strings.Join(wrapped, ",")
	if len(found) == 0 {
		delete(ann, contract.FoundAnnotation)
		return
	}
	ann[contract.FoundAnnotation] = strings.Join(found, ",")
}
