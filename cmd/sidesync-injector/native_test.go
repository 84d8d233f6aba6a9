//go:build linux

package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// TestNativeOnAPIServer runs the injector with --native auto under the chart's own RBAC
// (its ServiceAccount, ClusterRole and binding, created for real) against a real API server,
// and checks on one API server:
//
//   - nodes: the choice follows the Node objects (none, a new kubelet, an old one; a pod's
//     nodeSelector and nodeName), and a reader without the RBAC gets "forbidden", not nodes;
//   - order: what the meshes' webhooks see of the annotation sidesync's webhook adds, with
//     sidesync's configuration under its name and under one that sorts before the meshes'
//     (docs/KUBERNETES.md §9).
func TestNativeOnAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := kubetest.Start(t)
	ca := newTestCA(t)
	c.CreateNamespace(t, ownNamespace)
	objs, err := chart.Render(map[string]any{
		"tls": map[string]any{"source": chart.CertsSecret, "secretName": "sidesync-injector-tls", "caBundle": string(ca.PEM)}}, ownNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		o := chart.Find(objs, kind, chart.ReleaseName)
		path, _ := kubetest.CollectionPath(o, ownNamespace)
		c.Create(t, path, o)
	}
	kc := c.Kubeconfig(t, c.ServiceAccountToken(t, ownNamespace, chart.ReleaseName))
	in := startInjector(t, ca, "--kubeconfig="+kc, "--namespace="+ownNamespace, "--native=auto")
	recorders := startRecorders(t, c, ca)
	registerOrdered(t, c, objs, in.webhook)
	c.CreateNamespaceLabelled(t, "apps", map[string]string{admission.InjectLabel: admission.Enabled})

	t.Run("nodes", func(t *testing.T) { testNodes(t, c, in) })
	t.Run("order", func(t *testing.T) { testOrder(t, c, in, recorders) })
}

// The kubelets either side of kubeversion.NativeSidecars.
var (
	newKubelet = "v" + kubeversion.NativeSidecars.Since.String() + ".0"
	oldKubelet = "v" + kubeversion.Version{Minor: kubeversion.NativeSidecars.Since.Minor - 1}.String() + ".7"
)

func testNodes(t *testing.T, c *kubetest.Cluster, in *injector) {
	// The cache follows the watch: each step waits until a dry run shows the choice, then
	// creates the pod for real.
	choice := func(t *testing.T, name string, spec map[string]any, want string) {
		t.Helper()
		p := pod(name, []string{"/app"}, nil, nil)
		for k, v := range spec {
			p["spec"].(map[string]any)[k] = v
		}
		waitDryRun(t, c, "apps", p, func(ann map[string]any) bool { return strings.HasPrefix(str(ann[admission.NativeAnnotation]), want) })
		got := str(annotationsOf(c.CreatePod(t, "apps", p))[admission.NativeAnnotation])
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: %s %q, want %q...\ninjector log:\n%s", name, admission.NativeAnnotation, got, want, in.stderr)
		}
		t.Logf("%s: %s", name, got)
	}
	choice(t, "no-nodes", nil, "classic (auto): no node can run the pod (any node, of 0)")
	createNode(t, c, "new-1", newKubelet, map[string]string{"pool": "new"})
	choice(t, "one-new-node", nil, "native (auto): 1 node can run the pod (any node), with kubelets of "+kubeversion.NativeSidecars.Since.String())
	createNode(t, c, "old-1", oldKubelet, map[string]string{"pool": "old"})
	choice(t, "an-old-node", nil, `classic (auto): node old-1 (kubelet "`+oldKubelet+`"), of 2 nodes that can run the pod (any node)`)
	choice(t, "selected-new", map[string]any{"nodeSelector": map[string]any{"pool": "new"}}, "native (auto): 1 node can run the pod (nodeSelector)")
	choice(t, "named-old", map[string]any{"nodeName": "old-1"}, `classic (auto): node old-1 (kubelet "`+oldKubelet+`"), of 1 node that can run the pod (nodeName old-1)`)

	t.Run("without the RBAC: forbidden, settled", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig(t, c.Token(kubetest.Nobody)))
		if err != nil {
			t.Fatal(err)
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		log := &syncBuffer{}
		nc, err := newNodeCache(t.Context(), client, slog.New(slog.NewTextHandler(log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			_, err := nc.nodes()
			if err != nil && strings.Contains(err.Error(), "forbidden") && strings.Contains(log.String(), "nodes unreadable") {
				t.Logf("nodes(): %v", err)
				if !nc.settled() {
					t.Error("not settled after a failed list: /readyz would wait for ever without the RBAC")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nodes() %v a minute on; log:\n%s", err, log)
			}
			time.Sleep(20 * time.Millisecond) // the reflector's first list, bounded by deadline
		}
	})
}

func createNode(t *testing.T, c *kubetest.Cluster, name, kubelet string, labels map[string]string) {
	t.Helper()
	n := c.Create(t, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": labels},
		"status":   map[string]any{"nodeInfo": map[string]any{"kubeletVersion": kubelet}}})
	if got := n["status"].(map[string]any)["nodeInfo"].(map[string]any)["kubeletVersion"]; got != kubelet {
		t.Fatalf("node %s stored with kubelet %v", name, got)
	}
}

// The order test. Two stand-ins configured as the meshes' charts configure their webhooks, by
// the same configuration names: Istio's istio-sidecar-injector, reinvocationPolicy Never
// (manifests/charts/istio-control/istio-discovery, values sidecarInjectorWebhook.reinvocationPolicy),
// adding its proxy as a classic container; Linkerd's linkerd-proxy-injector-webhook-config,
// which sets no reinvocationPolicy (Never), adding its proxy as a native sidecar. A third,
// istio-sidecar-injector-ifneeded, changes nothing and is configured IfNeeded, as Istio's
// chart lets one choose. Each records, per pod and call, whether the pod carries
// admission.NativeAnnotation, which sidesync's webhook writes in the same patch as the rest.

const firstLabel = "order.test.sidesync.io/first" // the pod goes to sidesync's configuration that sorts first

type recorder struct {
	config, path, policy string
	mutate               func(pod map[string]any) []op
	mu                   sync.Mutex
	saw                  map[string][]bool // by pod name, one per call
}

func (r *recorder) calls(pod string) []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.saw[pod]...)
}

func startRecorders(t *testing.T, c *kubetest.Cluster, ca *testCA) []*recorder {
	t.Helper()
	recs := []*recorder{
		{config: "istio-sidecar-injector", path: "/istio", policy: "Never", mutate: addClassic},
		{config: "linkerd-proxy-injector-webhook-config", path: "/linkerd", mutate: addNative},
		{config: "istio-sidecar-injector-ifneeded", path: "/ifneeded", policy: "IfNeeded", mutate: func(map[string]any) []op { return nil }},
	}
	cert, err := tls.LoadX509KeyPair(ca.certFile(), ca.keyFile())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range recs {
		r.saw = map[string][]bool{}
		mux.HandleFunc(r.path, meshHandler(func(pod map[string]any) []op {
			meta, _ := pod["metadata"].(map[string]any)
			_, seen := annotationsOf(pod)[admission.NativeAnnotation]
			r.mu.Lock()
			r.saw[str(meta["name"])] = append(r.saw[str(meta["name"])], seen)
			r.mu.Unlock()
			return r.mutate(pod)
		}))
		hook := map[string]any{
			"name":                    strings.TrimPrefix(r.path, "/") + ".meshes.test.sidesync.io",
			"clientConfig":            map[string]any{"url": "https://" + l.Addr().String() + r.path, "caBundle": ca.PEM},
			"rules":                   []any{map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
			"objectSelector":          map[string]any{"matchLabels": map[string]any{meshLabel: "yes"}},
			"sideEffects":             "None",
			"failurePolicy":           "Fail",
			"admissionReviewVersions": []any{"v1"},
		}
		if r.policy != "" {
			hook["reinvocationPolicy"] = r.policy
		}
		c.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
			"metadata": map[string]any{"name": r.config}, "webhooks": []any{hook}})
	}
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return recs
}

// registerOrdered creates the chart's pod webhook configuration twice, at the injector's URL:
// under its own name for the pods without firstLabel, and under a name that sorts before the
// meshes' for the pods with it. Then it waits until a dry run of each way shows sidesync and
// every stand-in at work.
func registerOrdered(t *testing.T, c *kubetest.Cluster, objs []map[string]any, addr string) {
	t.Helper()
	for _, first := range []bool{false, true} {
		var cfg map[string]any
		b, _ := json.Marshal(chart.Find(objs, "MutatingWebhookConfiguration", admission.MutatingConfigName))
		json.Unmarshal(b, &cfg)
		op := "DoesNotExist"
		if first {
			cfg["metadata"].(map[string]any)["name"] = "0-" + admission.MutatingConfigName
			op = "Exists"
		}
		for _, w := range cfg["webhooks"].([]any) {
			w := w.(map[string]any)
			cc := w["clientConfig"].(map[string]any)
			path := cc["service"].(map[string]any)["path"].(string)
			delete(cc, "service")
			cc["url"] = "https://" + addr + path
			sel := w["objectSelector"].(map[string]any)
			exprs, _ := sel["matchExpressions"].([]any)
			sel["matchExpressions"] = append(exprs, map[string]any{"key": firstLabel, "operator": op})
		}
		c.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", cfg)
	}
	c.CreateNamespaceLabelled(t, "probe", map[string]string{admission.InjectLabel: admission.Enabled})
	for _, first := range []string{"no", "yes"} {
		labels := map[string]string{meshLabel: "yes"}
		if first == "yes" {
			labels[firstLabel] = "yes"
		}
		p := pod("probe-"+first, []string{"/app"}, labels, map[string]string{"team": "data"}) // the stand-ins add to the annotations
		spec := p["spec"].(map[string]any)
		spec["containers"] = spec["containers"].([]any)[:1] // the stand-ins add the proxies
		waitDryRun(t, c, "probe", p, func(ann map[string]any) bool {
			return ann[admission.NativeAnnotation] != nil && ann["sidecar.istio.io/status"] != nil && ann["linkerd.io/proxy-version"] != nil
		})
	}
}

func testOrder(t *testing.T, c *kubetest.Cluster, in *injector, recs []*recorder) {
	for _, tc := range []struct {
		name   string
		first  bool
		istio  []bool // what the stand-ins saw, call by call
		linker []bool
		ifNeed []bool
	}{
		// sidesync-injector sorts after istio-… and linkerd-…: they run first, once each, and
		// never see it; one configured IfNeeded is called again after sidesync's change.
		{"by its name, after the meshes", false, []bool{false}, []bool{false}, []bool{false, true}},
		// 0-sidesync-injector sorts first: the meshes see it; sidesync (IfNeeded) is called again
		// after their changes and records their sidecars.
		{"renamed to sort first", true, []bool{true}, []bool{true}, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("order-%v", tc.first)
			labels := map[string]string{meshLabel: "yes"}
			if tc.first {
				labels[firstLabel] = "yes"
			}
			p := pod(name, []string{"/app"}, labels, map[string]string{"team": "data"})
			spec := p["spec"].(map[string]any)
			spec["containers"] = spec["containers"].([]any)[:1] // the stand-ins add the proxies
			stored := c.CreatePod(t, "apps", p)
			for _, r := range []struct {
				rec  *recorder
				want []bool
			}{{recs[0], tc.istio}, {recs[1], tc.linker}, {recs[2], tc.ifNeed}} {
				if got := r.rec.calls(name); fmt.Sprint(got) != fmt.Sprint(r.want) {
					t.Errorf("%s (reinvocationPolicy %q) saw %s: %v, want %v", r.rec.config, r.rec.policy, admission.NativeAnnotation, got, r.want)
				}
			}
			ann := annotationsOf(stored)
			found := str(ann[contract.FoundAnnotation])
			if !strings.Contains(found, "istio") || !strings.Contains(found, "linkerd") || ann[admission.NativeAnnotation] == nil {
				t.Errorf("stored: found %q, native %v: want both meshes' sidecars recorded by sidesync's last call\ninjector log:\n%s", found, ann[admission.NativeAnnotation], in.stderr)
			}
			t.Logf("istio %v, linkerd %v, ifneeded %v; found %q", recs[0].calls(name), recs[1].calls(name), recs[2].calls(name), found)
		})
	}
}

// waitDryRun creates p as a dry run until the annotations of what comes back satisfy ok: the
// API server and the injector take configurations and nodes from watches.
func waitDryRun(t *testing.T, c *kubetest.Cluster, ns string, p map[string]any, ok func(map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All", p)
		if r.Code == 201 {
			got, err := manifest.DecodeJSONObject(r.Body)
			if err == nil && ok(annotationsOf(got)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a dry run 2 minutes on: %d %s", r.Code, r.Body)
		}
		time.Sleep(100 * time.Millisecond) // polling the API server's and the injector's watches, bounded by deadline
	}
}

func str(v any) string { s, _ := v.(string); return s }
