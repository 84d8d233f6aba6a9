//go:build linux

package nodejobs

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/admission"
	"github.com/sidesync/sidesync/internal/contract"
	"github.com/sidesync/sidesync/internal/inject"
	"github.com/sidesync/sidesync/internal/kubetest"
	"github.com/sidesync/sidesync/internal/manifest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The admission webhook on the node: sidesync's pod webhook (internal/admission's handler,
// which sidesync-injector serves; its own process is tested on the API server in
// cmd/sidesync-injector) registered with the configuration the chart is generated from, beside
// the mesh stand-in. A namespace is labelled, a CronJob made from an example's plain Job is
// created, and nothing else is done: the CronJob fires, the mesh stand-in adds the sidecar, the
// webhook wraps the app, and the Job completes.

// admissionLabel on a namespace says which of sidesync's two admission modes, both registered on
// the shared node, may select it: "webhook" or "policy" (each mode's selectors get this
// requirement besides their own), so that each test proves one mode alone.
const admissionLabel = "nodejobs.sidesync.io/admission"

var sidesyncWebhookOnce struct {
	sync.Once
	err error
}

// sidesyncWebhook serves and registers sidesync's webhook, once per process.
func sidesyncWebhook(t testing.TB, n *kubetest.Node) {
	t.Helper()
	sidesyncWebhookOnce.Do(func() { sidesyncWebhookOnce.err = startSidesyncWebhook(t, n) })
	if sidesyncWebhookOnce.err != nil {
		t.Fatalf("sidesync's webhook: %v", sidesyncWebhookOnce.err)
	}
}

func startSidesyncWebhook(t testing.TB, n *kubetest.Node) error {
	cert, caPEM, err := selfSigned(n.IP())
	if err != nil {
		return err
	}
	l, err := n.Listen("tcp", net.JoinHostPort(n.IP(), "0"))
	if err != nil {
		return err
	}
	o := inject.Options{Version: exampleVersion, Image: sidesyncImage}
	s := &admission.Server{Mutator: &admission.Mutator{Inject: o, Namespace: "sidesync-system"},
		Warner: &admission.Warner{Inject: o, Namespace: "sidesync-system"},
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(l, "", "") }() // ends with the test process
	cfg := admission.MutatingWebhookConfiguration(admission.Options{
		Endpoint: admission.Endpoint{URL: "https://" + l.Addr().String(), CABundle: caPEM}, Namespace: "sidesync-system"})
	for i := range cfg.Webhooks {
		onlyMode(cfg.Webhooks[i].NamespaceSelector, "webhook")
	}
	n.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", cfg)
	return nil
}

// onlyMode adds the requirement admissionLabel=mode to a namespace selector.
func onlyMode(sel *metav1.LabelSelector, mode string) {
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[admissionLabel] = mode
}

var sidesyncPolicyOnce struct {
	sync.Once
	err error
}

// sidesyncPolicy installs the MutatingAdmissionPolicy of `kubectl sidesync policy`, once per
// process.
func sidesyncPolicy(t testing.TB, n *kubetest.Node) {
	t.Helper()
	sidesyncPolicyOnce.Do(func() {
		policies, bindings, err := admission.Policy(admission.PolicyOptions{Version: exampleVersion, Image: sidesyncImage, Namespace: "sidesync-system"})
		if err != nil {
			sidesyncPolicyOnce.err = err
			return
		}
		for _, p := range policies {
			n.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies", p)
		}
		for _, b := range bindings {
			if b.Spec.MatchResources == nil || b.Spec.MatchResources.NamespaceSelector == nil {
				sidesyncPolicyOnce.err = fmt.Errorf("binding %s selects no namespaces", b.Name)
				return
			}
			onlyMode(b.Spec.MatchResources.NamespaceSelector, "policy")
			n.Create(t, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings", b)
		}
	})
	if sidesyncPolicyOnce.err != nil {
		t.Fatalf("sidesync's policy: %v", sidesyncPolicyOnce.err)
	}
}

// TestWebhookCronJob: label a namespace, create a CronJob of the OSM example's plain Job, and
// its Job completes, its pod wrapped at admission by the webhook after the mesh stand-in added
// Envoy.
func TestWebhookCronJob(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncWebhook(t, n)
	runCronJob(t, n, "webhook")
}

// TestPolicyCronJob is TestWebhookCronJob with the MutatingAdmissionPolicy of `kubectl sidesync
// policy` and no webhook of sidesync's: the same pod, the same Job, complete.
func TestPolicyCronJob(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncPolicy(t, n)
	runCronJob(t, n, "policy")
}

// runCronJob labels a new namespace for mode, creates the CronJob and checks its first Job.
func runCronJob(t *testing.T, n *kubetest.Node, mode string) {
	injector(t, n)
	ns := namespace(t, n, mode+"-cronjob")
	// The namespace opts in, as a user does: kubectl label namespace NS sidesync.io/inject=enabled.
	n.Send(t, "PATCH", "/api/v1/namespaces/"+ns, map[string]any{"metadata": map[string]any{"labels": map[string]any{
		admission.InjectLabel: admission.Enabled, admissionLabel: mode}}})
	waitSelected(t, n, ns)

	data, err := os.ReadFile(filepath.Join(examplesDir, "plain", "osm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	job, err := manifest.DecodeJSONObject(j)
	if err != nil {
		t.Fatal(err)
	}
	cron := map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": map[string]any{"name": "invoice-export"},
		"spec": map[string]any{"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3,
			"jobTemplate": map[string]any{"spec": job["spec"]}}}
	begin := time.Now()
	n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", cron)
	name := waitCronJobJob(t, n, ns, "invoice-export")
	p := waitJob(t, n, ns, name, "Complete", begin)
	if p.Metadata.Annotations[contract.InjectedAnnotation] != exampleVersion+" init-copy" {
		t.Fatalf("the pod was not wrapped at admission: annotations %v", p.Metadata.Annotations)
	}
	checkRun(t, n, ns, p, "osm")
	t.Logf("%s: CronJob created → its Job %s Complete in %s (the schedule fires at the next minute)", mode, name, time.Since(begin).Round(100*time.Millisecond))
}

// waitSelected waits until the API server calls the webhook for the namespace: a dry-run pod
// comes back wrapped (the API server reads configurations, and namespaces for selectors, from
// watches).
func waitSelected(t testing.TB, n *kubetest.Node, ns string) {
	t.Helper()
	probe := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "probe"}, "spec": map[string]any{
		"restartPolicy": "Never", "securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 10001, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"containers": []any{map[string]any{"name": "app", "image": "x", "command": []any{"/app"},
			"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}}}}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := n.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All", probe)
		if r.Code == 201 && strings.Contains(string(r.Body), contract.InjectedAnnotation) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s not selected after 2 minutes: %d %s", ns, r.Code, r.Body)
		}
		time.Sleep(200 * time.Millisecond) // polling the API server's watches, bounded by deadline
	}
}

// waitCronJobJob waits for the first Job the CronJob creates and returns its name.
func waitCronJobJob(t testing.TB, n *kubetest.Node, ns, cron string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute) // the next minute, under load
	for {
		var list struct {
			Items []struct {
				Metadata struct {
					Name            string
					OwnerReferences []struct{ Kind, Name string }
				}
			}
		}
		var raw []byte
		n.Do(t, "GET", "/apis/batch/v1/namespaces/"+ns+"/jobs", nil, &raw)
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		for _, j := range list.Items {
			for _, o := range j.Metadata.OwnerReferences {
				if o.Kind == "CronJob" && o.Name == cron {
					return j.Metadata.Name
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CronJob %s created no Job in 3 minutes", cron)
		}
		time.Sleep(time.Second) // polling the CronJob controller's work, bounded by deadline
	}
}
