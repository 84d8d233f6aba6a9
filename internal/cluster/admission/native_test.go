package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

func node(name, kubelet string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet}}}
}

// The kubelets either side of kubeversion.NativeSidecars: derived, so that the test follows it.
var (
	newKubelet = "v" + kubeversion.NativeSidecars.Since.String() + ".3"
	oldKubelet = "v" + kubeversion.Version{Minor: kubeversion.NativeSidecars.Since.Minor - 1}.String() + ".9-eks-1"
)

// cluster: two new nodes in zone a, one old in zone b, one new in zone b.
func testNodes() []*corev1.Node {
	return []*corev1.Node{
		node("new-a1", newKubelet, map[string]string{"zone": "a", "pool": "batch"}),
		node("new-a2", newKubelet, map[string]string{"zone": "a"}),
		node("old-b1", oldKubelet, map[string]string{"zone": "b", "pool": "batch"}),
		node("new-b2", newKubelet, map[string]string{"zone": "b"}),
	}
}

func placedPod(t *testing.T, spec string) map[string]any {
	t.Helper()
	obj, err := manifest.DecodeJSONObject([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":` + spec + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestNativeChoice: each way the choice goes, with the reason and the node it names.
func TestNativeChoice(t *testing.T) {
	all := func() ([]*corev1.Node, error) { return testNodes(), nil }
	tests := []struct {
		name   string
		mode   inject.NativeMode
		nodes  Nodes
		spec   string
		native bool
		reason string
		why    string // a substring of Why
	}{
		{"always", inject.NativeAlways, nil, `{}`, true, NativeGiven, "--native always"},
		{"never", inject.NativeNever, all, `{}`, false, NativeGiven, "--native never"},
		{"any node, one old", inject.NativeAuto, all, `{}`, false, NativeOldKubelet, `node old-b1 (kubelet "` + oldKubelet + `"), of 4 nodes that can run the pod (any node)`},
		{"any node, all new", inject.NativeAuto, func() ([]*corev1.Node, error) { return testNodes()[:2], nil }, `{}`, true, NativeKubelets, "2 nodes can run the pod (any node), with kubelets of"},
		{"no nodes", inject.NativeAuto, func() ([]*corev1.Node, error) { return nil, nil }, `{}`, false, NativeNoNode, "no node can run the pod (any node, of 0)"},
		{"nodeName new", inject.NativeAuto, all, `{"nodeName":"new-b2"}`, true, NativeKubelets, "1 node can run the pod (nodeName new-b2)"},
		{"nodeName old", inject.NativeAuto, all, `{"nodeName":"old-b1"}`, false, NativeOldKubelet, "node old-b1"},
		{"nodeName unknown", inject.NativeAuto, all, `{"nodeName":"gone"}`, false, NativeNoNode, "nodeName gone, of 4"},
		{"nodeName wins over nodeSelector", inject.NativeAuto, all, `{"nodeName":"new-a1","nodeSelector":{"zone":"b"}}`, true, NativeKubelets, "nodeName new-a1"},
		{"nodeSelector: new nodes only", inject.NativeAuto, all, `{"nodeSelector":{"zone":"a"}}`, true, NativeKubelets, "2 nodes can run the pod (nodeSelector)"},
		{"nodeSelector: an old node among them", inject.NativeAuto, all, `{"nodeSelector":{"pool":"batch"}}`, false, NativeOldKubelet, "of 2 nodes that can run the pod (nodeSelector)"},
		{"nodeSelector: none", inject.NativeAuto, all, `{"nodeSelector":{"zone":"c"}}`, false, NativeNoNode, "(nodeSelector, of 4)"},
		{"required affinity: new nodes only", inject.NativeAuto, all,
			`{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}`,
			true, NativeKubelets, "2 nodes can run the pod (required node affinity)"},
		{"required affinity: terms ORed, one reaches the old node", inject.NativeAuto, all,
			`{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["old-b1"]}]}]}}}}`,
			false, NativeOldKubelet, "of 3 nodes that can run the pod (required node affinity)"},
		{"nodeSelector and affinity together", inject.NativeAuto, all,
			`{"nodeSelector":{"zone":"b"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"DoesNotExist"}]}]}}}}`,
			true, NativeKubelets, "1 node can run the pod (nodeSelector and required node affinity)"},
		{"preferred affinity only: any node", inject.NativeAuto, all,
			`{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}}]}}}`,
			false, NativeOldKubelet, "(any node)"},
		{"a kubelet version unreadable", inject.NativeAuto, func() ([]*corev1.Node, error) {
			return []*corev1.Node{node("new", newKubelet, nil), node("odd", "", nil)}, nil
		}, `{}`, false, NativeOldKubelet, `node odd (kubelet "")`},
		{"two old nodes", inject.NativeAuto, func() ([]*corev1.Node, error) {
			return append(testNodes(), node("old-c1", oldKubelet, nil)), nil
		}, `{}`, false, NativeOldKubelet, "node old-b1 (kubelet \"" + oldKubelet + "\") and 1 more, of 5 nodes"},
		{"nodes unreadable", inject.NativeAuto, func() ([]*corev1.Node, error) {
			return nil, errors.New("the node cache has not synced: nodes is forbidden")
		}, `{}`, false, NativeUnreadable, "the nodes are unreadable: the node cache has not synced: nodes is forbidden"},
		{"placement unreadable", inject.NativeAuto, all, `{"nodeSelector":{"zone":1}}`, false, NativeUnreadable, "the pod's placement is unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &NativeChooser{Mode: tt.mode, Nodes: tt.nodes}
			got := c.Choose(placedPod(t, tt.spec))
			if got.Native != tt.native || got.Reason != tt.reason || !strings.Contains(got.Why, tt.why) || got.Mode != tt.mode {
				t.Errorf("got %+v\nwant native %v, reason %s, mode %s, why with %q", got, tt.native, tt.reason, tt.mode, tt.why)
			}
			way := "classic"
			if tt.native {
				way = "native"
			}
			if a := got.Annotation(); !strings.HasPrefix(a, way+" ("+string(tt.mode)+"): ") || !strings.HasSuffix(a, got.Why) {
				t.Errorf("annotation %q", a)
			}
		})
	}
}

// TestNativeAnnotation: the webhook records its choice on the pods it wraps and on those it
// skips, once, whether the pod had annotations or not; without a chooser it records nothing.
func TestNativeAnnotation(t *testing.T) {
	old := &NativeChooser{Mode: inject.NativeAuto, Nodes: func() ([]*corev1.Node, error) { return testNodes(), nil }}
	noCommand := strings.Replace(withCommand, `,"command":["/app"]`, ``, 1)
	annotated := strings.Replace(noCommand, `"name":"p"`, `"name":"p","annotations":{"team":"data"}`, 1)
	// Its proxy made native and no app wrapped: inject writes no annotation of its own.
	converted := strings.Replace(noCommand, `}]}}`, `},{"name":"cloud-sql-proxy","image":"gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.21.0","args":["--health-check","--quitquitquit","p:r:i"]}]}}`, 1)
	always := &NativeChooser{Mode: inject.NativeAlways}
	for _, tc := range []struct {
		name    string
		chooser *NativeChooser
		pod     string
		outcome Outcome
		want    string // the annotation's prefix; "" for none
	}{
		{"wrapped", old, withCommand, Wrapped, "classic (auto): node old-b1"},
		{"wrapped, always", always, withCommand, Wrapped, "native (always): --native always"},
		{"converted, no annotations", always, converted, Wrapped, "native (always): --native always"},
		{"skipped, no annotations", old, noCommand, Skipped, "classic (auto): "},
		{"skipped, annotations", old, annotated, Skipped, "classic (auto): "},
		{"no chooser", nil, withCommand, Wrapped, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Mutator{Inject: testInject, Native: tc.chooser, Namespace: "sidesync-system"}
			res := m.Mutate(context.Background(), podReview(t, "apps", tc.pod))
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Message, tc.outcome)
			}
			pod := applyPatch(t, tc.pod, res.Response.Patch)
			got, ok := annotationsOfPod(pod)[NativeAnnotation]
			if tc.want == "" {
				if ok || res.Native != nil {
					t.Errorf("recorded %q without a chooser", got)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) || res.Native == nil || got != res.Native.Annotation() {
				t.Errorf("annotation %q, want %q...; result's choice %+v", got, tc.want, res.Native)
			}
			if tc.pod == converted {
				return // called again, it finds every sidecar native and records that as skipped
			}
			// Called again on the patched pod (a reinvocation): nothing more to write.
			again := m.Mutate(context.Background(), podReview(t, "apps", pod))
			if len(again.Response.Patch) > 0 {
				t.Errorf("a second call patches again: %s", again.Response.Patch)
			}
		})
	}
}

func applyPatch(t *testing.T, doc string, patch []byte) string {
	t.Helper()
	if len(patch) == 0 {
		return doc
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply([]byte(doc))
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	return string(out)
}

func annotationsOfPod(doc string) map[string]string {
	var p struct {
		Metadata struct{ Annotations map[string]string }
	}
	json.Unmarshal([]byte(doc), &p)
	return p.Metadata.Annotations
}

// TestServerCountsNativeChoices: each choice is counted by way and reason, and one that fell back
// to classic because the nodes were unreadable is logged as a warning with the choice.
func TestServerCountsNativeChoices(t *testing.T) {
	var log bytes.Buffer
	nodes := func() ([]*corev1.Node, error) { return nil, errors.New("the node cache has not synced yet") }
	s := &Server{Mutator: &Mutator{Inject: testInject, Native: &NativeChooser{Mode: inject.NativeAuto, Nodes: nodes}},
		Metrics: NewMetrics(prometheus.NewRegistry()), Log: slog.New(slog.NewTextHandler(&log, nil))}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func() {
		r, err := http.Post(srv.URL+MutatePath, "application/json", bytes.NewReader(reviewBody(t, podReview(t, "apps", withCommand))))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	post()
	s.Mutator.Native.Mode = inject.NativeAlways
	post()
	for _, tc := range []struct {
		way, reason string
		want        float64
	}{{"classic", NativeUnreadable, 1}, {"native", NativeGiven, 1}, {"native", NativeKubelets, 0}} {
		if n := testutil.ToFloat64(s.Metrics.Native.WithLabelValues(tc.way, tc.reason)); n != tc.want {
			t.Errorf("%s/%s counted %v, want %v", tc.way, tc.reason, n, tc.want)
		}
	}
	if lines := strings.Split(strings.TrimSpace(log.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") ||
		!strings.Contains(lines[0], `native="classic (auto): the nodes are unreadable: the node cache has not synced yet"`) {
		t.Errorf("log: want one warning with the choice, got\n%s", log.String())
	}
}

// BenchmarkNativeChoice: the choice for a pod among 5,000 nodes, with no placement and with a
// nodeSelector, as every admission with --native auto makes it.
func BenchmarkNativeChoice(b *testing.B) {
	nodes := make([]*corev1.Node, 5000)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("n%d", i), newKubelet, map[string]string{"zone": fmt.Sprint(i % 3), "pool": "batch"})
	}
	c := &NativeChooser{Mode: inject.NativeAuto, Nodes: func() ([]*corev1.Node, error) { return nodes, nil }}
	for _, tc := range []struct{ name, spec string }{{"any-node", `{}`}, {"nodeSelector", `{"nodeSelector":{"zone":"1"}}`}} {
		b.Run(tc.name, func(b *testing.B) {
			obj, err := manifest.DecodeJSONObject([]byte(`{"spec":` + tc.spec + `}`))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if !c.Choose(obj).Native {
					b.Fatal("classic")
				}
			}
		})
	}
}
