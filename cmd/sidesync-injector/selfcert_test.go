//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// selfServiceName is the TLS server name the API server checks for the chart's Service.
const selfServiceName = chart.ReleaseName + "." + ownNamespace + ".svc"

// The lifetimes in TestSelfCertsOnAPIServer: the serving certificate is renewed about every
// 6 s, with 3 s left; the CA about 17 s after it was made.
const (
	selfCertLifetime = "9s"
	selfCALifetime   = "27s"
)

// TestSelfCertsOnAPIServer installs the chart with its default values (tls.source self, no
// cert-manager object) on a real API server, all but the Deployment, and runs two injectors
// with the Deployment's flags, as its ServiceAccount (the chart's RBAC and nothing more). The
// chart's Service is swapped for an ExternalName Service to localhost, and its webhooks' port
// for the first injector's, so that the API server calls that injector the way it calls a
// Service (k8s.io/apiserver's proxy.ResolveCluster), checking the certificate for
// SERVICE.NAMESPACE.svc against the caBundle the injector wrote. Then:
//
//   - one Secret and one CA, though both injectors started at once, serving the same
//     certificate; both configurations hold the CA;
//   - pods of a selected namespace, and one that opted in itself, come back wrapped;
//   - with lifetimes of seconds, the serving certificate is renewed, each time before it
//     expires, then the CA: the new CA first in the bundle beside the old one, and the
//     serving certificate moved to it; no admission fails across the renewals;
//   - a caBundle emptied by hand is written back.
func TestSelfCertsOnAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	c.CreateNamespace(t, ownNamespace)
	objs, err := chart.Injector.RenderOn(c.Version, nil, ownNamespace)
	if err != nil {
		t.Fatal(err)
	}
	args, hooks := installSelf(t, c, objs)
	kc := c.Kubeconfig(t, c.ServiceAccountToken(t, ownNamespace, chart.ReleaseName))
	args = append(args, "--kubeconfig="+kc, "--namespace="+ownNamespace, "--cert-lifetime="+selfCertLifetime, "--ca-lifetime="+selfCALifetime)

	// Both at once: they race to create the Secret.
	ins := make([]*injector, 2)
	var wg sync.WaitGroup
	for i := range ins {
		wg.Go(func() { ins[i] = launchInjector(t, args) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	defer func() {
		if t.Failed() {
			for i, in := range ins {
				t.Logf("injector %d:\n%s", i, in.stderr)
			}
		}
	}()
	for _, h := range hooks {
		for _, w := range h["webhooks"].([]any) {
			w.(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["port"] = portOf(t, ins[0].webhook)
		}
		path, _ := kubetest.CollectionPath(h, ownNamespace)
		c.Create(t, path, h)
	}
	for _, in := range ins {
		waitReady(t, in)
	}

	t.Run("one Secret, one CA, in both configurations", func(t *testing.T) {
		var list struct{ Items []secretJSON }
		c.Do(t, "GET", "/api/v1/namespaces/"+ownNamespace+"/secrets", nil, &list)
		if len(list.Items) != 1 || list.Items[0].Metadata.Name != chart.ReleaseName+chart.CertSecretSuffix {
			t.Fatalf("secrets %+v, want one, %s", list.Items, chart.ReleaseName+chart.CertSecretSuffix)
		}
		s := list.Items[0]
		if cas := parseCerts(t, s.Data[keyCABundle]); len(cas) != 1 {
			t.Errorf("%d CAs in the bundle, want 1", len(cas))
		}
		for _, h := range hooks {
			if got := caBundles(t, c, h); len(got) == 0 || !allSame(got, string(s.Data[keyCABundle])) {
				t.Errorf("%s: caBundles %q, want the Secret's", h["kind"], got)
			}
		}
		for i, in := range ins {
			if err := verifyServed(in.webhook, s.Data[keyCABundle]); err != nil {
				t.Errorf("injector %d: %v", i, err)
			}
		}
	})

	sel := map[string]string{admission.InjectLabel: admission.Enabled}
	c.CreateNamespaceLabelled(t, "selected", sel)
	c.CreateNamespace(t, "plain")
	t.Run("wrapped", func(t *testing.T) {
		for _, p := range []struct{ ns, name string }{{"selected", "namespace-wide"}} {
			stored := c.CreatePod(t, p.ns, pod(p.name, []string{"/app"}, nil, nil))
			if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
				t.Errorf("%s/%s: not wrapped", p.ns, p.name)
			}
		}
		stored := c.CreatePod(t, "plain", pod("explicit", []string{"/app"}, sel, nil))
		if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
			t.Error("a pod that opted in itself: not wrapped")
		}
	})

	t.Run("renewed before they expire, admissions across", func(t *testing.T) {
		testRenewals(t, c, ins)
	})

	t.Run("a caBundle emptied by hand is written back", func(t *testing.T) {
		path := "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + admission.MutatingConfigName
		var cfg map[string]any
		c.Do(t, "GET", path, nil, &cfg)
		for _, w := range cfg["webhooks"].([]any) {
			delete(w.(map[string]any)["clientConfig"].(map[string]any), "caBundle")
		}
		if r := c.Send(t, "PUT", path, cfg); r.Code != 200 {
			t.Fatalf("emptying the caBundle: %d %s", r.Code, r.Body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := c.WaitList(ctx, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", kubetest.NameIs(admission.MutatingConfigName),
			func(items []json.RawMessage) bool {
				var cfg struct {
					Webhooks []struct{ ClientConfig struct{ CABundle []byte } }
				}
				return len(items) == 1 && json.Unmarshal(items[0], &cfg) == nil && len(cfg.Webhooks) > 0 && len(cfg.Webhooks[0].ClientConfig.CABundle) > 0
			})
		if err != nil {
			t.Fatalf("the caBundle is not back: %v", err)
		}
		// The API server calls webhooks as its own informer's copy of the configuration says,
		// which follows the stored one by a moment: until that copy has the caBundle back, a
		// call fails to verify the certificate. Dry runs until it has; any other answer fails.
		for deadline := time.Now().Add(time.Minute); ; {
			r := c.Send(t, "POST", "/api/v1/namespaces/plain/pods?dryRun=All", pod("after", []string{"/app"}, sel, nil))
			if r.Code == http.StatusCreated {
				break
			}
			if !bytes.Contains(r.Body, []byte("certificate signed by unknown authority")) || time.Now().After(deadline) {
				t.Fatalf("a dry-run create once the caBundle is back: %d %s", r.Code, r.Body)
			}
			time.Sleep(50 * time.Millisecond) // polling the API server's copy, bounded by the deadline
		}
		stored := c.CreatePod(t, "plain", pod("after", []string{"/app"}, sel, nil))
		if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
			t.Error("not wrapped after the caBundle came back")
		}
	})
}

// testRenewals follows the Secret while pods are created without pause, until the serving
// certificate has been renewed twice and the CA once, with the serving certificate moved to the
// new CA: each serving certificate is renewed before it expires and verifies against the bundle
// of its time, a renewed CA comes first with the old one kept, no admission fails, and both
// injectors end serving the last certificate.
func testRenewals(t *testing.T, c *kubetest.Cluster, ins []*injector) {
	adm := admitWithoutPause(t, c, 2, "the renewals")
	var (
		leaf, firstCA      *x509.Certificate
		renewals           int
		caRenewed, onNewCA bool
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := c.WaitList(ctx, "/api/v1/namespaces/"+ownNamespace+"/secrets", kubetest.NameIs(chart.ReleaseName+chart.CertSecretSuffix),
		func(items []json.RawMessage) bool {
			var s secretJSON
			if len(items) != 1 || json.Unmarshal(items[0], &s) != nil {
				return false
			}
			now := time.Now()
			certs, cas := parseCerts(t, s.Data[keyCert]), parseCerts(t, s.Data[keyCABundle])
			if len(certs) != 1 || len(cas) == 0 {
				t.Errorf("the Secret holds %d certificates and %d CAs", len(certs), len(cas))
				return true
			}
			if err := verifyLeaf(certs[0], s.Data[keyCABundle], now); err != nil {
				t.Errorf("the Secret's certificate: %v", err)
			}
			switch {
			case leaf == nil:
				leaf, firstCA = certs[0], cas[0]
			case !certs[0].Equal(leaf):
				if !now.Before(leaf.NotAfter) {
					t.Errorf("renewed at %s, after the certificate expired (%s)", now.Format(time.RFC3339Nano), leaf.NotAfter)
				}
				leaf = certs[0]
				renewals++
			}
			if !cas[0].Equal(firstCA) && !caRenewed {
				caRenewed = true
				if len(cas) != 2 || !cas[1].Equal(firstCA) {
					t.Errorf("the CA renewed: a bundle of %d, want the new CA then the old", len(cas))
				}
			}
			onNewCA = caRenewed && leaf.CheckSignatureFrom(cas[0]) == nil
			return renewals >= 2 && onNewCA
		})
	adm.stop()
	if err != nil {
		t.Fatalf("%d renewals of the serving certificate, CA renewed %v, the certificate on the new CA %v: %v", renewals, caRenewed, onNewCA, err)
	}
	t.Logf("%d admissions across %d renewals of the serving certificate and one of the CA, %d failed", adm.done.Load(), renewals, adm.failed.Load())
	if adm.done.Load() == 0 {
		t.Error("no admission ran across the renewals")
	}
	// Both serve the last certificate as soon as their watch has it, and say when it expires.
	want := fmt.Sprint(leaf.NotAfter.Unix())
	deadline := time.Now().Add(30 * time.Second)
	for i, in := range ins {
		for certSerialBig(t, in.webhook) != leaf.SerialNumber.String() || expiryMetric(t, in.probes) != want {
			if time.Now().After(deadline) {
				t.Errorf("injector %d does not serve the last certificate, or its metric says it expires at %s, not %s", i, expiryMetric(t, in.probes), want)
				break
			}
			time.Sleep(20 * time.Millisecond) // polling our own server, bounded by deadline
		}
	}
}

// expiryMetric is the serving certificate's expiry on the injector's /metrics, as written.
func expiryMetric(t *testing.T, probes string) string {
	t.Helper()
	r, err := http.Get("http://" + probes + admission.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	const series = `sidesync_injector_certificate_expiry_timestamp_seconds{certificate="serving"} `
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return fmt.Sprint(int64(f))
		}
	}
	return ""
}

// installSelf creates the chart's objects on c, but for the Deployment, whose container's
// flags it returns without those of the pod's own (listen addresses, namespace, image), the
// Service, for which it creates an ExternalName Service to localhost, and the webhook
// configurations, which it returns for the caller to create. Nothing of cert-manager may be
// among them.
func installSelf(t *testing.T, c *kubetest.Cluster, objs []map[string]any) (args []string, hooks []map[string]any) {
	t.Helper()
	for _, o := range objs {
		if strings.HasPrefix(o["apiVersion"].(string), "cert-manager.io/") {
			t.Errorf("the default values make a %s", o["kind"])
			continue
		}
		switch o["kind"] {
		case "Deployment":
			spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			for _, a := range spec["containers"].([]any)[0].(map[string]any)["args"].([]any) {
				a := a.(string)
				if !strings.HasPrefix(a, "--listen=") && !strings.HasPrefix(a, "--probe-listen=") && !strings.HasPrefix(a, "--namespace=") &&
					!strings.HasPrefix(a, "--image=") && !strings.HasPrefix(a, "--cert-lifetime=") && !strings.HasPrefix(a, "--ca-lifetime=") {
					args = append(args, a)
				}
			}
			continue
		case "Service":
			c.Create(t, "/api/v1/namespaces/"+ownNamespace+"/services", map[string]any{"apiVersion": "v1", "kind": "Service",
				"metadata": o["metadata"], "spec": map[string]any{"type": "ExternalName", "externalName": "localhost"}})
			continue
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks = append(hooks, o)
			continue
		}
		path, served := kubetest.CollectionPath(o, ownNamespace)
		if !served {
			t.Fatalf("no path for %s", o["kind"])
		}
		c.Create(t, path, o)
	}
	if len(hooks) != 2 || len(args) == 0 {
		t.Fatalf("the chart makes %d webhook configurations and a Deployment with flags %q", len(hooks), args)
	}
	return args, hooks
}

type secretJSON struct {
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Data map[string][]byte
}

func parseCerts(t *testing.T, pemData []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, pemData = pem.Decode(pemData)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// caBundles are the caBundles of the configuration's webhooks, as stored.
func caBundles(t *testing.T, c *kubetest.Cluster, h map[string]any) []string {
	t.Helper()
	path, _ := kubetest.CollectionPath(h, "")
	var cfg struct {
		Webhooks []struct{ ClientConfig struct{ CABundle []byte } }
	}
	c.Do(t, "GET", path+"/"+h["metadata"].(map[string]any)["name"].(string), nil, &cfg)
	var out []string
	for _, w := range cfg.Webhooks {
		out = append(out, string(w.ClientConfig.CABundle))
	}
	return out
}

func allSame(got []string, want string) bool {
	for _, g := range got {
		if g != want {
			return false
		}
	}
	return true
}

// verifyLeaf checks a serving certificate against a bundle at now, for the Service's name.
func verifyLeaf(leaf *x509.Certificate, bundle []byte, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: selfServiceName, Roots: roots, CurrentTime: now})
	return err
}

// verifyServed checks the certificate served at addr against the bundle, for the Service's
// name, as the API server does.
func verifyServed(addr string, bundle []byte) error {
	conn, err := tlsDial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	return verifyLeaf(conn.ConnectionState().PeerCertificates[0], bundle, time.Now())
}

func certSerialBig(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tlsDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	return port
}

// waitReady waits until the injector's /readyz answers 200.
func waitReady(t *testing.T, in *injector) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := http.Get("http://" + in.probes + admission.ReadyzPath)
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the injector is not ready after a minute:\n%s", in.stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling our own server, bounded by deadline
	}
}
