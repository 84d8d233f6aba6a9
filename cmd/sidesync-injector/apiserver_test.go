//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The webhook on the real kube-apiserver v1.37.2 (internal/testing/kubetest): the injector runs
// in-process on loopback TLS, and its configurations are those internal/cluster/admission writes (the
// chart's are generated from them), with the Service replaced by the injector's URL. No kubelet
// runs: pods stay Pending, which is all admission needs.

const ownNamespace = "sidesync-system"

// webhookCluster starts a cluster and an injector registered with it.
func webhookCluster(t *testing.T, args ...string) (*kubetest.Cluster, *injector, *testCA) {
	t.Helper()
	c := kubetest.Start(t)
	in, ca := webhookOn(t, c, args...)
	return c, in, ca
}

// webhookOn starts an injector registered with c, as admin, in ownNamespace (which it creates).
func webhookOn(t *testing.T, c *kubetest.Cluster, args ...string) (*injector, *testCA) {
	t.Helper()
	ca := newTestCA(t)
	kc := c.Kubeconfig(t, c.AdminToken)
	c.CreateNamespace(t, ownNamespace)
	in := startInjector(t, ca, append([]string{"--kubeconfig=" + kc, "--namespace=" + ownNamespace}, args...)...)
	register(t, c, in.webhook, ca.PEM)
	return in, ca
}

// register creates the two webhook configurations for the injector at addr, as the chart
// renders them for the cluster's version (Helm v4's engine, internal/cluster/chart) with your own certificate, each webhook's
// service rewritten to the injector's URL on loopback.
func register(t *testing.T, c *kubetest.Cluster, addr string, caPEM []byte) {
	t.Helper()
	objs, err := chart.Injector.RenderOn(c.Version, map[string]any{
		"tls": map[string]any{"source": chart.CertsSecret, "secretName": "sidesync-injector-tls", "caBundle": string(caPEM)}}, ownNamespace)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	for _, kc := range []struct{ kind, name, path string }{
		{"MutatingWebhookConfiguration", admission.MutatingConfigName, "mutatingwebhookconfigurations"},
		{"ValidatingWebhookConfiguration", admission.ValidatingConfigName, "validatingwebhookconfigurations"},
	} {
		cfg := chart.Find(objs, kc.kind, kc.name)
		if cfg == nil {
			t.Fatalf("the chart renders no %s %s", kc.kind, kc.name)
		}
		for _, w := range cfg["webhooks"].([]any) {
			cc := w.(map[string]any)["clientConfig"].(map[string]any)
			svc := cc["service"].(map[string]any)
			if svc["namespace"] != ownNamespace {
				t.Fatalf("%s: service %v, not in the release's namespace", kc.name, svc)
			}
			delete(cc, "service")
			cc["url"] = "https://" + addr + svc["path"].(string)
		}
		c.Create(t, "/apis/admissionregistration.k8s.io/v1/"+kc.path, cfg)
	}
	// The API server picks configurations up from a watch: wait until a dry-run pod comes back
	// wrapped.
	c.CreateNamespaceLabelled(t, "probe", map[string]string{admission.InjectLabel: admission.Enabled})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := c.Send(t, "POST", "/api/v1/namespaces/probe/pods?dryRun=All", pod("probe", []string{"/app"}, nil, nil))
		if r.Code == 201 && strings.Contains(string(r.Body), contract.InjectedAnnotation) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook is not called 2 minutes after its registration: %d %s", r.Code, r.Body)
		}
		time.Sleep(100 * time.Millisecond) // polling the API server's watch, bounded by deadline
	}
}

// pod is a Pod with one app container (command nil: none) and an Istio sidecar.
func pod(name string, command []string, labels, annotations map[string]string) map[string]any {
	app := map[string]any{"name": "app", "image": "example.com/app:1"}
	if command != nil {
		app["command"] = command
	}
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": map[string]any{
		"restartPolicy": "Never",
		"containers": []any{app, map[string]any{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
			"args": []any{"proxy", "sidecar"}}},
	}}
}

func annotationsOf(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

// TestWebhookOnAPIServer creates pods in selected and other namespaces and reads what the API
// server stored.
func TestWebhookOnAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own
	c, in, _ := webhookCluster(t)
	sel := map[string]string{admission.InjectLabel: admission.Enabled}
	c.CreateNamespaceLabelled(t, "selected", sel)
	c.CreateNamespace(t, "plain")
	c.CreateNamespace(t, "unlabelled")

	t.Run("namespace-wide: the stored pod is Apply's", func(t *testing.T) {
		in, err := manifest.DecodeJSONObject([]byte(mustJSONT(t, pod("wrapped", []string{"/app", "--n", "1"}, nil, nil))))
		if err != nil {
			t.Fatal(err)
		}
		stored := c.CreatePod(t, "selected", in)
		// The same pod through Apply, created where nothing selects it: the API server's defaults
		// apply to both alike.
		out, r, err := inject.Apply(in, manifest.TypeMeta{}, inject.Options{Version: testVersion, Image: testImage}, nil)
		if err != nil || !r.Changed {
			t.Fatalf("Apply: %v %+v", err, r)
		}
		out["metadata"].(map[string]any)["name"] = "wrapped"
		want := c.CreatePod(t, "plain", out)
		// The ServiceAccount admission plugin, which runs before webhooks, adds the token's
		// volume and mounts: before sidesync's in the webhook's pod, after them (and into the
		// install container too) in Apply's. Both are compared without it.
		if g, w := mustJSONT(t, withoutToken(stored)["spec"]), mustJSONT(t, withoutToken(want)["spec"]); g != w {
			t.Errorf("stored spec differs from Apply's:\n got %s\nwant %s", g, w)
		}
		// The webhook records its choice of native sidecars (--native auto, and no nodes here);
		// Apply has no such choice to record.
		ann := annotationsOf(stored)
		if got, prefix := ann[admission.NativeAnnotation], "classic (auto): no node can run the pod"; !strings.HasPrefix(fmt.Sprint(got), prefix) {
			t.Errorf("%s: %v, want %q...", admission.NativeAnnotation, got, prefix)
		}
		delete(ann, admission.NativeAnnotation)
		if g, w := mustJSONT(t, ann), mustJSONT(t, annotationsOf(want)); g != w {
			t.Errorf("stored annotations differ from Apply's:\n got %s\nwant %s", g, w)
		}
	})
	t.Run("not selected", func(t *testing.T) {
		c.CreateServiceAccount(t, "kube-system", "default")
		for _, tc := range []struct {
			ns          string
			labels, ann map[string]string
		}{
			{"unlabelled", nil, nil},
			{"selected", map[string]string{admission.InjectLabel: admission.Disabled}, nil},
			{"selected", nil, map[string]string{admission.InjectLabel: admission.OptOutAnnotationValue}},
			{ownNamespace, sel, nil},
			{"kube-system", sel, nil},
		} {
			stored := c.CreatePod(t, tc.ns, pod(fmt.Sprintf("left-%d", time.Now().UnixNano()), []string{"/app"}, tc.labels, tc.ann))
			if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; ok {
				t.Errorf("namespace %s, labels %v, annotations %v: the pod was wrapped", tc.ns, tc.labels, tc.ann)
			}
		}
	})
	t.Run("command-less, namespace-wide: admitted unwrapped, annotated", func(t *testing.T) {
		stored := c.CreatePod(t, "selected", pod("no-command", nil, nil, nil))
		ann := annotationsOf(stored)
		if _, ok := ann[contract.InjectedAnnotation]; ok {
			t.Fatal("wrapped without a command")
		}
		if s, _ := ann[admission.SkippedAnnotation].(string); !strings.HasPrefix(s, admission.ReasonNoCommand+": ") {
			t.Errorf("skipped annotation %q", s)
		}
	})
	t.Run("command-less, opted in itself: denied", func(t *testing.T) {
		r := c.Send(t, "POST", "/api/v1/namespaces/unlabelled/pods", pod("must-wrap", nil, sel, nil))
		if r.Code != 403 || !strings.Contains(string(r.Body), "asks to be wrapped") {
			t.Errorf("got %d %s, want 403 with the reason", r.Code, r.Body)
		}
	})
	t.Run("opted in itself, with a command: wrapped in any namespace", func(t *testing.T) {
		stored := c.CreatePod(t, "unlabelled", pod("explicit", []string{"/app"}, sel, nil))
		if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
			t.Error("not wrapped")
		}
	})
	t.Run("dry run: the same answer, no Event", func(t *testing.T) {
		r := c.Send(t, "POST", "/api/v1/namespaces/selected/pods?dryRun=All", pod("dry", []string{"/app"}, nil, nil))
		if r.Code != 201 || !strings.Contains(string(r.Body), contract.InjectedAnnotation) {
			t.Errorf("dry run: %d %s", r.Code, r.Body)
		}
		var got map[string]any
		if c.Do(t, "GET", "/api/v1/namespaces/selected/pods/dry", nil, &got) != 404 {
			t.Error("the dry-run pod was stored")
		}
	})
	t.Run("restartPolicy Always: only by the pod's own opt-in", func(t *testing.T) {
		p := pod("forever", []string{"/app"}, nil, nil)
		delete(p["spec"].(map[string]any), "restartPolicy") // defaulted to Always
		if _, ok := annotationsOf(c.CreatePod(t, "selected", p))[contract.InjectedAnnotation]; ok {
			t.Error("a pod that never runs to completion was wrapped namespace-wide")
		}
		p = pod("forever-explicit", []string{"/app"}, sel, nil)
		p["spec"].(map[string]any)["restartPolicy"] = "Always"
		if _, ok := annotationsOf(c.CreatePod(t, "selected", p))[contract.InjectedAnnotation]; !ok {
			t.Error("a pod that opted in itself was not wrapped")
		}
	})
	t.Run("warnings at Job creation", func(t *testing.T) {
		c.CreateNamespaceLabelled(t, "istio-only", map[string]string{"istio-injection": "enabled"})
		c.CreateNamespaceLabelled(t, "istio-and-sidesync", map[string]string{"istio-injection": "enabled", admission.InjectLabel: admission.Enabled})
		job := func(name string, command []string, ann map[string]string) map[string]any {
			p := pod(name, command, nil, ann)
			spec := p["spec"].(map[string]any)
			spec["containers"] = spec["containers"].([]any)[:1]
			return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name},
				"spec": map[string]any{"template": map[string]any{"metadata": p["metadata"], "spec": spec}}}
		}
		has := func(ws []string, s string) bool {
			return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, s) })
		}
		for _, tc := range []struct {
			ns, name string
			command  []string
			ann      map[string]string
			want     string // "" for no warning
		}{
			{"plain", "announced", []string{"/app"}, map[string]string{"sidecar.istio.io/inject": "true"}, "sidecar-never-quits"},
			{"selected", "announced", []string{"/app"}, map[string]string{"sidecar.istio.io/inject": "true"}, ""},
			{"istio-only", "plain-job", []string{"/app"}, nil, "sidecar-never-quits"},
			{"istio-only", "opted-out-of-istio", []string{"/app"}, map[string]string{"sidecar.istio.io/inject": "false"}, ""},
			{"istio-and-sidesync", "plain-job", []string{"/app"}, nil, ""},
			{"istio-and-sidesync", "no-command", nil, nil, "will not be wrapped"},
			{"plain", "nothing", []string{"/app"}, nil, ""},
		} {
			r := c.Send(t, "POST", "/apis/batch/v1/namespaces/"+tc.ns+"/jobs", job(tc.name, tc.command, tc.ann))
			if r.Code != 201 {
				t.Fatalf("%s/%s: %d %s", tc.ns, tc.name, r.Code, r.Body)
			}
			if tc.want == "" && len(r.Warnings) > 0 || tc.want != "" && !has(r.Warnings, tc.want) {
				t.Errorf("%s/%s: warnings %q, want %q", tc.ns, tc.name, r.Warnings, tc.want)
			}
			for _, w := range r.Warnings {
				if !strings.HasPrefix(w, "sidesync: ") || len(w) > admission.MaxWarning || !strings.Contains(w, admission.DocsAnchor) {
					t.Errorf("warning %q: not `sidesync: `, over %d bytes or without the docs anchor", w, admission.MaxWarning)
				}
			}
			t.Logf("%s/%s: %q", tc.ns, tc.name, r.Warnings)
		}
	})
	t.Run("a skipped pod's owner gets an Event; a dry run none", func(t *testing.T) {
		owner := func(name string) map[string]any {
			j := c.Create(t, "/apis/batch/v1/namespaces/selected/jobs", map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"metadata": map[string]any{"name": name}, "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never", "containers": []any{map[string]any{"name": "app", "image": "example.com/app:1"}}}}}})
			uid := j["metadata"].(map[string]any)["uid"]
			p := pod(name+"-pod", nil, nil, nil)
			p["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"name": name, "uid": uid, "controller": true}}
			return p
		}
		if r := c.Send(t, "POST", "/api/v1/namespaces/selected/pods?dryRun=All", owner("dry-owner")); r.Code != 201 {
			t.Fatalf("dry run: %d %s", r.Code, r.Body)
		}
		c.CreatePod(t, "selected", owner("real-owner"))
		events := func(name string) []any {
			var list map[string]any
			c.Do(t, "GET", "/api/v1/namespaces/selected/events?fieldSelector=involvedObject.name%3D"+name, nil, &list)
			items, _ := list["items"].([]any)
			return items
		}
		deadline := time.Now().Add(time.Minute)
		for len(events("real-owner")) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no Event on the skipped pod's Job after a minute")
			}
			time.Sleep(50 * time.Millisecond) // polling the API server, bounded by deadline
		}
		ev := events("real-owner")[0].(map[string]any)
		if ev["reason"] != "SidesyncSkipped" || !strings.Contains(ev["message"].(string), "has no command") {
			t.Errorf("event %v", ev)
		}
		// The Events are written in order by one queue: the dry run's would be there already.
		if n := len(events("dry-owner")); n != 0 {
			t.Errorf("%d Events for a dry run", n)
		}
	})
	if t.Failed() {
		t.Logf("injector log:\n%s", in.stderr)
	}
}

// TestWebhookDown: with the injector stopped, a pod that opted in itself is refused (Fail) and a
// pod of a selected namespace is created unwrapped (Ignore).
func TestWebhookDown(t *testing.T) {
	t.Parallel() // a cluster of its own
	c, in, _ := webhookCluster(t)
	c.CreateNamespaceLabelled(t, "selected", map[string]string{admission.InjectLabel: admission.Enabled})
	in.stop(t)
	r := c.Send(t, "POST", "/api/v1/namespaces/selected/pods", pod("explicit", []string{"/app"}, map[string]string{admission.InjectLabel: admission.Enabled}, nil))
	if r.Code/100 == 2 {
		t.Errorf("an opted-in pod was created with the webhook down: %d", r.Code)
	}
	stored := c.CreatePod(t, "selected", pod("namespace-wide", []string{"/app"}, nil, nil))
	if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; ok {
		t.Error("wrapped with the webhook down?")
	}
}

// TestCertificateSwap renews the serving certificate several times while pods are created
// without pause: no admission fails, and the injector serves the new certificate.
func TestCertificateSwap(t *testing.T) {
	t.Parallel() // a cluster of its own
	c, in, ca := webhookCluster(t)
	c.CreateNamespaceLabelled(t, "selected", map[string]string{admission.InjectLabel: admission.Enabled})
	adm := admitWithoutPause(t, c, 4, "the swap")
	for range 5 {
		before := adm.done.Load()
		ca.issue(t)
		for adm.done.Load() < before+20 { // the swap is seen under traffic: wait for 20 admissions after it
			time.Sleep(10 * time.Millisecond)
		}
	}
	adm.stop()
	t.Logf("%d admissions across 5 certificate swaps, %d failed", adm.done.Load(), adm.failed.Load())
	if n := certSerial(t, in.webhook); n != ca.n {
		t.Errorf("the injector serves certificate %d, want the last issued, %d", n, ca.n)
	}
}

// admissions are pods created in the namespace "selected" without pause by several workers,
// each checked to come back wrapped, until stop.
type admissions struct {
	failed, done atomic.Int64
	stop         func()
}

// admitWithoutPause starts workers that create pods in "selected" (dry run) until stop; an
// admission that fails or comes back unwrapped is an error of t that names during.
func admitWithoutPause(t *testing.T, c *kubetest.Cluster, workers int, during string) *admissions {
	a := &admissions{}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				r := c.Send(t, "POST", "/api/v1/namespaces/selected/pods?dryRun=All", pod(fmt.Sprintf("p-%d-%d", w, i), []string{"/app"}, nil, nil))
				if r.Code != 201 || !strings.Contains(string(r.Body), contract.InjectedAnnotation) {
					a.failed.Add(1)
					t.Errorf("admission during %s: %d %.300s", during, r.Code, r.Body)
				}
				a.done.Add(1)
			}
		})
	}
	a.stop = func() { close(quit); wg.Wait() }
	return a
}

// withoutToken drops the service account token's volume and mounts (kube-api-access-*).
func withoutToken(pod map[string]any) map[string]any {
	isToken := func(e any) bool {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		return strings.HasPrefix(n, "kube-api-access-")
	}
	spec := pod["spec"].(map[string]any)
	spec["volumes"] = slices.DeleteFunc(spec["volumes"].([]any), isToken)
	for _, key := range []string{"containers", "initContainers"} {
		l, _ := spec[key].([]any)
		for _, c := range l {
			c := c.(map[string]any)
			if mounts, ok := c["volumeMounts"].([]any); ok {
				c["volumeMounts"] = slices.DeleteFunc(mounts, isToken)
			}
		}
	}
	return pod
}

// certSerial is the serial number of the certificate served at addr.
func certSerial(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := tlsDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

func mustJSONT(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
