package istioinject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/loadpods"
)

// Shape is one kind of pod of the comparison: its size and its number of apps.
type Shape struct {
	Size loadpods.Size
	Apps int
}

func (s Shape) String() string { return fmt.Sprintf("%s/%dapp", s.Size.Name, s.Apps) }

// Shapes are the pods compared: 1, 16 and 64 KiB of JSON, with one app and with three.
var Shapes = []Shape{
	{loadpods.KiB1, 1}, {loadpods.KiB1, 3},
	{loadpods.KiB16, 1}, {loadpods.KiB16, 3},
	{loadpods.KiB64, 1}, {loadpods.KiB64, 3},
}

// Pod is the shape's pod, before any injector, in namespace ns (empty: none written).
func (s Shape) Pod(name, ns string) []byte {
	return loadpods.JSON(loadpods.Unmeshed(name, ns, s.Size.Bytes, s.Apps))
}

// Injector is one of the two webhooks compared: its handler, the path it serves, and how a pod
// it mutated is told from one it did not.
type Injector struct {
	Name    string
	Handler http.Handler
	Path    string
	// Mutated reports whether the pod (JSON) carries this injector's change.
	Mutated func(pod []byte) bool
}

// IstioMutated: Istio's injector added istio-proxy (a native sidecar or a container) and wrote
// its status annotation.
func IstioMutated(pod []byte) bool {
	return bytes.Contains(pod, []byte(`"name":"istio-proxy"`)) && bytes.Contains(pod, []byte(`"sidecar.istio.io/status"`))
}

// SidesyncMutated: sidesync's injector wrapped the apps and wrote its annotation.
func SidesyncMutated(pod []byte) bool {
	return bytes.Contains(pod, []byte(contract.InjectedAnnotation))
}

// Admit sends one AdmissionReview to the injector's handler in-process and returns the answer's
// JSON Patch, after checking that the answer allows the pod, is a JSON Patch, and that the
// patched pod is mutated as the injector mutates.
func (in Injector) Admit(review, pod []byte) (patch []byte, err error) {
	w := httptest.NewRecorder()
	in.Handler.ServeHTTP(w, NewRequest(in.Path, review))
	if w.Code != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %.300s", in.Name, w.Code, w.Body)
	}
	return in.check(w.Body.Bytes(), pod)
}

// NewRequest is the API server's POST of an AdmissionReview to path.
func NewRequest(path string, review []byte) *http.Request {
	req := httptest.NewRequest("POST", path+"?timeout=10s", bytes.NewReader(review))
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (in Injector) check(answer, pod []byte) ([]byte, error) {
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(answer, &out); err != nil {
		return nil, fmt.Errorf("%s: the answer: %w", in.Name, err)
	}
	r := out.Response
	if r == nil || !r.Allowed || len(r.Patch) == 0 || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		return nil, fmt.Errorf("%s: not an allowing JSON Patch: %.500s", in.Name, answer)
	}
	p, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		return nil, fmt.Errorf("%s: the patch: %w", in.Name, err)
	}
	mutated, err := p.Apply(pod)
	if err != nil {
		return nil, fmt.Errorf("%s: applying the patch: %w", in.Name, err)
	}
	if !in.Mutated(mutated) {
		return nil, fmt.Errorf("%s: the patched pod is not mutated as %s mutates: %.500s", in.Name, in.Name, mutated)
	}
	return r.Patch, nil
}

// Ops is the number of operations of a JSON Patch.
func Ops(patch []byte) int {
	var ops []any
	if json.Unmarshal(patch, &ops) != nil {
		return -1
	}
	return len(ops)
}

// Loadavg is /proc/loadavg's three averages.
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// discard is a ResponseWriter that keeps nothing: the benchmark loop's answers are checked once,
// before it, by Admit.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
