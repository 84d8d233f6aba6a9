package lint

import (
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// InNamespace returns obj as it runs in a namespace with the given annotations and labels: obj
// itself, or a copy whose pod carries the request of every mesh the namespace asks for (the
// catalog's NamespaceRequests) that the pod neither asks for nor refuses. A plain Job in a
// namespace labelled istio-injection=enabled gets Istio's sidecar, which a manifest alone does
// not show; lint of the copy says what the mesh's sidecar will do to it. It is the one rule by
// which the webhook's warnings at a Job's creation and the lint of what runs in a cluster read
// a namespace. obj is never changed; an object whose pod is not read is returned as it is.
//
// from names, by the catalog's name of each mesh whose request was added, the namespace's mark
// that asks for it: an Object's FromNamespace.
func InNamespace(obj map[string]any, tm manifest.TypeMeta, nsAnnotations, nsLabels map[string]string) (_ map[string]any, from map[string]string) {
	wl, err := manifest.Locate(obj, tm)
	if err != nil || wl == nil {
		return obj, nil
	}
	pod, err := manifest.ReadWorkload(wl)
	if err != nil {
		return obj, nil
	}
	var add []catalog.Mark
	from = map[string]string{}
	for _, e := range catalog.Entries() {
		if len(e.Requests) == 0 || !e.AskedByNamespace(nsAnnotations, nsLabels, pod.Annotations, pod.Labels) {
			continue
		}
		add = append(add, e.Requests[0])
		for _, m := range e.NamespaceRequests {
			if m.On(nsAnnotations, nsLabels) {
				from[e.Name] = m.String()
				break
			}
		}
	}
	if len(add) == 0 {
		return obj, nil
	}
	out, err := manifest.ObjectOf(obj) // a copy to add the requests to; obj stays as it came
	if err != nil {
		return obj, nil
	}
	wl, err = manifest.Locate(out, tm)
	if err != nil || wl == nil {
		return obj, nil
	}
	meta, _ := wl.Template["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		wl.Template["metadata"] = meta
	}
	for _, m := range add {
		key := "annotations"
		if m.Label {
			key = "labels"
		}
		into, _ := meta[key].(map[string]any)
		if into == nil {
			into = map[string]any{}
			meta[key] = into
		}
		if _, set := into[m.Key]; !set {
			into[m.Key] = m.Value
		}
	}
	return out, from
}
