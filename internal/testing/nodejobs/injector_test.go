//go:build linux

package nodejobs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// injectorLabel on a namespace turns the mesh stand-in on for its pods.
const injectorLabel = "nodejobs.sidesync.io/mesh-injector"

// markValues are the values the stand-in gives the marks whose catalog row takes any value, as
// the real injectors write them.
var markValues = map[string]string{
	"osm-proxy-uuid":           "9b3bd5f6-2f6c-4c5e-9b0a-6f0e1f2a3b4c",
	"sidecar.istio.io/status":  `{"initContainers":null,"containers":["istio-proxy"],"volumes":["istio-envoy","istio-data"],"imagePullSecrets":null,"revision":"default"}`,
	"linkerd.io/proxy-version": "edge-26.5.2",
}

var injectorOnce struct {
	sync.Once
	err error
}

// injector registers, once per process whichever test or benchmark asks first, a mutating admission webhook that stands in for the meshes'
// injectors: for a pod that asks a mesh of the catalog for its sidecar (the row's Requests, or
// Dapr's mark), it adds the row's container, running the sidecar's emulator image, and the marks
// the row says its injector leaves. It runs after `kubectl sidesync inject` did, at the pod's
// creation, as a real injector does, so sidesync can only find the sidecar at run time.
func injector(t testing.TB, n *kubetest.Node) {
	t.Helper()
	injectorOnce.Do(func() { injectorOnce.err = startInjector(t, n) })
	if injectorOnce.err != nil {
		t.Fatalf("the mesh stand-in: %v", injectorOnce.err)
	}
}

func startInjector(t testing.TB, n *kubetest.Node) error {
	cert, caPEM, err := selfSigned(n.IP())
	if err != nil {
		return err
	}
	l, err := n.Listen("tcp", net.JoinHostPort(n.IP(), "0"))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(admit), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = srv.ServeTLS(l, "", "") }() // ends with the test process
	none, fail, ten := "None", "Fail", 10
	n.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": "mesh-injector-stand-in"},
		"webhooks": []any{map[string]any{
			"name":                    "sidecars.nodejobs.sidesync.io",
			"clientConfig":            map[string]any{"url": "https://" + l.Addr().String() + "/inject", "caBundle": caPEM},
			"rules":                   []any{map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
			"namespaceSelector":       map[string]any{"matchLabels": map[string]any{injectorLabel: "on"}},
			"sideEffects":             none,
			"failurePolicy":           fail,
			"timeoutSeconds":          ten,
			"admissionReviewVersions": []any{"v1"},
		}},
	})
	return nil
}

// admit answers an AdmissionReview with the JSON patch that injects the pod's sidecars.
func admit(w http.ResponseWriter, r *http.Request) {
	var review struct {
		Request struct {
			UID    string
			Object struct {
				Metadata struct {
					Labels, Annotations map[string]string
				}
				Spec struct {
					Containers []struct{ Name string }
				}
			}
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	obj := review.Request.Object
	var patch []map[string]any
	add := func(path string, v any) { patch = append(patch, map[string]any{"op": "add", "path": path, "value": v}) }
	if obj.Metadata.Annotations == nil {
		add("/metadata/annotations", map[string]string{})
	}
	if obj.Metadata.Labels == nil {
		add("/metadata/labels", map[string]string{})
	}
	has := map[string]bool{}
	for _, c := range obj.Spec.Containers {
		has[c.Name] = true
	}
	for _, name := range emulated {
		e, _ := catalog.Lookup(name)
		if !asks(e, obj.Metadata.Annotations, obj.Metadata.Labels) || has[e.Container] {
			continue
		}
		for _, m := range e.Marks {
			v := m.Value
			if v == "" {
				v = markValues[m.Key]
			}
			where := "/metadata/annotations/"
			if m.Label {
				where = "/metadata/labels/"
			}
			add(where+strings.ReplaceAll(strings.ReplaceAll(m.Key, "~", "~0"), "/", "~1"), v)
		}
		add("/spec/containers/-", map[string]any{
			"name": e.Container, "image": sidecarImage(name), "imagePullPolicy": "Never",
			"securityContext": sidecarSecurityContext(),
		})
	}
	p, _ := json.Marshal(patch)
	resp := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"response": map[string]any{"uid": review.Request.UID, "allowed": true, "patchType": "JSONPatch", "patch": p},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// sidecarSecurityContext is the security context of a sidecar the tests add, as the meshes'
// injectors write it: Pod Security "restricted", as UID 1337.
func sidecarSecurityContext() map[string]any {
	return map[string]any{
		"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
		"runAsNonRoot": true, "runAsUser": 1337, "readOnlyRootFilesystem": true,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}
}

// asks reports whether a pod's annotations and labels ask the row's injector for its sidecar.
func asks(e *catalog.Entry, ann, labels map[string]string) bool {
	for _, m := range e.Unless {
		if m.On(ann, labels) {
			return false
		}
	}
	for _, m := range append(append([]catalog.Mark{}, e.Requests...), e.Marks...) {
		if m.On(ann, labels) {
			return true
		}
	}
	return false
}

// selfSigned makes a serving certificate for ip that is its own CA, and its PEM for caBundle.
func selfSigned(ip string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mesh-injector-stand-in"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
