//go:build linux

package istioinject

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
	"github.com/sidesync/sidesync/internal/testing/loadpods"
)

// Environment of BenchmarkThroughAPIServer (kubetest's SIDESYNC_KUBE_BIN and
// SIDESYNC_KUBE_REQUIRED say where the real kube-apiserver is and whether its absence fails).
const (
	envAPIRate   = "SIDESYNC_ISTIO_API_RATE"   // pod creates per second (default 50)
	envAPIRounds = "SIDESYNC_ISTIO_API_ROUNDS" // 5 s blocks per namespace and shape (default 2)
	envAPISizes  = "SIDESYNC_ISTIO_API_SIZES"  // the sizes run, "1KiB,16KiB" (default: every size of Shapes)
)

// The namespaces: each create is seen by one webhook, or none. Every namespace carries Istio's
// label, so that Istio's object webhook (a pod's sidecar.istio.io/inject=true in a namespace
// without the label) never matches: only its namespace webhook, and only in nsIstio.
const (
	nsIstio    = "istio"    // istio-injection=enabled: Istio's injector
	nsSidesync = "sidesync" // sidesync.io/inject=enabled: sidesync's
	nsPlain    = "plain"    // neither: the API server's own cost
)

// BenchmarkThroughAPIServer creates each shape's pod through a real kube-apiserver with
// ?dryRun=All at SIDESYNC_ISTIO_API_RATE per second (50), with both injectors registered (each
// served over HTTPS on loopback from this process, HTTP/2 as the API server speaks it) and
// selecting a namespace of its own, and in a namespace neither selects; the three in turn, in 5 s
// blocks, so that the machine's changing load falls on all three alike. It reports each
// namespace's create latency and each webhook's share (its namespace's minus the plain one's),
// and fails unless every create came back mutated by the webhook of its namespace and by no other.
func BenchmarkThroughAPIServer(b *testing.B) {
	rate := loadpods.EnvInt(b, envAPIRate, 50)
	rounds := loadpods.EnvInt(b, envAPIRounds, 2)
	if sizes := os.Getenv(envAPISizes); sizes != "" {
		for _, name := range strings.Split(sizes, ",") {
			if !slices.ContainsFunc(Shapes, func(s Shape) bool { return s.Size.Name == name }) {
				b.Fatalf("%s=%q: %q is not a size of Shapes (1KiB, 16KiB, 64KiB)", envAPISizes, sizes, name)
			}
		}
	}
	c := kubetest.Start(b)
	ins, istio := injectors(b)
	for _, in := range ins {
		srv := httptest.NewUnstartedServer(in.Handler)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		b.Cleanup(srv.Close)
		caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		switch in.Name {
		case "sidesync":
			o := admission.Options{Endpoint: admission.Endpoint{URL: srv.URL, CABundle: caPEM}, Namespace: SidesyncNamespace}
			c.Create(b, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", admission.MutatingWebhookConfiguration(o))
		case "istio":
			c.Create(b, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", istioWebhook(istio.Webhook, srv.URL, caPEM))
		}
	}
	c.CreateNamespace(b, SidesyncNamespace)
	c.CreateNamespaceLabelled(b, nsIstio, map[string]string{"istio-injection": "enabled"})
	c.CreateNamespaceLabelled(b, nsSidesync, map[string]string{admission.InjectLabel: admission.Enabled, "istio-injection": "disabled"})
	c.CreateNamespaceLabelled(b, nsPlain, map[string]string{"istio-injection": "disabled"})
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	api := loadpods.HTTPSClient(caPEM)
	defer api.CloseIdleConnections()
	var seq atomic.Int64
	create := func(ns string, s Shape) (time.Duration, error) {
		body := s.Pod(fmt.Sprintf("orders-%d", seq.Add(1)), "")
		took, data, err := loadpods.Create(api, c.URL, c.AdminToken, ns, "?dryRun=All", body)
		if err != nil {
			return 0, err
		}
		if i, sd := IstioMutated(data), SidesyncMutated(data); i != (ns == nsIstio) || sd != (ns == nsSidesync) {
			var pod struct {
				Metadata struct{ Annotations map[string]string }
			}
			json.Unmarshal(data, &pod)
			return 0, fmt.Errorf("%s: mutated by Istio %v, by sidesync %v; the pod's annotations: %v", ns, i, sd, pod.Metadata.Annotations)
		}
		return took, nil
	}
	// Until both webhooks are called (the API server reads new configurations within a second),
	// then a warm-up of every path.
	deadline := time.Now().Add(2 * time.Minute)
	for _, ns := range []string{nsIstio, nsSidesync} {
		for {
			_, err := create(ns, Shapes[0])
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the webhook of %s is not called 2 minutes after its registration: %v", ns, err)
			}
			time.Sleep(100 * time.Millisecond) // polling the API server's configuration, bounded by deadline
		}
	}
	namespaces := []string{nsIstio, nsSidesync, nsPlain}
	for i := range 60 {
		if _, err := create(namespaces[i%3], Shapes[i%len(Shapes)]); err != nil {
			b.Fatal(err)
		}
	}
	const block = 5 * time.Second
	perBlock := int(float64(rate) * block.Seconds())
	for range b.N {
		b.Logf("dry-run creates at %d/s, per shape %d rounds of a 5 s block in each namespace; sizes %q", rate, rounds, os.Getenv(envAPISizes))
		for _, s := range Shapes {
			if sizes := os.Getenv(envAPISizes); sizes != "" && !slices.Contains(strings.Split(sizes, ","), s.Size.Name) {
				continue
			}
			lat := map[string][]time.Duration{}
			errs := map[string][]error{}
			var mu sync.Mutex
			before := Loadavg()
			callsBefore := webhookCalls(b, api, c)
			for range rounds {
				for _, ns := range namespaces {
					loadpods.OpenLoop(rate, perBlock, func(int, time.Time) {
						took, err := create(ns, s)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							errs[ns] = append(errs[ns], err)
							return
						}
						lat[ns] = append(lat[ns], took)
					})
				}
			}
			calls := webhookCalls(b, api, c)
			for name, n := range callsBefore {
				calls[name] -= n
			}
			p := map[string][]float64{}
			for _, ns := range namespaces {
				p[ns] = loadpods.Percentiles(lat[ns], .5, .99)
			}
			b.Logf("%-10s load average %s → %s; plain p50 %6.2f p99 %6.2f ms (%d creates, %d errors)", s, before, Loadavg(), p[nsPlain][0], p[nsPlain][1], len(lat[nsPlain]), len(errs[nsPlain]))
			for _, ns := range []string{nsSidesync, nsIstio} {
				b.Logf("%-10s %-8s p50 %6.2f p99 %6.2f ms (%d creates, %d errors): share p50 %+6.2f p99 %+6.2f ms",
					s, ns, p[ns][0], p[ns][1], len(lat[ns]), len(errs[ns]), p[ns][0]-p[nsPlain][0], p[ns][1]-p[nsPlain][1])
			}
			b.Logf("%-10s the API server's calls to each webhook (apiserver_admission_webhook_admission_duration_seconds_count): %v", s, calls)
			for _, ns := range namespaces {
				if len(errs[ns]) > 0 {
					b.Errorf("%s in %s: %d errors; the first: %v", s, ns, len(errs[ns]), errs[ns][0])
				}
			}
			b.ReportMetric(p[nsSidesync][1]-p[nsPlain][1], s.String()+"-sidesync-p99-share-ms")
			b.ReportMetric(p[nsIstio][1]-p[nsPlain][1], s.String()+"-istio-p99-share-ms")
		}
	}
}

// webhookCalls is the API server's count of its calls to each mutating webhook, by name.
func webhookCalls(b *testing.B, api *http.Client, c *kubetest.Cluster) map[string]int {
	b.Helper()
	req, err := http.NewRequest("GET", c.URL+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	resp, err := api.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	calls := map[string]int{}
	const family = "apiserver_admission_webhook_admission_duration_seconds_count{"
	for line := range strings.Lines(string(data)) {
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, family), "} ")
		if !ok || !strings.HasPrefix(line, family) || !strings.Contains(labels, `type="admit"`) {
			continue
		}
		_, name, _ := strings.Cut(labels, `name="`)
		name, _, _ = strings.Cut(name, `"`)
		n, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		calls[name] += int(n)
	}
	return calls
}

// istioWebhook is Istio's rendered MutatingWebhookConfiguration w with each webhook's
// clientConfig pointing at base (the path of istiod's Service kept) and trusting caPEM.
func istioWebhook(w map[string]any, base string, caPEM []byte) map[string]any {
	delete(w["metadata"].(map[string]any), "namespace")
	for _, h := range w["webhooks"].([]any) {
		cc := h.(map[string]any)["clientConfig"].(map[string]any)
		path, _ := cc["service"].(map[string]any)["path"].(string)
		h.(map[string]any)["clientConfig"] = map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
	}
	return w
}
