//go:build linux

package nodejobs

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// commandlessImage is an app image whose ENTRYPOINT does the work, as most images' do: the
// stand-in app as /migrate, checking the Cloud SQL Auth Proxy's readiness at start.
const commandlessImage = "sidesync.invalid/commandless-migrate:1"

// commandlessJob is the Cloud SQL example's Job with its app written as many manifests write
// one: no command, only args, for commandlessImage's ENTRYPOINT. Without native conversion,
// inject would need the image's ENTRYPOINT from its registry (--resolve) to wrap it.
func commandlessJob(t testing.TB, n *kubetest.Node, name string) map[string]any {
	t.Helper()
	importImage(t, n, kubetest.Image{Ref: commandlessImage,
		Files:      map[string]string{"/migrate": filepath.Join(bins, "app")},
		Entrypoint: []string{"/migrate"},
		Env:        []string{"APP_CHECK_URL=" + readyURL("cloudsql")}})
	job := convertibleCloudSQL(t, name)
	_, spec := podTemplate(job)
	app := spec["containers"].([]any)[0].(map[string]any)
	delete(app, "command")
	app["image"], app["imagePullPolicy"] = commandlessImage, "Never"
	return job
}

// TestNativeCommandless: a command-less app beside the Cloud SQL Auth Proxy (the real one),
// injected by `kubectl sidesync inject --native always` without --resolve: the proxy is made
// native, no app is wrapped and no registry is read (the image's registry does not exist), and
// the Job completes as the kubelet orders it.
func TestNativeCommandless(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	stream, report := injectNative(t, writeJob(t, commandlessJob(t, n, "db-migrate")), "always")
	line := reportOf(t, report, "Job/db-migrate")
	t.Logf("report: %s", report)
	if !strings.Contains(line, "made native cloud-sql-proxy (startup probe ") || !strings.Contains(line, "apps not wrapped") {
		t.Fatalf("want cloud-sql-proxy made native and no app wrapped: %s", line)
	}
	if strings.Contains(report, "warning") {
		t.Errorf("inject warned: %s", report)
	}
	ns := namespace(t, n, "native-commandless")
	name := createOne(t, n, ns, "Job", stream)
	p := waitJob(t, n, ns, name, "Complete", time.Now())
	checkNativeRun(t, n, ns, p, "migrate", "cloud-sql-proxy", readyURL("cloudsql"))
}

// oldNode is the Node object TestNativeWebhook adds, with no kubelet behind it.
const oldNode = "nodejobs-old-kubelet"

// oldKubelet is its kubelet's version: older than kubeversion.NativeKubelet (1.29), and than
// 1.28, where native sidecars came in behind a feature gate.
const oldKubelet = "v1.27.16"

// TestNativeWebhook: the chart's webhook with --native auto (the chart's default), in a
// namespace selected for it, on the node of v1.37 and, once added, a Node object whose kubelet
// is v1.27:
//
//   - before that Node exists, the command-less app of TestNativeCommandless beside the Cloud SQL
//     Auth Proxy is converted (the proxy made native, no wrapper), though the webhook cannot read
//     the app image's registry: it has no need to;
//   - then a pod that may land on the old Node (no nodeSelector) is wrapped, its proxy classic,
//     and the same pod with a nodeSelector that picks only the real node is converted.
//
// All three Jobs complete. The old Node is tainted NoSchedule, so that no pod is scheduled to
// it; the webhook reads no taints, so it still counts for the pods that may land on it.
func TestNativeWebhook(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	sidesyncChart(t, n)
	ns := namespaceWithoutMesh(t, n, "native-webhook")
	n.Send(t, "PATCH", "/api/v1/namespaces/"+ns, map[string]any{"metadata": map[string]any{"labels": map[string]any{
		admission.InjectLabel: admission.Enabled, admissionLabel: "webhook"}}})
	waitSelected(t, n, ns)
	n.CreateServiceAccount(t, ns, "db-migrate") // the examples' Cloud SQL account

	begin := time.Now()
	n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", commandlessJob(t, n, "commandless"))
	waitJobPod(t, n, ns, "commandless") // admitted while every node runs native sidecars

	addOldNode(t, n)
	anywhere, selected := convertibleCloudSQL(t, "anywhere"), convertibleCloudSQL(t, "selected")
	waitNativeChoice(t, n, ns, anywhere, "classic (auto): node "+oldNode)
	_, spec := podTemplate(selected)
	spec["nodeSelector"] = map[string]any{"kubernetes.io/hostname": n.Name}
	for _, j := range []map[string]any{anywhere, selected} {
		n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", j)
	}
	for _, j := range []string{"anywhere", "selected"} {
		waitJobPod(t, n, ns, j)
	}
	deleteOldNode(t, n) // admitted: the other tests need not run beside it

	for _, c := range []struct {
		job, choice string
		native      bool
	}{
		{"commandless", "native (auto): ", true},
		{"anywhere", "classic (auto): node " + oldNode + ` (kubelet "` + oldKubelet + `")`, false},
		{"selected", "native (auto): ", true},
	} {
		p := waitJob(t, n, ns, c.job, "Complete", begin)
		got := p.Metadata.Annotations[admission.NativeAnnotation]
		t.Logf("Job %s: %s: %s", c.job, admission.NativeAnnotation, got)
		if !strings.HasPrefix(got, c.choice) {
			t.Errorf("Job %s: %s %q, want it to start with %q", c.job, admission.NativeAnnotation, got, c.choice)
		}
		if s, ok := p.Metadata.Annotations[admission.SkippedAnnotation]; ok {
			t.Errorf("Job %s: the webhook skipped the pod: %s", c.job, s)
		}
		app := "migrate"
		if c.native {
			checkNativeRun(t, n, ns, p, app, "cloud-sql-proxy", readyURL("cloudsql"))
		} else {
			checkRun(t, n, ns, p, "cloudsql")
		}
	}
}

// addOldNode creates oldNode: a Node object, with no kubelet behind it, whose status says its
// kubelet is oldKubelet, tainted so that nothing is scheduled to it. It is deleted when the
// test ends, if not before.
func addOldNode(t *testing.T, n *kubetest.Node) {
	t.Helper()
	n.Create(t, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": oldNode, "labels": map[string]any{"kubernetes.io/hostname": oldNode}},
		"spec":     map[string]any{"taints": []any{map[string]any{"key": "nodejobs.sidesync.io/no-kubelet", "effect": "NoSchedule"}}},
	})
	t.Cleanup(func() { deleteOldNode(t, n) })
	// The status as a kubelet reports it, through the status subresource.
	n.Send(t, http.MethodPatch, "/api/v1/nodes/"+oldNode+"/status", map[string]any{"status": map[string]any{
		"nodeInfo": map[string]any{"kubeletVersion": oldKubelet}}})
	var got struct {
		Status struct {
			NodeInfo struct{ KubeletVersion string }
		}
	}
	if code := n.Do(t, http.MethodGet, "/api/v1/nodes/"+oldNode, nil, &got); code != http.StatusOK || got.Status.NodeInfo.KubeletVersion != oldKubelet {
		t.Fatalf("Node %s: %d, kubelet %q, want %s", oldNode, code, got.Status.NodeInfo.KubeletVersion, oldKubelet)
	}
}

// deleteOldNode deletes oldNode (a second delete is a 404).
func deleteOldNode(t *testing.T, n *kubetest.Node) {
	t.Helper()
	n.Send(t, http.MethodDelete, "/api/v1/nodes/"+oldNode, nil)
}

// waitNativeChoice waits until the webhook's choice for the Job's pod, asked by dry-run
// creations, starts with want, five times in a row: the chart runs two injectors, each with its
// own watch of nodes, and the API server calls either.
func waitNativeChoice(t *testing.T, n *kubetest.Node, ns string, job map[string]any, want string) {
	t.Helper()
	tmpl, spec := podTemplate(job)
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "probe"}, "spec": spec}
	if meta, ok := tmpl["metadata"].(map[string]any); ok {
		pod["metadata"].(map[string]any)["annotations"] = meta["annotations"]
	}
	deadline := time.Now().Add(2 * time.Minute)
	for inRow, last := 0, ""; inRow < 5; {
		r := n.Send(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods?dryRun=All", pod)
		var got struct {
			Metadata struct{ Annotations map[string]string }
		}
		if r.Code == http.StatusCreated && json.Unmarshal(r.Body, &got) == nil {
			last = got.Metadata.Annotations[admission.NativeAnnotation]
		}
		if strings.HasPrefix(last, want) {
			inRow++
			continue
		}
		inRow = 0
		if time.Now().After(deadline) {
			t.Fatalf("the webhook's choice %q after 2 minutes (%d %s), want %q", last, r.Code, r.Body, want)
		}
		time.Sleep(200 * time.Millisecond) // polling the injectors' watches, bounded by deadline
	}
}
