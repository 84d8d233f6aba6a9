//go:build linux

package nodejobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// sidesync's admission on the node, as a new user installs it: the injector's image (built
// from this checkout) runs as the chart's Deployment, the chart rendered with Helm v4's engine
// (internal/cluster/chart) with its default values (the injector makes its own certificates), every
// object created through the API;
// the API server calls the webhook through its Service. Then a namespace is labelled, a CronJob
// made from an example's plain Job is created, and nothing else is done: the CronJob fires, the
// mesh stand-in adds the sidecar, the webhook wraps the app, and the Job completes. The
// webhook-less mode (the MutatingAdmissionPolicy of `kubectl sidesync policy`) does the same.

// admissionLabel on a namespace says which of sidesync's two admission modes, both installed on
// the shared node, may select it: "webhook" or "policy" (each mode's selectors get this
// requirement besides their own, a change the tests make), so that each test proves one mode
// alone.
const admissionLabel = "nodejobs.sidesync.io/admission"

// injectorNamespace is the chart's release namespace.
const injectorNamespace = "sidesync-system"

var chartOnce struct {
	sync.Once
	err error
}

// sidesyncChart installs the chart, once per process, and waits until both injector pods are
// ready.
func sidesyncChart(t testing.TB, n *kubetest.Node) {
	t.Helper()
	chartOnce.Do(func() { chartOnce.err = installChart(t, n) })
	if chartOnce.err != nil {
		t.Fatalf("the chart: %v", chartOnce.err)
	}
}

func installChart(t testing.TB, n *kubetest.Node) error {
	begin := time.Now()
	// The namespace as a user makes it, enforcing Pod Security "restricted", which the chart's
	// pods meet.
	n.CreateNamespaceLabelled(t, injectorNamespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	// The default values but the sidesync image's tag: the injector makes its own certificates
	// and writes the webhook configurations' caBundle (tls.source self); nothing else is installed.
	objs, err := chart.Render(map[string]any{"sidesyncImage": map[string]any{"tag": exampleVersion}}, injectorNamespace)
	if err != nil {
		return err
	}
	for _, o := range objs {
		onlyModeIn(o, "webhook")
		n.Create(t, collectionPath(t, o, injectorNamespace), o)
	}
	if err := deploymentReady(t, n, injectorNamespace, "sidesync-injector", 2); err != nil {
		return err
	}
	t.Logf("the chart installed, both injector pods ready, %s after the first object was created", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// deploymentReady waits, up to 5 minutes, until a chart's Deployment has want ready pods.
func deploymentReady(t testing.TB, n *kubetest.Node, ns, name string, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ready := 0
	err := n.WaitList(ctx, "/apis/apps/v1/namespaces/"+ns+"/deployments", kubetest.NameIs(name), func(items []json.RawMessage) bool {
		var d struct{ Status struct{ ReadyReplicas int } }
		if len(items) == 1 && json.Unmarshal(items[0], &d) == nil {
			ready = d.Status.ReadyReplicas
		}
		return ready == want
	})
	if err != nil {
		return fmt.Errorf("the Deployment %s has %d ready pods of %d after 5 minutes: %w", name, ready, want, err)
	}
	return nil
}

// collectionPath is where the API server takes a chart's object, released in namespace.
func collectionPath(t testing.TB, o map[string]any, namespace string) string {
	t.Helper()
	path, served := kubetest.CollectionPath(o, namespace)
	if !served {
		t.Fatalf("the chart makes a %s %s, which the node does not serve", o["apiVersion"], o["kind"])
	}
	return path
}

// injectorImage is the injector's image as the chart names it by default (its appVersion).
var injectorImage = "ghcr.io/sidesync/sidesync-injector:" + exampleVersion

// injectorImageOf is the injector's image, of the binary in dir (built by TestMain).
func injectorImageOf(dir string) kubetest.Image {
	return kubetest.Image{Ref: injectorImage, Files: map[string]string{"/sidesync-injector": filepath.Join(dir, "sidesync-injector")},
		Entrypoint: []string{"/sidesync-injector"}, User: "65532"}
}

// onlyModeIn adds admissionLabel=mode to the namespace selectors of a webhook configuration or
// a policy binding.
func onlyModeIn(o map[string]any, mode string) {
	add := func(holder map[string]any) {
		sel, _ := holder["namespaceSelector"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
			holder["namespaceSelector"] = sel
		}
		labels, _ := sel["matchLabels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			sel["matchLabels"] = labels
		}
		labels[admissionLabel] = mode
	}
	switch o["kind"] {
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		for _, w := range o["webhooks"].([]any) {
			add(w.(map[string]any))
		}
	case "ValidatingAdmissionPolicyBinding":
		spec := o["spec"].(map[string]any)
		mr, _ := spec["matchResources"].(map[string]any)
		if mr == nil {
			mr = map[string]any{}
			spec["matchResources"] = mr
		}
		add(mr)
	}
}

// onlyMode adds the requirement admissionLabel=mode to a namespace selector.
func onlyMode(sel *metav1.LabelSelector, mode string) {
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[admissionLabel] = mode
}

// policyErr is the outcome of installPolicy, which TestMain runs before the tests start.
var policyErr error

// installPolicy installs the MutatingAdmissionPolicy of `kubectl sidesync policy`. TestMain does,
// while the images are imported: the API server type-checks a policy's CEL when it is created,
// and once every test had started, the creation outlasted its 30 s request deadline (504). A
// POST that timed out may still have been done: a 409 then is the policy there.
func installPolicy(ctx context.Context, n *kubetest.Node) error {
	policies, bindings, err := admission.Policy(admission.PolicyOptions{Version: exampleVersion, Image: sidesyncImage, Namespace: "sidesync-system"})
	if err != nil {
		return err
	}
	var objs []any
	paths := map[int]string{}
	for _, p := range policies {
		paths[len(objs)] = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
		objs = append(objs, p)
	}
	for _, b := range bindings {
		if b.Spec.MatchResources == nil || b.Spec.MatchResources.NamespaceSelector == nil {
			return fmt.Errorf("binding %s selects no namespaces", b.Name)
		}
		onlyMode(b.Spec.MatchResources.NamespaceSelector, "policy")
		paths[len(objs)] = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
		objs = append(objs, b)
	}
	for i, o := range objs {
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			err = n.Post(ctx, paths[i], o)
			var apiErr *kubetest.APIError
			if err == nil || (attempt > 0 && errors.As(err, &apiErr) && apiErr.Code == http.StatusConflict) {
				err = nil
				break
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sidesyncPolicy fails the test if TestMain could not install sidesync's policy.
func sidesyncPolicy(t testing.TB) {
	t.Helper()
	if policyErr != nil {
		t.Fatalf("sidesync's policy: %v", policyErr)
	}
}

// TestWebhookCronJob: label a namespace, create a CronJob of the OSM example's plain Job, and
// its Job completes, its pod wrapped at admission by the webhook after the mesh stand-in added
// Envoy.
func TestWebhookCronJob(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncChart(t, n)
	runCronJob(t, n, "webhook")
}

// TestPolicyCronJob is TestWebhookCronJob with the MutatingAdmissionPolicy of `kubectl sidesync
// policy` and no webhook of sidesync's: the same pod, the same Job, complete.
func TestPolicyCronJob(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncPolicy(t)
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
	if !strings.HasSuffix(p.Metadata.Annotations[contract.InjectedAnnotation], " init-copy") {
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // the next minute, under load
	defer cancel()
	var name string
	err := n.WaitList(ctx, "/apis/batch/v1/namespaces/"+ns+"/jobs", nil, func(items []json.RawMessage) bool {
		for _, item := range items {
			var j struct {
				Metadata struct {
					Name            string
					OwnerReferences []struct{ Kind, Name string }
				}
			}
			if json.Unmarshal(item, &j) != nil {
				continue
			}
			for _, o := range j.Metadata.OwnerReferences {
				if o.Kind == "CronJob" && o.Name == cron {
					name = j.Metadata.Name
				}
			}
		}
		return name != ""
	})
	if err != nil {
		t.Fatalf("CronJob %s created no Job in 3 minutes: %v", cron, err)
	}
	return name
}

// TestChartWarnings: with the chart installed, creating a plain Job in a namespace whose mesh
// injects classic sidecars (Istio's istio-injection=enabled) prints sidesync's warning; the same
// Job in a namespace labelled for sidesync too prints none, as its pods will be wrapped.
func TestChartWarnings(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncChart(t, n)
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "report"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 10001, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{"name": "report", "image": "example.com/report:1", "command": []any{"/report"},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}}}}}}}
	// One namespace, labelled in two steps: the warning seen first proves the webhook is called
	// for it, so the silence after the second label is sidesync's answer, not a selector that has
	// not caught up.
	ns := namespaceWithoutMesh(t, n, "chart-warnings")
	for _, tc := range []struct {
		labels map[string]any
		warn   bool
	}{
		{map[string]any{"istio-injection": "enabled", admissionLabel: "webhook"}, true},
		{map[string]any{admission.InjectLabel: admission.Enabled}, false},
	} {
		n.Send(t, "PATCH", "/api/v1/namespaces/"+ns, map[string]any{"metadata": map[string]any{"labels": tc.labels}})
		// The API server and the injector read namespaces from watches: wait for the label to count.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			r := n.Send(t, "POST", "/apis/batch/v1/namespaces/"+ns+"/jobs?dryRun=All", job)
			if r.Code != 201 {
				t.Fatalf("%s: %d %s", ns, r.Code, r.Body)
			}
			var ours []string // sidesync's warnings, not Pod Security's
			for _, w := range r.Warnings {
				if strings.HasPrefix(w, "sidesync: ") {
					ours = append(ours, w)
				}
			}
			got := len(ours) > 0 && strings.Contains(strings.Join(ours, "\n"), "sidecar-never-quits")
			if got == tc.warn {
				t.Logf("namespace labels %v added: sidesync's warnings %q", tc.labels, ours)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace labels %v added: warnings %q after 2 minutes, want a warning: %v", tc.labels, r.Warnings, tc.warn)
			}
			time.Sleep(200 * time.Millisecond) // polling the API server's watches, bounded by deadline
		}
	}
}
