package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/corpus"
)

// TestWebhookSameAsInject: `kubectl sidesync inject` and the admission webhook make the same
// pod of the same input. Over the public corpus and the examples' plain manifests, every pod
// (a Pod, or a Job's or CronJob's template made a Pod, as its controller creates it) is sent to
// the webhook's handler as the API server sends it (with the pod's own opt-in label, so that any
// restartPolicy is selected), its JSON Patch applied with the API server's library, and the
// result compared with the template inject wrote.
func TestWebhookSameAsInject(t *testing.T) {
	files := map[string][]byte{}
	ms, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		files[m.Name] = m.Data
	}
	plain, _ := filepath.Glob("../../deploy/examples/plain/*.yaml")
	for _, f := range plain {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	image, _ := corpusBuild.Image()
	m := &admission.Mutator{Inject: inject.Options{Version: corpusBuild.Version, Image: image}, Namespace: "sidesync-system"}
	compared, left := 0, 0
	for name, data := range files {
		r := runAs([]string{"inject", "--native", "never", "-f", "-"}, data) // the webhook's Options.Native is false until it resolves --native
		if r.code != 0 {
			continue
		}
		in, out := templates(t, data), templates(t, []byte(r.stdout))
		if len(in) != len(out) {
			t.Fatalf("%s: %d pods in, %d out", name, len(in), len(out))
		}
		for i := range in {
			pod := asPod(in[i])
			raw, _ := json.Marshal(pod)
			res := m.Mutate(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Namespace: "apps", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}})
			changed := !sameJSON(in[i], out[i])
			if changed != (res.Outcome == admission.Wrapped) {
				t.Errorf("%s pod %d: inject changed it: %v; the webhook: %s %s (%s)", name, i, changed, res.Outcome, res.Reason, res.Message)
				continue
			}
			if !changed {
				left++
				continue
			}
			p, err := jsonpatch.DecodePatch(res.Response.Patch)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := p.Apply(raw)
			if err != nil {
				t.Fatalf("%s pod %d: %v", name, i, err)
			}
			got, err := manifest.DecodeJSONObject(patched)
			if err != nil {
				t.Fatal(err)
			}
			want := asPod(out[i])
			if !sameJSON(got["metadata"], want["metadata"]) || !sameJSON(got["spec"], want["spec"]) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Errorf("%s pod %d: the webhook's pod differs from inject's\nwebhook %s\ninject  %s", name, i, gj, wj)
			}
			compared++
		}
	}
	t.Logf("%d pods the same from inject and the webhook, %d left alone by both", compared, left)
	if compared < 20 {
		t.Errorf("only %d pods compared: the inputs lost their pods", compared)
	}
}

// templates are the pod templates (a Pod's metadata and spec) of a manifest's Pods, Jobs and
// CronJobs, in order.
func templates(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	docs, _, err := stream.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	_ = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, _ string) (map[string]any, error) {
		w, err := manifest.Locate(obj, tm)
		if err == nil && w != nil && slices.Contains([]manifest.Kind{manifest.Pod, manifest.Job, manifest.CronJob}, w.Kind) {
			out = append(out, w.Template)
		}
		return obj, nil
	})
	return out
}

// asPod is a template as the Pod its controller creates, with the pod's own opt-in label.
func asPod(template map[string]any) map[string]any {
	b, _ := json.Marshal(template)
	tpl, _ := manifest.DecodeJSONObject(b)
	meta, _ := tpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[admission.InjectLabel] = admission.Enabled
	meta["labels"] = labels
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tpl["spec"]}
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
