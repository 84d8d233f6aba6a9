package inject

import (
	"fmt"

	"github.com/sidesync/sidesync/internal/contract"
)

// deliver puts the binary's volume, the pod-info volume and, for InitCopy, the install init
// container into the pod, replacing inject's earlier ones: changing the delivery of an
// injected pod leaves nothing of the old one behind.
func deliver(t *template, o Options) error {
	vols, err := listAt(t.spec, "volumes", t.specPath())
	if err != nil {
		return err
	}
	vols = withoutNamed(vols, contract.BinVolume, contract.PodInfoVolume)
	t.spec["volumes"] = append(vols, binVolume(o), podInfoVolume())

	inits, err := listAt(t.spec, "initContainers", t.specPath())
	if err != nil {
		return err
	}
	inits = withoutNamed(inits, contract.InitContainer)
	if o.delivery() == InitCopy {
		// First, before any native sidecar: the binary must be there before anything starts
		// that a wrapped container might wait on, and it costs a few milliseconds.
		inits = append([]any{installContainer(o.Image)}, inits...)
	}
	if len(inits) == 0 {
		delete(t.spec, "initContainers")
	} else {
		t.spec["initContainers"] = inits
	}
	return nil
}

// binVolume holds the binary: an emptyDir that the install init container fills, or the
// sidesync image itself, whose root (the binary is contract.ImageBinary there) is mounted at contract.BinDir.
func binVolume(o Options) map[string]any {
	if o.delivery() == ImageVolume {
		return map[string]any{"name": contract.BinVolume,
			"image": map[string]any{"reference": o.Image, "pullPolicy": "IfNotPresent"}}
	}
	return map[string]any{"name": contract.BinVolume, "emptyDir": map[string]any{"sizeLimit": "64Mi"}}
}

// podInfoVolume shows the pod's annotations and labels to the wrapper, which finds its
// sidecars there (contract.SidecarsAnnotation, and the marks a mesh's webhook adds) with no API
// credentials.
func podInfoVolume() map[string]any {
	item := func(path, field string) map[string]any {
		return map[string]any{"path": path, "fieldRef": map[string]any{"fieldPath": field}}
	}
	return map[string]any{"name": contract.PodInfoVolume, "downwardAPI": map[string]any{"items": []any{
		item("annotations", "metadata.annotations"), item("labels", "metadata.labels")}}}
}

// installContainer copies the binary into contract.BinVolume. Its securityContext passes Pod Security
// "restricted", and its requests and limits satisfy a ResourceQuota that requires them.
func installContainer(image string) map[string]any {
	return map[string]any{
		"name":         contract.InitContainer,
		"image":        image,
		"command":      []any{contract.ImageBinary, "install", contract.InstallDir},
		"volumeMounts": []any{map[string]any{"name": contract.BinVolume, "mountPath": contract.InstallDir}},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "10m", "memory": "16Mi"},
			"limits":   map[string]any{"memory": "64Mi"},
		},
		"securityContext": map[string]any{
			"runAsNonRoot":             true,
			"runAsUser":                int64(65532),
			"allowPrivilegeEscalation": false,
			"readOnlyRootFilesystem":   true,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
			"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
		},
	}
}

// annotate records on the pod what inject did (contract.InjectedAnnotation: "VERSION DELIVERY
// CONTAINER,..."), and the sidecars the manifest shows (contract.SidecarsAnnotation), or removes a stale
// one when it shows none.
func annotate(t *template, o Options, wrapped, sidecars []string) {
	ann := t.annotations()
	ann[contract.InjectedAnnotation] = fmt.Sprintf("%s %s %s", o.Version, o.delivery(), joinComma(wrapped))
	if len(sidecars) == 0 {
		delete(ann, contract.SidecarsAnnotation)
		return
	}
	ann[contract.SidecarsAnnotation] = joinComma(sidecars)
}
