//go:build linux

package main

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// Other webhooks around sidesync's, as a cluster has them: the API server calls mutating
// webhooks in the order of their configurations' names, and calls sidesync's again
// (reinvocationPolicy IfNeeded) when a later one changed the pod. Three stand-ins:
//
//   - "0-mesh-classic", before sidesync: adds Istio's proxy as a classic sidecar and its status
//     annotation;
//   - "zz-mesh-native", after: adds Linkerd's proxy as a native sidecar (an init container with
//     restartPolicy Always and a startup probe) and its version annotation;
//   - "zz-old-typed", after: decodes the pod's volumes into types older than the image volume
//     source and writes them back, which strips that source (issue: typed decoding drops fields
//     newer than the webhook).
//
// Whatever the order, the stored pod is what Apply makes of the pod the others made: wrapped,
// its volumes whole, the sidecars recorded.

const meshLabel = "meshes.test.sidesync.io/on"

// startMeshes serves the three stand-ins with the CA's current certificate and registers them.
func startMeshes(t *testing.T, c *kubetest.Cluster, ca *testCA) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(ca.certFile(), ca.keyFile())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/classic", meshHandler(addClassic))
	mux.HandleFunc("/native", meshHandler(addNative))
	mux.HandleFunc("/typed", meshHandler(stripVolumes))
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	for _, m := range []struct{ config, path string }{{"0-mesh-classic", "/classic"}, {"zz-mesh-native", "/native"}, {"zz-old-typed", "/typed"}} {
		c.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
			"metadata": map[string]any{"name": m.config},
			"webhooks": []any{map[string]any{
				"name":                    strings.TrimPrefix(m.path, "/") + ".meshes.test.sidesync.io",
				"clientConfig":            map[string]any{"url": "https://" + l.Addr().String() + m.path, "caBundle": ca.PEM},
				"rules":                   []any{map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
				"objectSelector":          map[string]any{"matchLabels": map[string]any{meshLabel: "yes"}},
				"sideEffects":             "None",
				"failurePolicy":           "Fail",
				"admissionReviewVersions": []any{"v1"},
			}},
		})
	}
}

type op = inject.Op

// meshHandler answers an AdmissionReview with the ops f makes of the pod.
func meshHandler(f func(pod map[string]any) []op) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID    string
				Object json.RawMessage
			}
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		pod, err := manifest.DecodeJSONObject(review.Request.Object)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		resp := map[string]any{"uid": review.Request.UID, "allowed": true}
		if ops := f(pod); len(ops) > 0 {
			p, _ := json.Marshal(ops)
			resp["patchType"], resp["patch"] = "JSONPatch", p
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}
}

func restricted() map[string]any {
	return map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
		"runAsNonRoot": true, "runAsUser": 1337, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
}

func limits() map[string]any {
	r := map[string]any{"cpu": "100m", "memory": "64Mi"}
	return map[string]any{"requests": r, "limits": r}
}

// addClassic adds Istio's proxy as a classic sidecar, once.
func addClassic(pod map[string]any) []op {
	spec := pod["spec"].(map[string]any)
	for _, c := range spec["containers"].([]any) {
		if c.(map[string]any)["name"] == "istio-proxy" {
			return nil
		}
	}
	return []op{
		{Op: "add", Path: "/spec/containers/-", Value: map[string]any{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
			"args": []any{"proxy", "sidecar"}, "securityContext": restricted(), "resources": limits()}},
		{Op: "add", Path: "/metadata/annotations/sidecar.istio.io~1status", Value: `{"initContainers":null,"containers":["istio-proxy"],"volumes":["istio-envoy"],"revision":"default"}`},
	}
}

// addNative adds Linkerd's proxy as a native sidecar with a startup probe, once, after the
// init containers there are.
func addNative(pod map[string]any) []op {
	spec := pod["spec"].(map[string]any)
	inits, _ := spec["initContainers"].([]any)
	for _, c := range inits {
		if c.(map[string]any)["name"] == "linkerd-proxy" {
			return nil
		}
	}
	proxy := map[string]any{"name": "linkerd-proxy", "image": "cr.l5d.io/linkerd/proxy:edge-26.5.2", "restartPolicy": "Always",
		"startupProbe":    map[string]any{"httpGet": map[string]any{"path": "/ready", "port": 4191}},
		"securityContext": restricted(), "resources": limits()}
	ops := []op{{Op: "add", Path: "/metadata/annotations/linkerd.io~1proxy-version", Value: "edge-26.5.2"}}
	if inits == nil {
		return append(ops, op{Op: "add", Path: "/spec/initContainers", Value: []any{proxy}})
	}
	return append(ops, op{Op: "add", Path: "/spec/initContainers/-", Value: proxy})
}

// stripVolumes writes the volumes back as a webhook built on types without the image volume
// source does: what it does not know is gone.
func stripVolumes(pod map[string]any) []op {
	vols, _ := pod["spec"].(map[string]any)["volumes"].([]any)
	var old []any
	changed := false
	for _, v := range vols {
		m := v.(map[string]any)
		kept := map[string]any{}
		for k, e := range m {
			if k == "image" {
				changed = true
				continue
			}
			kept[k] = e
		}
		old = append(old, kept)
	}
	if !changed {
		return nil
	}
	return []op{{Op: "replace", Path: "/spec/volumes", Value: old}}
}

// TestOtherWebhooks creates, with either delivery, a pod the three stand-ins change before and
// after sidesync, in a namespace that enforces Pod Security "restricted" and has a
// ResourceQuota that requires limits, and checks the stored pod.
func TestOtherWebhooks(t *testing.T) {
	for _, d := range []inject.Delivery{inject.InitCopy, inject.ImageVolume} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			c, in, ca := webhookCluster(t, "--delivery="+string(d))
			startMeshes(t, c, ca)
			c.CreateNamespaceLabelled(t, "apps", map[string]string{admission.InjectLabel: admission.Enabled,
				"pod-security.kubernetes.io/enforce": "restricted"})
			c.Create(t, "/api/v1/namespaces/apps/resourcequotas", map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
				"metadata": map[string]any{"name": "limits"}, "spec": map[string]any{"hard": map[string]any{"limits.cpu": "10", "limits.memory": "10Gi"}}})
			p := pod("meshed", []string{"/app", "--once"}, map[string]string{meshLabel: "yes"}, map[string]string{"team": "data"})
			spec := p["spec"].(map[string]any)
			spec["containers"] = spec["containers"].([]any)[:1] // the classic stand-in adds Istio's
			app := spec["containers"].([]any)[0].(map[string]any)
			app["securityContext"], app["resources"] = restricted(), limits()
			r := c.Send(t, "POST", "/api/v1/namespaces/apps/pods", p)
			if r.Code != 201 {
				t.Fatalf("create: %d %s\ninjector log:\n%s", r.Code, r.Body, in.stderr)
			}
			stored, err := manifest.DecodeJSONObject(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			// What Apply makes of the stored pod is the stored pod: nothing left to do.
			if ops, rep, err := inject.Patch(r.Body, manifest.TypeMeta{}, inject.Options{Version: testVersion, Image: testImage, Delivery: d}, nil); err != nil || len(ops) > 0 {
				t.Errorf("the stored pod is not what inject makes of it: %v, %d ops %s, report %+v", err, len(ops), mustJSONT(t, ops), rep)
			}
			spec = stored["spec"].(map[string]any)
			var names []string
			for _, c := range spec["initContainers"].([]any) {
				names = append(names, c.(map[string]any)["name"].(string))
			}
			wantInits := []string{"linkerd-proxy"}
			if d == inject.InitCopy {
				wantInits = []string{contract.InitContainer, "linkerd-proxy"}
			}
			if !slices.Equal(names, wantInits) {
				t.Errorf("init containers %q, want %q", names, wantInits)
			}
			found, _ := annotationsOf(stored)[contract.FoundAnnotation].(string)
			if !strings.Contains(found, "istio") || !strings.Contains(found, "linkerd") {
				t.Errorf("found sidecars %q: want istio and linkerd", found)
			}
			for _, v := range spec["volumes"].([]any) {
				m := v.(map[string]any)
				if m["name"] == contract.BinVolume && (d == inject.ImageVolume) != (m["image"] != nil) {
					t.Errorf("the binary's volume is %v", m)
				}
			}
			t.Logf("stored: init containers %q, found %q; injector log:\n%s", names, found, in.stderr)
		})
	}
}
