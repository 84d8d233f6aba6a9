package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

var testInject = inject.Options{Version: "v1.2.3", Image: "ghcr.io/sidesync/sidesync:v1.2.3"}

func podReview(t *testing.T, ns, pod string) *admissionv1.AdmissionRequest {
	t.Helper()
	return &admissionv1.AdmissionRequest{UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: ns,
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(pod)}}
}

const withCommand = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"restartPolicy":"Never","containers":[{"name":"app","image":"a","command":["/app"]}]}}`

// TestMutateOutcomes: each outcome of the pod webhook, without a server.
func TestMutateOutcomes(t *testing.T) {
	m := &Mutator{Inject: testInject, Namespace: "sidesync-system"}
	tests := []struct {
		name, ns, pod string
		op            admissionv1.Operation
		outcome       Outcome
		reason        string
		allowed       bool
		patch         string // a substring of the patch
	}{
		{"wrapped", "apps", withCommand, admissionv1.Create, Wrapped, "", true, contract.Binary},
		{"an update", "apps", withCommand, admissionv1.Update, Unchanged, "", true, ""},
		{"own namespace", "sidesync-system", withCommand, admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"kube-system", "kube-system", withCommand, admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"opt-out label", "apps", strings.Replace(withCommand, `"name":"p"`, `"name":"p","labels":{"sidesync.io/inject":"disabled"}`, 1), admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"opt-out annotation", "apps", strings.Replace(withCommand, `"name":"p"`, `"name":"p","annotations":{"sidesync.io/inject":"false"}`, 1), admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"mirror pod", "apps", strings.Replace(withCommand, `"name":"p"`, `"name":"p","annotations":{"kubernetes.io/config.mirror":"x"}`, 1), admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"runs forever", "apps", strings.Replace(withCommand, `"Never"`, `"Always"`, 1), admissionv1.Create, Skipped, ReasonExcluded, true, ""},
		{"no command", "apps", strings.Replace(withCommand, `,"command":["/app"]`, ``, 1), admissionv1.Create, Skipped, ReasonNoCommand, true, SkippedAnnotation[len("sidesync.io/"):]},
		{"no command, opted in", "apps", strings.Replace(strings.Replace(withCommand, `,"command":["/app"]`, ``, 1), `"name":"p"`, `"name":"p","labels":{"sidesync.io/inject":"enabled"}`, 1), admissionv1.Create, Denied, ReasonNoCommand, false, ""},
		{"invalid for inject", "apps", strings.Replace(withCommand, `"containers":[`, `"volumes":[{"name":"sidesync-bin","secret":{"secretName":"s"}}],"containers":[`, 1), admissionv1.Create, Skipped, ReasonInvalid, true, "belongs to sidesync"},
		{"not JSON", "apps", `{"spec":`, admissionv1.Create, Errored, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := podReview(t, tt.ns, tt.pod)
			req.Operation = tt.op
			res := m.Mutate(context.Background(), req)
			if res.Outcome != tt.outcome || res.Reason != tt.reason || res.Response.Allowed != tt.allowed || res.Response.UID != "u1" {
				t.Errorf("outcome %s/%s allowed %v (message %q), want %s/%s allowed %v", res.Outcome, res.Reason, res.Response.Allowed, res.Message, tt.outcome, tt.reason, tt.allowed)
			}
			if !strings.Contains(string(res.Response.Patch), tt.patch) || tt.patch == "" && len(res.Response.Patch) > 0 {
				t.Errorf("patch %s, want one with %q", res.Response.Patch, tt.patch)
			}
		})
	}
}

// TestShort: every warning starts "sidesync: ", ends with the docs anchor and has at most
// MaxWarning bytes, however long its parts, and cuts on a rune boundary.
func TestShort(t *testing.T) {
	for _, msg := range []string{"", "short", strings.Repeat("é", 200), strings.Repeat("x", 500)} {
		for _, c := range []string{"", "app", strings.Repeat("c", 63)} {
			w := Short("sidecar-never-quits", c, msg)
			if !strings.HasPrefix(w, "sidesync: ") || !strings.HasSuffix(w, DocsAnchor+")") || len(w) > MaxWarning || !utf8Valid(w) {
				t.Errorf("Short(%d bytes, %q) = %q (%d bytes)", len(msg), c, w, len(w))
			}
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestServerBusy: with every slot taken, a request waits within its budget (the API server's
// ?timeout), then is answered 503 and counted as an error, never left hanging.
func TestServerBusy(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := &Server{Mutator: &Mutator{Inject: testInject}, Warner: &Warner{Inject: testInject}, Metrics: NewMetrics(reg),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Slots: make(chan struct{}, 1)}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	body := reviewBody(t, podReview(t, "apps", withCommand))
	post := func() *http.Response {
		r, err := http.Post(srv.URL+MutatePath+"?timeout=1s", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := post()
	var out admissionv1.AdmissionReview
	json.NewDecoder(r.Body).Decode(&out)
	r.Body.Close()
	if r.StatusCode != 200 || out.Response == nil || out.Response.PatchType == nil {
		t.Fatalf("free slot: %d %+v", r.StatusCode, out.Response)
	}
	s.Slots <- struct{}{} // every slot taken
	r = post()
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("busy: %d, want 503", r.StatusCode)
	}
	if n := testutil.ToFloat64(s.Metrics.Admissions.WithLabelValues("mutate", string(Errored), "busy")); n != 1 {
		t.Errorf("busy admissions counted %v, want 1", n)
	}
	if n := testutil.ToFloat64(s.Metrics.Admissions.WithLabelValues("mutate", string(Wrapped), "")); n != 1 {
		t.Errorf("wrapped admissions counted %v, want 1", n)
	}
}

// TestServerRefusesBadReviews: what is no admission.k8s.io/v1 AdmissionReview is a 400 with
// the reason, never a panic.
func TestServerRefusesBadReviews(t *testing.T) {
	s := &Server{Mutator: &Mutator{Inject: testInject}, Warner: &Warner{Inject: testInject},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tc := range []struct{ ct, body, want string }{
		{"text/plain", `{}`, "content type"},
		{"application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}`, "want admission.k8s.io/v1"},
		{"application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "no request"},
		{"application/json", `[`, "not an AdmissionReview"},
	} {
		r, err := http.Post(srv.URL+WarnPath, tc.ct, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %q, want 400 with %q", tc.ct, tc.body, r.StatusCode, b, tc.want)
		}
	}
}

func reviewBody(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
