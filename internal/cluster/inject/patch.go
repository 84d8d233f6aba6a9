package inject

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Op is one operation of a JSON Patch (RFC 6902), as an admission webhook answers with it.
type Op struct {
	Op    string `json:"op"` // "add", "replace" or "remove"
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"` // absent for "remove"
}

// Patch is Apply as a JSON Patch: the operations that turn raw (one Pod, Job or CronJob as JSON;
// tm as for Apply) into what Apply returns for it, with Apply's report. They come from Apply's
// plan, not from a diff of the two objects, so that they touch only what sidesync owns, wherever
// other webhooks have put their own items:
//
//   - a wrapped container's command and args ("replace", or "add" where absent), and its image
//     where it is pinned to a digest;
//   - in its env and volumeMounts, in the pod's volumes and initContainers: sidesync's items,
//     removed by index where they were and added where Apply puts them; a list that was absent
//     is added whole;
//   - the annotations inject writes ("add" replaces a member; "remove" of a stale one), the keys
//     escaped as JSON Pointer says (RFC 6901).
//
// Everything else keeps its bytes, numbers included. Patching the patched object gives no
// operations (Apply is idempotent), and so does an object Apply leaves unchanged, and one the API
// server has since filled with its defaults (see covers).
func Patch(raw []byte, tm manifest.TypeMeta, o Options, eps Entrypoints) ([]Op, Report, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, Report{}, err
	}
	return PatchObject(obj, tm, o, eps)
}

// PatchObject is Patch of an object already decoded (numbers as json.Number, as
// manifest.DecodeJSONObject reads them), which it does not change.
func PatchObject(obj map[string]any, tm manifest.TypeMeta, o Options, eps Entrypoints) ([]Op, Report, error) {
	out, r, err := Apply(obj, tm, o, eps)
	if err != nil || !r.Changed {
		return nil, r, err
	}
	w, err := manifest.Locate(obj, tm)
	if err != nil || w == nil {
		return nil, r, fmt.Errorf("%s: changed, but no pod in it", r.Object) // cannot happen: Apply located it
	}
	wOut, _ := manifest.Locate(out, tm)
	ps := &patcher{}
	base := pointer(w.TemplatePath)
	if err := ps.pod(base, w.Template, wOut.Template); err != nil {
		return nil, r, fmt.Errorf("%s: %w", r.Object, err)
	}
	return ps.ops, r, nil
}

// decodeObject reads one JSON object, numbers as json.Number, as Apply expects them.
func decodeObject(raw []byte) (map[string]any, error) { return manifest.DecodeJSONObject(raw) }

// patcher collects the operations.
type patcher struct{ ops []Op }

func (ps *patcher) add(path string, v any) {
	ps.ops = append(ps.ops, Op{Op: "add", Path: path, Value: v})
}
func (ps *patcher) remove(path string) { ps.ops = append(ps.ops, Op{Op: "remove", Path: path}) }

// pod writes the operations for the pod (the Pod itself or a template) at base, from its state
// before and after Apply.
func (ps *patcher) pod(base string, before, after map[string]any) error {
	specB, _ := before["spec"].(map[string]any)
	specA, _ := after["spec"].(map[string]any)
	spec := base + "/spec"
	cb, _ := specB["containers"].([]any)
	ca, _ := specA["containers"].([]any)
	moved, err := ps.containers(spec, cb, ca)
	if err != nil {
		return err
	}
	if err := ps.list(spec, "volumes", specB, specA, ownedVolume); err != nil {
		return err
	}
	ownedInits := ownedInit
	if len(moved) > 0 {
		ownedInits = func(e any) bool { return ownedInit(e) || named(moved...)(e) }
	}
	if err := ps.list(spec, "initContainers", specB, specA, ownedInits); err != nil {
		return err
	}
	return ps.annotations(base, before, after)
}

// containers writes the operations for the regular containers: those Apply wrapped change in
// place, and those Options.Native made native sidecars are removed, last first, after the
// others' operations, which name them by their index before; list adds them to the
// initContainers. It returns the names of those moved.
func (ps *patcher) containers(spec string, cb, ca []any) ([]string, error) {
	after := map[string]map[string]any{}
	for _, e := range ca {
		a, _ := e.(map[string]any)
		after[manifest.Str(a, "name")] = a
	}
	var moved []string
	var gone []int
	for i, e := range cb {
		b, _ := e.(map[string]any)
		a, ok := after[manifest.Str(b, "name")]
		if !ok {
			moved, gone = append(moved, manifest.Str(b, "name")), append(gone, i)
			continue
		}
		if err := ps.container(spec+"/containers/"+strconv.Itoa(i), b, a); err != nil {
			return nil, err
		}
	}
	if len(cb)-len(gone) != len(ca) {
		return nil, fmt.Errorf("containers: %d before, %d after, %d moved", len(cb), len(ca), len(gone))
	}
	for i := len(gone) - 1; i >= 0; i-- {
		ps.remove(spec + "/containers/" + strconv.Itoa(gone[i]))
	}
	return moved, nil
}

// container writes the operations for one regular container: only a wrapped one changes.
func (ps *patcher) container(path string, before, after map[string]any) error {
	for _, key := range []string{"command", "args", "image"} {
		b, had := before[key]
		a, has := after[key]
		switch {
		case !has && had:
			return fmt.Errorf("%s: Apply removed %s", path, key) // it never does
		case !has || sameJSON(a, b):
		case had:
			ps.ops = append(ps.ops, Op{Op: "replace", Path: path + "/" + key, Value: a})
		default:
			ps.add(path+"/"+key, a)
		}
	}
	if err := ps.list(path, "env", before, after, ownedEnv); err != nil {
		return err
	}
	return ps.list(path, "volumeMounts", before, after, ownedMount)
}

// list writes the operations that turn the list holder[key] before into the one after, where
// Apply has removed sidesync's items (owned) and put its own: the others must be the same, in
// the same order. sidesync's items are removed by index, last first, and its new ones added at
// their places, first first; a list that was absent (or null) is added whole, and one Apply
// dropped (initContainers left empty) is removed.
func (ps *patcher) list(path, key string, holderB, holderA map[string]any, owned func(any) bool) error {
	b, hadB := holderB[key]
	a, hasA := holderA[key]
	if lb, la := asList(b), asList(a); hadB == hasA && (lb == nil) == (la == nil) && len(lb) == len(la) && covers(b, a) {
		return nil
	}
	at := path + "/" + key
	lb, _ := b.([]any)
	la, _ := a.([]any)
	switch {
	case !hasA:
		if slices.ContainsFunc(lb, func(e any) bool { return !owned(e) }) {
			return fmt.Errorf("%s: Apply dropped a list that has items sidesync does not own", at)
		}
		ps.remove(at)
		return nil
	case b == nil:
		ps.add(at, la)
		return nil
	}
	othersB := slices.DeleteFunc(slices.Clone(lb), owned)
	othersA := slices.DeleteFunc(slices.Clone(la), owned)
	if !sameJSON(othersB, othersA) {
		return fmt.Errorf("%s: Apply changed items sidesync does not own", at)
	}
	for i := len(lb) - 1; i >= 0; i-- {
		if owned(lb[i]) {
			ps.remove(at + "/" + strconv.Itoa(i))
		}
	}
	for i, e := range la {
		if owned(e) {
			ps.add(at+"/"+strconv.Itoa(i), e)
		}
	}
	return nil
}

// annotations writes the operations for the annotations inject owns.
func (ps *patcher) annotations(base string, before, after map[string]any) error {
	metaB, hasMeta := before["metadata"].(map[string]any)
	metaA, _ := after["metadata"].(map[string]any)
	annB, hasAnn := metaB["annotations"].(map[string]any)
	annA, _ := metaA["annotations"].(map[string]any)
	switch {
	case annA == nil && (!hasAnn || annB == nil):
		return nil // none before, none written (a pod that Options.Native left unwrapped)
	case !hasMeta:
		ps.add(base+"/metadata", metaA) // Apply added metadata with the annotations alone
		return nil
	case !hasAnn || annB == nil:
		ps.add(base+"/metadata/annotations", annA)
		return nil
	}
	for _, k := range ps.annotationKeys(annB, annA) {
		b, had := annB[k]
		a, has := annA[k]
		at := base + "/metadata/annotations/" + EscapePointer(k)
		switch {
		case has && (!had || !sameJSON(a, b)):
			ps.add(at, a)
		case had && !has:
			ps.remove(at)
		}
	}
	return nil
}

// covers reports whether before holds everything of after: the same scalars, every key of
// after's objects, and of after's lists the first items, item by item (list lengths are checked
// by the caller where they matter: a section's own items). What the API server adds to what
// sidesync wrote (a downwardAPI volume's defaultMode, a fieldRef's apiVersion, an init
// container's terminationMessagePath, the service account token's mount appended to the install
// container when a MutatingAdmissionPolicy wrapped the pod before the ServiceAccount plugin ran)
// is not a change to undo: when the webhook is invoked again (reinvocationPolicy IfNeeded) the
// pod it sees has been defaulted, and it must answer with no operation.
func covers(before, after any) bool {
	switch a := after.(type) {
	case map[string]any:
		b, ok := before.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range a {
			if bv, ok := b[k]; !ok || !covers(bv, v) {
				return false
			}
		}
		return true
	case []any:
		b, ok := before.([]any)
		if !ok || len(b) < len(a) {
			return false
		}
		for i := range a {
			if !covers(b[i], a[i]) {
				return false
			}
		}
		return true
	}
	return sameJSON(before, after)
}

// asList is v as a list, nil when it is none.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// pointer turns a manifest path of object keys ("spec.template") into a JSON Pointer.
func pointer(path string) string {
	if path == "" {
		return ""
	}
	var b strings.Builder
	for _, k := range strings.Split(path, ".") {
		b.WriteString("/" + EscapePointer(k))
	}
	return b.String()
}

// EscapePointer escapes a key for a JSON Pointer (RFC 6901 section 3): "~" as "~0", "/" as "~1".
func EscapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// annotationKeys are the annotations Apply may write: inject's own, and those that ask a mesh for
// a native sidecar (Options.Native), which it only adds.
func (ps *patcher) annotationKeys(before, after map[string]any) []string {
	keys := []string{contract.InjectedAnnotation, contract.WrappedAnnotation, contract.FoundAnnotation}
	for _, e := range catalog.Entries() {
		for _, m := range e.Native.Marks {
			if _, had := before[m.Key]; !had && !slices.Contains(keys, m.Key) {
				if _, has := after[m.Key]; has {
					keys = append(keys, m.Key)
				}
			}
		}
	}
	return keys
}
