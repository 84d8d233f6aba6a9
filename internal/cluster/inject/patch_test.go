package inject

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/corpus"
)

// Patch is checked the way the API server uses it: its operations are applied to the raw object
// with gopkg.in/evanphx/json-patch.v4, the library of the API server's mutating webhook
// dispatcher, and the result must be exactly Apply's output; then patching the patched object
// must give no operation; and every operation must be at a path sidesync owns.

// patchInputs are the objects Patch is tested on: inject's test data and goldens, the public
// corpus (internal/testing/corpus) and deploy/examples.
func patchInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	files, _ := filepath.Glob("testdata/*.yaml")
	golden, _ := filepath.Glob("testdata/golden/*.yaml")
	examples, _ := filepath.Glob("../../../deploy/examples/*.yaml")
	for _, name := range slices.Concat(files, golden, examples) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		in[name] = b
	}
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		in[m.File] = m.Data
	}
	return in
}

// eachObject calls f with every object of a manifest, as kubectl-sidesync reads them.
func eachObject(t *testing.T, data []byte, f func(obj map[string]any, tm manifest.TypeMeta)) {
	docs, _, err := stream.Read(bytes.NewReader(data))
	if err != nil {
		t.Logf("not read, as kubectl-sidesync refuses it too: %v", err)
		return
	}
	_ = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, _ string) (map[string]any, error) {
		f(obj, tm)
		return obj, nil
	})
}

// TestPatchEqualsApply: over every input, with both deliveries, the patch gives Apply's output;
// re-patching gives nothing; every operation is at a path sidesync owns. It counts what it
// checked, so that an input set that lost its pods fails.
func TestPatchEqualsApply(t *testing.T) {
	changed, converted := 0, 0
	for name, data := range patchInputs(t) {
		for _, d := range []Delivery{InitCopy, ImageVolume} {
			for _, native := range []bool{false, true} {
				o := opts()
				o.Delivery, o.Native = d, native
				eachObject(t, data, func(obj map[string]any, tm manifest.TypeMeta) {
					if checkPatch(t, name, obj, tm, o, nil) {
						changed++
						if _, r, _ := Apply(obj, tm, o, nil); len(r.Converted)+len(r.Asked) > 0 {
							converted++
						}
					}
				})
			}
		}
	}
	if changed < 80 || converted < 4 {
		t.Errorf("only %d objects were changed by the patches, %d of them converted: the inputs lost their pods", changed, converted)
	}
	t.Logf("%d patched objects checked, %d with native conversions", changed, converted)
}

// TestPatchKeepsOthers: a pod that other webhooks and the user filled first (a mesh's init
// container and native sidecar, its volumes and env, numbers written as 1.50 and 1e3, unknown
// keys at every level) keeps every byte of what is not sidesync's: the patch has no operation
// on an index of theirs, and the numbers keep their text (a round trip through float64 would
// write 1.5 and 1000).
func TestPatchKeepsOthers(t *testing.T) {
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a/b~c":"x"}},
	"spec":{"terminationGracePeriodSeconds":30,"restartPolicy":"Never",
	 "initContainers":[{"name":"istio-init","image":"docker.io/istio/proxyv2:1.28.0","resources":{"limits":{"cpu":1.50}}},
	                   {"name":"istio-proxy","image":"docker.io/istio/proxyv2:1.28.0","restartPolicy":"Always","startupProbe":{"httpGet":{"path":"/healthz/ready","port":15021}}}],
	 "containers":[{"name":"app","image":"example/app","command":["/app"],"args":["--n","1"],
	   "env":[{"name":"A","value":"1"}],"volumeMounts":[{"name":"data","mountPath":"/data"}],"ports":[{"containerPort":8080}],"x-weight":1e3}],
	 "volumes":[{"name":"istio-envoy","emptyDir":{"medium":"Memory"}},{"name":"data","emptyDir":{"sizeLimit":"1Gi"}}]}}`
	obj, err := decodeObject([]byte(pod)) // JSON, not YAML: YAMLToJSON would write 1.5 and 1000
	if err != nil {
		t.Fatal(err)
	}
	addUnknown(obj)
	o := opts()
	o.Force = true // the native sidecar has a startup probe: sidesync is not needed, but wrap anyway
	raw := mustJSON(t, obj)
	ops, _, err := Patch(raw, manifest.TypeMeta{}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	patched := applyOps(t, raw, ops)
	for _, num := range []string{`"cpu":1.50`, `"x-weight":1e3`, `"terminationGracePeriodSeconds":30`, `"sidesync-unknown":{"n":1.50}`} {
		if !bytes.Contains(patched, []byte(num)) {
			t.Errorf("the patched pod lost %s:\n%s", num, patched)
		}
	}
	if n, m := bytes.Count(raw, []byte(`"sidesync-unknown"`)), bytes.Count(patched, []byte(`"sidesync-unknown"`)); n != m || n < 10 {
		t.Errorf("unknown keys: %d before, %d after", n, m)
	}
	for _, op := range ops {
		if regexp.MustCompile(`^/spec/initContainers/[1-9]|^/spec/volumes/[01]$|^/spec/containers/0/(env|volumeMounts)/0$|annotations/a~1b~0c`).MatchString(op.Path) {
			t.Errorf("operation %s %s is at an item that is not sidesync's", op.Op, op.Path)
		}
	}
	checkPatch(t, "pod", obj, manifest.TypeMeta{}, o, nil)
	checkPatch(t, "pod", obj, manifest.TypeMeta{}, Options{Version: "v1.2.3", Image: o.Image, Delivery: ImageVolume, Force: true}, nil)
}

// TestPatchSwitchesDelivery: an injected pod patched with the other delivery and other
// sidecars is brought up to date by removing sidesync's items and adding the new ones, and the
// result is Apply's.
func TestPatchSwitchesDelivery(t *testing.T) {
	for name, data := range map[string][]byte{"job": mustRead(t, "testdata/job.yaml"), "cronjob": mustRead(t, "testdata/cronjob.yaml"), "pod": mustRead(t, "testdata/pod.yaml")} {
		eachObject(t, data, func(obj map[string]any, tm manifest.TypeMeta) {
			out, r, err := Apply(obj, tm, opts(), nil)
			if err != nil || !r.Changed {
				t.Fatalf("%s: %v %+v", name, err, r)
			}
			o := opts()
			o.Delivery, o.Sidecars = ImageVolume, []string{"istio"}
			if !checkPatch(t, name, out, tm, o, nil) {
				t.Errorf("%s: switching the delivery changed nothing", name)
			}
		})
	}
}

// FuzzPatch: for any manifest, Patch agrees with Apply (both fail, or the patch gives Apply's
// output), every operation is at a path sidesync owns, and patching the patched object gives no
// operation.
func FuzzPatch(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	golden, _ := filepath.Glob("testdata/golden/*.yaml")
	for _, name := range slices.Concat(files, golden) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, false, "")
			f.Add(b, true, "/entry $(HOME)")
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"sidesync.io/found-sidecars":"x"}},"spec":{"initContainers":[],"containers":[{"name":"a","command":["x"],"env":null}]}}`), false, "")
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"a","image":"i"},{"name":"b","command":["y"],"volumeMounts":[{"name":"v","mountPath":"/v"}]}]}}`), true, "/e")
	f.Fuzz(func(t *testing.T, data []byte, imageVolume bool, entrypoint string) {
		if !utf8.ValidString(entrypoint) {
			// An entrypoint comes from an image's config, decoded JSON: never invalid UTF-8,
			// which a JSON patch would carry as U+FFFD and Apply as it is.
			return
		}
		docs, _, err := stream.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		o := opts()
		if imageVolume {
			o.Delivery = ImageVolume
		}
		_ = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, _ string) (map[string]any, error) {
			checkPatch(t, "fuzz", obj, tm, o, entrypoints(obj, tm, entrypoint))
			o.Native = true
			checkPatch(t, "fuzz native", obj, tm, o, entrypoints(obj, tm, entrypoint))
			o.Native = false
			return obj, nil
		})
	})
}

// checkPatch checks Patch on obj against Apply and reports whether the object was changed.
func checkPatch(t *testing.T, name string, obj map[string]any, tm manifest.TypeMeta, o Options, eps Entrypoints) bool {
	t.Helper()
	raw := mustJSON(t, obj)
	ops, rp, errP := Patch(raw, tm, o, eps)
	out, ra, errA := Apply(obj, tm, o, eps)
	if (errP == nil) != (errA == nil) {
		t.Fatalf("%s: Patch error %v, Apply error %v", name, errP, errA)
	}
	if errA != nil {
		return false
	}
	if !sameJSON(rp, ra) {
		t.Fatalf("%s: reports differ:\nPatch %+v\nApply %+v", name, rp, ra)
	}
	if !ra.Changed {
		if len(ops) != 0 {
			t.Fatalf("%s: Apply changes nothing, Patch has %d operations", name, len(ops))
		}
		return false
	}
	checkOwnedOps(t, name, obj, ops, o.Native)
	patched := applyOps(t, raw, ops)
	got, err := decodeObject(patched)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got, out) {
		t.Fatalf("%s: the patched object is not Apply's output\nops: %s\npatched: %s\nApply:   %s", name, mustJSON(t, ops), patched, mustJSON(t, out))
	}
	again, _, err := Patch(patched, tm, o, eps)
	if err != nil || len(again) != 0 {
		t.Fatalf("%s: patching the patched object: %v, %s", name, err, mustJSON(t, again))
	}
	return true
}

// ownedPaths are the paths an operation may have, below the pod's base.
var ownedPaths = regexp.MustCompile(`^((?:/spec/template|/spec/jobTemplate/spec/template)?)(?:` +
	`/spec/containers/\d+/(?:command|args|image)` + // a wrapped container's
	`|(/spec/containers/\d+/(?:env|volumeMounts)|/spec/volumes|/spec/initContainers)(/\d+)?` + // sidesync's items, or a whole list
	`|/metadata(/annotations(/[^/]+)?)?)$`)

// checkOwnedOps checks that every operation is at a path sidesync owns, and that an item added
// or removed in a list, or a list added whole, is sidesync's (removals come before additions in
// each list, last index first, so their indexes are those of obj).
func checkOwnedOps(t *testing.T, name string, obj map[string]any, ops []Op, native bool) {
	t.Helper()
	var moved []string // with native: the containers removed, to be added as native sidecars
	ownedItem := func(v any) bool {
		m, ok := v.(map[string]any)
		n := manifest.Str(m, "name")
		return ok && (strings.HasPrefix(n, "sidesync-") || strings.HasPrefix(n, "SIDESYNC_") ||
			native && slices.Contains(moved, n) && manifest.Str(m, "restartPolicy") == "Always" ||
			native && slices.Contains([]string{"CSQL_PROXY_HEALTH_CHECK", "CSQL_PROXY_HTTP_ADDRESS"}, n))
	}
	ownedKeys := []string{contract.InjectedAnnotation, contract.WrappedAnnotation, contract.FoundAnnotation}
	if native {
		for _, e := range catalog.Entries() {
			for _, m := range e.Native.Marks {
				ownedKeys = append(ownedKeys, m.Key)
			}
		}
	}
	for _, op := range ops {
		if c := regexp.MustCompile(`^(?:/spec/template|/spec/jobTemplate/spec/template)?/spec/containers/\d+$`); native && op.Op == "remove" && c.MatchString(op.Path) {
			moved = append(moved, manifest.Str(valueAt(obj, op.Path).(map[string]any), "name"))
			continue
		}
		m := ownedPaths.FindStringSubmatch(op.Path)
		if m == nil {
			t.Fatalf("%s: operation %s %s is not at a path sidesync owns", name, op.Op, op.Path)
		}
		if op.Op == "replace" && !regexp.MustCompile(`/(command|args|image)$`).MatchString(op.Path) {
			t.Fatalf("%s: replace of %s", name, op.Path)
		}
		switch {
		case m[2] != "" && m[3] != "": // an item
			if op.Op == "add" && !ownedItem(op.Value) || op.Op == "remove" && !ownedItem(valueAt(obj, op.Path)) {
				t.Fatalf("%s: %s %s of an item that is not sidesync's", name, op.Op, op.Path)
			}
		case m[2] != "" && op.Op == "add": // a list added whole
			l, ok := op.Value.([]any)
			if !ok {
				t.Fatalf("%s: %s added whole as %T", name, op.Path, op.Value)
			}
			for _, e := range l {
				if !ownedItem(e) {
					t.Fatalf("%s: %s added whole with an item that is not sidesync's: %v", name, op.Path, e)
				}
			}
		case m[5] != "":
			k := strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(m[5], "/"), "~1", "/"), "~0", "~")
			if !slices.Contains(ownedKeys, k) {
				t.Fatalf("%s: %s of annotation %q", name, op.Op, k)
			}
		case m[4] != "": // annotations added whole: only when there were none
			if valueAt(obj, op.Path) != nil {
				if _, ok := valueAt(obj, op.Path).(map[string]any); ok {
					t.Fatalf("%s: the annotations added whole over existing ones", name)
				}
			}
		}
	}
}

// valueAt is the value at a JSON Pointer, or nil.
func valueAt(v any, ptr string) any {
	for _, k := range strings.Split(ptr, "/")[1:] {
		k = strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// applyOps applies ops to raw as the API server does.
func applyOps(t *testing.T, raw []byte, ops []Op) []byte {
	t.Helper()
	if len(ops) == 0 {
		return raw
	}
	p, err := jsonpatch.DecodePatch(mustJSON(t, ops))
	if err != nil {
		t.Fatalf("DecodePatch: %v", err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("the API server's library refuses the patch: %v\nops: %s\nobject: %s", err, mustJSON(t, ops), raw)
	}
	return out
}

// addUnknown adds a key no Kubernetes version has to every object of v, at every level but the
// string maps (labels, annotations).
func addUnknown(v any) map[string]any {
	var walk func(v any)
	walk = func(v any) {
		switch c := v.(type) {
		case map[string]any:
			for k, e := range c {
				if k != "labels" && k != "annotations" {
					walk(e)
				}
			}
			c["sidesync-unknown"] = map[string]any{"n": json.Number("1.50")}
		case []any:
			for _, e := range c {
				walk(e)
			}
		}
	}
	walk(v)
	return v.(map[string]any)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPatchDefaulted: the pod the webhook sees when it is invoked again has been through the API
// server's defaulting (a downwardAPI volume's defaultMode, a fieldRef's apiVersion, the install
// container's terminationMessagePath and imagePullPolicy): that is no change to undo, and the
// patch is empty. A real change beside the defaults still patches.
func TestPatchDefaulted(t *testing.T) {
	out, _ := apply(t, decode(t, podWith(`[{name: app, image: x, command: [run]}]`, "")), opts(), nil)
	spec := at(t, out, "spec").(map[string]any)
	for _, v := range spec["volumes"].([]any) {
		if d, ok := v.(map[string]any)["downwardAPI"].(map[string]any); ok {
			d["defaultMode"] = json.Number("420")
			for _, it := range d["items"].([]any) {
				it.(map[string]any)["fieldRef"].(map[string]any)["apiVersion"] = "v1"
			}
		}
	}
	install := spec["initContainers"].([]any)[0].(map[string]any)
	install["terminationMessagePath"], install["imagePullPolicy"] = "/dev/termination-log", "IfNotPresent"
	// The ServiceAccount plugin, after a MutatingAdmissionPolicy wrapped the pod, mounts the
	// token into every container, sidesync's install container too.
	install["volumeMounts"] = append(install["volumeMounts"].([]any), map[string]any{"name": "kube-api-access-x", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true})
	raw := mustJSON(t, out)
	if ops, _, err := Patch(raw, manifest.TypeMeta{}, opts(), nil); err != nil || len(ops) != 0 {
		t.Errorf("a defaulted injected pod: %v, ops %s", err, mustJSON(t, ops))
	}
	o := opts()
	o.Delivery = ImageVolume
	if ops, _, err := Patch(raw, manifest.TypeMeta{}, o, nil); err != nil || len(ops) == 0 {
		t.Errorf("another delivery on a defaulted pod: %v, no ops", err)
	}
	// A section that lost one of sidesync's items is patched, defaults or not.
	spec["volumes"] = spec["volumes"].([]any)[:1]
	if ops, _, err := Patch(mustJSON(t, out), manifest.TypeMeta{}, opts(), nil); err != nil || len(ops) == 0 {
		t.Errorf("a defaulted pod without the pod-info volume: %v, no ops", err)
	}
}
