//go:build linux

package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// review posts a Pod CREATE review to the injector's webhook, as the API server would.
func review(t *testing.T, addr, ns string, pod any) (int, *admissionv1.AdmissionResponse) {
	t.Helper()
	raw, _ := json.Marshal(pod)
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: ns,
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Minute}
	r, err := c.Post("https://"+addr+admission.MutatePath+"?timeout=10s", "application/json", bytes.NewReader(body))
	if err != nil {
		return -1, nil
	}
	defer r.Body.Close()
	var out admissionv1.AdmissionReview
	json.NewDecoder(r.Body).Decode(&out)
	return r.StatusCode, out.Response
}

// TestProbesMetricsDrain: /healthz and /readyz answer once the namespaces are known; /metrics
// counts admissions by outcome with the latency histogram; on SIGTERM /readyz fails at once while
// the webhook still answers for the drain delay, and then the injector exits 0.
func TestProbesMetricsDrain(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := kubetest.Start(t)
	ca := newTestCA(t)
	in := startInjector(t, ca, "--kubeconfig="+c.Kubeconfig(t, c.AdminToken), "--namespace="+ownNamespace, "--drain-delay=3s")
	base := "http://" + in.probes
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, _ := get(t, base+admission.ReadyzPath)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d after 2 minutes:\n%s", code, in.stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling the probe, bounded by deadline
	}
	if code, body := get(t, base+admission.HealthzPath); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, resp := review(t, in.webhook, "apps", pod("p", []string{"/app"}, nil, nil)); code != 200 || resp == nil || resp.PatchType == nil {
		t.Fatalf("review: %d %+v", code, resp)
	}
	review(t, in.webhook, "kube-system", pod("p", []string{"/app"}, nil, nil))
	_, metrics := get(t, base+admission.MetricsPath)
	for _, want := range []string{
		`sidesync_injector_admissions_total{outcome="wrapped",reason="",webhook="mutate"} 1`,
		`sidesync_injector_admissions_total{outcome="skipped",reason="excluded",webhook="mutate"} 1`,
		`sidesync_injector_admission_duration_seconds_bucket{webhook="mutate",le="0.001"}`,
		`sidesync_injector_in_flight 0`, `go_goroutines`, `process_resident_memory_bytes`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// TLS 1.2 at least: a TLS 1.1 client gets no connection.
	if conn, err := tls.Dial("tcp", in.webhook, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}
	// SIGTERM: readiness fails at once, the webhook still answers during the drain delay.
	in.cancel()
	for {
		code, _ := get(t, base+admission.ReadyzPath)
		if code == 503 {
			break
		}
		if code == -1 {
			t.Fatal("the probe server closed before /readyz failed")
		}
		time.Sleep(5 * time.Millisecond) // polling the probe until the drain shows
	}
	if code, resp := review(t, in.webhook, "apps", pod("p", []string{"/app"}, nil, nil)); code != 200 || resp == nil || !resp.Allowed {
		t.Errorf("a review during the drain: %d %+v", code, resp)
	}
	in.stop(t)
	if !strings.Contains(in.stderr.String(), "msg=draining") || !strings.Contains(in.stderr.String(), "msg=stopped") {
		t.Errorf("log:\n%s", in.stderr)
	}
}

// TestBadFlags: each bad setting names itself, the injector exits 2 and starts nothing.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace=x", "--image=i:1"}, "--tls-cert-file and --tls-key-file are required, or --cert-secret"},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--image=i:1"}, "--namespace is required"},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x"}, "--image is required"},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "--delivery=copy"}, `delivery "copy"`},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "--max-in-flight=0"}, "--max-in-flight 0"},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "--log-format=xml"}, `--log-format "xml"`},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "--native=sometimes"}, `--native "sometimes": not auto, always or never`},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "--native="}, `--native "": not auto, always or never`},
		{[]string{"--cert-secret=s", "--tls-cert-file=a", "--tls-key-file=b", "--cert-service=svc", "--namespace=x", "--image=i:1"}, "--cert-secret, or --tls-cert-file and --tls-key-file: not both"},
		{[]string{"--cert-secret=s", "--namespace=x", "--image=i:1"}, `--cert-service "": `},
		{[]string{"--cert-secret=S_", "--cert-service=svc", "--namespace=x", "--image=i:1"}, `--cert-secret "S_": `},
		{[]string{"--cert-secret=s", "--cert-service=svc", "--mutating-webhook-configuration=", "--namespace=x", "--image=i:1"}, `--mutating-webhook-configuration "": `},
		{[]string{"--cert-secret=s", "--cert-service=svc", "--cert-lifetime=48h", "--ca-lifetime=24h", "--namespace=x", "--image=i:1"}, "--cert-lifetime 48h0m0s, --ca-lifetime 24h0m0s: positive, and the CA's no shorter"},
		{[]string{"--cert-secret=s", "--cert-service=svc", "--cert-lifetime=0s", "--namespace=x", "--image=i:1"}, "--cert-lifetime 0s"},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--tls-cert-file=a", "--tls-key-file=b", "--namespace=x", "--image=i:1", "extra"}, `unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		code := run(t.Context(), append(tc.args, "--listen=127.0.0.1:0", "--probe-listen=127.0.0.1:0", "--kubeconfig="+dir+"/none"),
			buildinfo.Info{Version: "(devel)", Commit: "x"}, &stderr, func(string, string) { t.Errorf("%q: started", tc.args) })
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || !strings.HasPrefix(stderr.String(), "sidesync-injector: ") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
