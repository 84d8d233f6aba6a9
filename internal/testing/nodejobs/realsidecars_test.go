//go:build linux

package nodejobs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
	"github.com/sidesync/sidesync/internal/testing/realsidecar"
)

// --- Istio's real pilot-agent as istio-proxy ------------------------------------------------------

// realIstioImage is the istio-proxy image of TestRealIstioJob: Istio's real pilot-agent (built by
// .ci/build-istio.sh) as its entrypoint, the Envoy stand-in (internal/testing/realsidecar/envoystandin)
// as /usr/local/bin/envoy, where Istio's proxyv2 image has Envoy, the bootstrap template where
// that image has it, and a self-signed workload certificate where the agent looks for
// file-mounted certificates, so that it asks no CA: it runs offline, as realsidecar runs it.
const realIstioImage = "sidesync.invalid/istio-proxyv2-real:1"

// realIstioTemplate is where Istio's proxyv2 image keeps the bootstrap template.
const realIstioTemplate = "/var/lib/istio/envoy/envoy_bootstrap_tmpl.json"

var realIstioOnce struct {
	sync.Once
	err error
}

// realIstioAgent returns the directory holding pilot-agent and envoy_bootstrap.json, or skips
// the test (fails it with SIDESYNC_ISTIO_REQUIRED) when they are not built.
func realIstioAgent(t *testing.T) string {
	t.Helper()
	dir := realsidecar.IstioBinDir()
	for _, f := range []string{"pilot-agent", "envoy_bootstrap.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			msg := fmt.Sprintf("no %s in %s: build it with `bash .ci/build-istio.sh` (or set %s)", f, dir, realsidecar.EnvIstioBinDir)
			if r := os.Getenv(realsidecar.EnvIstioRequired); r != "" && r != "0" {
				t.Fatalf("%s; %s is set, so this is a failure", msg, realsidecar.EnvIstioRequired)
			}
			t.Skip(msg)
		}
	}
	if stamp, err := os.ReadFile(filepath.Join(dir, "stamp")); err == nil {
		t.Logf("istio-proxy runs %s", strings.TrimSpace(string(stamp)))
	}
	return dir
}

// importRealIstio imports realIstioImage, with realsidecar's Envoy stand-in, once per process.
func importRealIstio(t *testing.T, n *kubetest.Node, istioDir string) {
	t.Helper()
	envoy := realsidecar.EnvoyStandIn(t) // built once per process, outside the Once: it may fail the test
	realIstioOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodejobs-istio-")
		if err != nil {
			realIstioOnce.err = err
			return
		}
		defer os.RemoveAll(dir) // ImportImages has read the files by then
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// The agent's working directory in the container is /: the certificates that spare it a
		// CA go where realsidecar lays them out for it.
		files := map[string]string{
			"/usr/local/bin/pilot-agent": filepath.Join(istioDir, "pilot-agent"),
			"/usr/local/bin/envoy":       envoy,
			realIstioTemplate:            filepath.Join(istioDir, "envoy_bootstrap.json"),
		}
		certs, err := realsidecar.WorkloadCertFiles()
		if err != nil {
			realIstioOnce.err = err
			return
		}
		for rel, b := range certs {
			local := filepath.Join(dir, strings.ReplaceAll(rel, "/", "_"))
			if err := os.WriteFile(local, b, 0o644); err != nil {
				realIstioOnce.err = err
				return
			}
			files["/"+rel] = local
		}
		realIstioOnce.err = n.ImportImages(ctx, kubetest.Image{Ref: realIstioImage,
			Files:      files,
			Entrypoint: []string{"/usr/local/bin/pilot-agent"},
		})
	})
	if realIstioOnce.err != nil {
		t.Fatalf("the real istio-proxy image: %v", realIstioOnce.err)
	}
}

// realIstioStatus is the sidecar.istio.io/status annotation Istio's injector writes for what
// injectRealIstio adds.
const realIstioStatus = `{"initContainers":null,"containers":["istio-proxy"],"volumes":["workload-socket","istio-envoy","istio-data"],"imagePullSecrets":null,"revision":"default"}`

// injectRealIstio does to a Job's pod template what Istio's injector does at admission, as far
// as sidesync can tell: the classic istio-proxy container running the real agent, with Istio's
// PROXY_CONFIG (offline: the discovery address is never dialled, as only Envoy's xDS stream
// would), ports, readiness probe, security context and emptyDir volumes, and the
// sidecar.istio.io/status annotation. The agent is its container's PID 1, as in a real pod.
func injectRealIstio(t *testing.T, job map[string]any) {
	t.Helper()
	tmpl, spec := podTemplate(job)
	meta := tmpl["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann["sidecar.istio.io/status"] = realIstioStatus
	proxyConfig, _ := json.Marshal(map[string]any{
		"binaryPath": "/usr/local/bin/envoy", "discoveryAddress": "127.0.0.1:15012",
		"statusPort": 15020, "proxyAdminPort": 15000,
	})
	fieldRef := func(name, path string) map[string]any {
		return map[string]any{"name": name, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": path}}}
	}
	containers, _ := spec["containers"].([]any)
	spec["containers"] = append(containers, map[string]any{
		"name": "istio-proxy", "image": realIstioImage, "imagePullPolicy": "Never",
		"args": []any{"proxy", "sidecar", "--templateFile", realIstioTemplate,
			"--proxyLogLevel=warning", "--log_output_level=default:info"},
		"env": []any{
			map[string]any{"name": "PROXY_CONFIG", "value": string(proxyConfig)},
			map[string]any{"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"},
			fieldRef("POD_NAME", "metadata.name"), fieldRef("POD_NAMESPACE", "metadata.namespace"),
			fieldRef("INSTANCE_IP", "status.podIP"), fieldRef("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		},
		"ports": []any{
			map[string]any{"name": "http-envoy-prom", "containerPort": 15090, "protocol": "TCP"},
		},
		"readinessProbe": map[string]any{
			"httpGet":          map[string]any{"path": "/healthz/ready", "port": 15021},
			"periodSeconds":    15,
			"timeoutSeconds":   3,
			"failureThreshold": 4,
		},
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
			"privileged": false, "readOnlyRootFilesystem": true,
			"runAsGroup": 1337, "runAsNonRoot": true, "runAsUser": 1337,
		},
		"volumeMounts": []any{
			map[string]any{"name": "workload-socket", "mountPath": "/var/run/secrets/workload-spiffe-uds"},
			map[string]any{"name": "istio-data", "mountPath": "/var/lib/istio/data"},
			map[string]any{"name": "istio-envoy", "mountPath": "/etc/istio/proxy"},
		},
	})
	volumes, _ := spec["volumes"].([]any)
	spec["volumes"] = append(volumes,
		map[string]any{"name": "workload-socket", "emptyDir": map[string]any{}},
		map[string]any{"name": "istio-data", "emptyDir": map[string]any{}},
		map[string]any{"name": "istio-envoy", "emptyDir": map[string]any{"medium": "Memory"}},
	)
}

// TestRealIstioJob runs the Istio example Job as deploy/examples/istio.yaml writes it (init-copy),
// in a pod whose istio-proxy is Istio's real pilot-agent (with the Envoy stand-in as its Envoy),
// added as Istio's injector adds it, in a namespace with no mesh stand-in: sidesync finds the
// sidecar through the downward API, waits for 15021/healthz/ready (which the stand-in's status
// listener forwards to the agent), runs the app, POSTs 15020/quitquitquit, and the agent exits
// 0 (SIDECARS.md 3.3: it kills Envoy at once and its proxy command returns nil). The Job
// completes.
func TestRealIstioJob(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	istioDir := realIstioAgent(t)
	importRealIstio(t, n, istioDir)

	ns := namespaceWithoutMesh(t, n, "real-istio")
	job := streamObject(t, exampleStream(t, "istio", "init-copy"), "Job")
	name := job["metadata"].(map[string]any)["name"].(string)
	injectRealIstio(t, job)
	begin := time.Now()
	n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
	p := waitJob(t, n, ns, name, "Complete", begin)

	app := terminated(t, n, ns, p, "reconcile", 0)
	mustContain(t, "reconcile", app, `INFO detected sidecar sidecar=istio from="pod annotations in `)
	mustContain(t, "reconcile", app, `INFO sidecar ready sidecar=istio .*url=http://127\.0\.0\.1:15021/healthz/ready`)
	mustContain(t, "reconcile", app, `app: check http://127\.0\.0\.1:15021/healthz/ready 200`)
	mustContain(t, "reconcile", app, quitDone("istio")+` .*url=http://127\.0\.0\.1:15020/quitquitquit `)
	if t.Failed() {
		t.Logf("log of reconcile:\n%s", app)
	}

	proxy := terminated(t, n, ns, p, "istio-proxy", 0)
	if st := p.status("istio-proxy"); st != nil && st.RestartCount != 0 {
		t.Errorf("istio-proxy restarted %d times", st.RestartCount)
	}
	// The agent rendered the bootstrap and started the stand-in as Envoy; sidesync's probe
	// went through Envoy's status listener to the agent, which found Envoy ready; the quit
	// came to the agent, which killed Envoy without a drain and ended.
	mustContain(t, "istio-proxy", proxy, `envoy-standin started pid=\d+ admin=127\.0\.0\.1:15000 agent=127\.0\.0\.1:15020 status=0\.0\.0\.0:15021`)
	mustContain(t, "istio-proxy", proxy, `Workload is using file mounted certificates`)
	mustContain(t, "istio-proxy", proxy, `envoy-standin status .*path=/healthz/ready status=200`)
	mustContain(t, "istio-proxy", proxy, `Envoy proxy is ready`)
	mustContain(t, "istio-proxy", proxy, `handling /quitquitquit, notifying pilot-agent to exit`)
	mustContain(t, "istio-proxy", proxy, `Agent already drained, exiting immediately`)
	if strings.Contains(proxy, "envoy-standin admin ") {
		t.Errorf("istio-proxy: the quit went to Envoy's admin (a drain), want a kill without drain")
	}
	if t.Failed() {
		t.Logf("log of istio-proxy:\n%s", proxy)
	}
}

// --- detection through the Kubernetes API ---------------------------------------------------------

// bakedImage is an image with sidesync baked in (docs/IMAGE.md): /sidesync and the app.
const bakedImage = "sidesync.invalid/baked-job:1"

// bakedImageOf is bakedImage, of the binaries in dir.
func bakedImageOf(dir string) kubetest.Image {
	return kubetest.Image{Ref: bakedImage,
		Files: map[string]string{"/sidesync": filepath.Join(dir, "sidesync"), "/app": filepath.Join(dir, "app")}}
}

// rbacAccount is the ServiceAccount deploy/examples/rbac.yaml creates.
const rbacAccount = "sidesync-job"

// applyRBAC creates the objects of deploy/examples/rbac.yaml in ns, as `kubectl apply -n ns -f`
// would, but the kinds in skip, and returns the kinds it created.
func applyRBAC(t *testing.T, n *kubetest.Node, ns string, skip ...string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, doc := range splitYAML(data) {
		obj := yamlToMap(t, doc)
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		if contains(skip, kind) {
			continue
		}
		var path string
		switch kind {
		case "ServiceAccount":
			path = "/api/v1/namespaces/" + ns + "/serviceaccounts"
		case "Role":
			path = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles"
		case "RoleBinding":
			path = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings"
		default:
			t.Fatalf("rbac.yaml: unexpected kind %q", kind)
		}
		n.Create(t, path, obj)
		created = append(created, kind)
	}
	return created
}

// apiDetectCase is one Job of TestDetectThroughAPI.
type apiDetectCase struct {
	name      string
	meta      map[string]any // the pod template's labels and annotations: what asks the mesh
	profile   string         // the sidecar's profile
	container string         // the sidecar's container, which the mesh stand-in adds
	binding   bool           // create rbac.yaml's RoleBinding
	flags     []string       // sidesync's flags
}

// bakedJob is a Job whose container runs `/sidesync FLAGS -- /app` from an image with sidesync
// baked in, with no downward-API volume, under rbac.yaml's ServiceAccount, and with POD_NAME and
// POD_NAMESPACE as rbac.yaml's comment says.
func bakedJob(c apiDetectCase) map[string]any {
	fieldRef := func(name, path string) map[string]any {
		return map[string]any{"name": name, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": path}}}
	}
	command := append(append([]any{"/sidesync"}, anySlice(c.flags)...), "--", "/app")
	env := []any{fieldRef("POD_NAME", "metadata.name"), fieldRef("POD_NAMESPACE", "metadata.namespace")}
	if u := readyURL(c.profile); u != "" {
		env = append(env, map[string]any{"name": "APP_CHECK_URL", "value": u})
	}
	return map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "baked"},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template": map[string]any{
				"metadata": c.meta,
				"spec": map[string]any{
					"restartPolicy":      "Never",
					"serviceAccountName": rbacAccount,
					"securityContext": map[string]any{
						"runAsNonRoot": true, "runAsUser": 10001,
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{map[string]any{
						"name": "job", "image": bakedImage, "imagePullPolicy": "Never",
						"command": command, "env": env,
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
							"readOnlyRootFilesystem": true,
						},
					}},
				},
			},
		},
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestDetectThroughAPI runs Jobs from an image with sidesync baked in, with no downward-API
// volume, in namespaces where the mesh stand-in injects a sidecar after admission:
//
//   - with deploy/examples/rbac.yaml applied as written, sidesync reads its own Pod through the
//     API (the ServiceAccount's token, 10.0.0.1:443), finds the injected Istio or OSM sidecar
//     there (from="the Kubernetes API, pod NS/NAME"), waits for it, runs the app, tells the
//     sidecar to quit, and the Job completes;
//   - without the RoleBinding, the API answers 403: as README and FAULTS.md say, sidesync warns
//     "detection could not look" with the exact RBAC fix and runs the command at once with its
//     exit code (0), and nothing tells the sidecar to quit (the pod runs on); with
//     --require-sidecar it does not run the command and exits 69.
func TestDetectThroughAPI(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	istio := map[string]any{"labels": map[string]any{"sidecar.istio.io/inject": "true"}}
	osm := map[string]any{"annotations": map[string]any{"openservicemesh.io/sidecar-injection": "enabled"}}
	for _, c := range []apiDetectCase{
		{name: "istio", meta: istio, profile: "istio", container: "istio-proxy", binding: true},
		{name: "osm", meta: osm, profile: "osm", container: "envoy", binding: true},
		{name: "forbidden", meta: istio, profile: "istio", container: "istio-proxy"},
		{name: "forbidden-require-sidecar", meta: istio, profile: "istio", container: "istio-proxy", flags: []string{"--require-sidecar"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runAPIDetect(t, n, c)
		})
	}
}

func runAPIDetect(t *testing.T, n *kubetest.Node, c apiDetectCase) {
	ns := namespace(t, n, "detect-api-"+c.name)
	var skip []string
	if !c.binding {
		skip = []string{"RoleBinding"}
	}
	t.Logf("rbac.yaml applied: %v", applyRBAC(t, n, ns, skip...))
	// RBAC reads bindings from a cache: make sure it answers for the account as the pod will
	// be answered, before the pod asks (a probe pod name that does not exist: 404 if the
	// account may get pods, 403 if not).
	token := n.ServiceAccountToken(t, ns, rbacAccount)
	probe := "/api/v1/namespaces/" + ns + "/pods/no-such-pod"
	if c.binding {
		n.WaitForStatus(t, token, http.MethodGet, probe, http.StatusNotFound)
	} else if code := n.DoAs(t, token, http.MethodGet, probe, nil, nil); code != http.StatusForbidden {
		t.Fatalf("GET %s as %s without the RoleBinding: %d, want 403", probe, rbacAccount, code)
	}

	job := bakedJob(c)
	n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
	begin := time.Now()
	podName := waitJobPod(t, n, ns, "baked")
	p := getPod(t, n, ns, podName)
	if !containsContainer(p, c.container) {
		t.Fatalf("the mesh stand-in did not inject %s: %+v", c.container, p.Spec.Containers)
	}
	where := regexp.QuoteMeta(ns + "/" + podName)

	if c.binding {
		p = waitJob(t, n, ns, "baked", "Complete", begin)
		log := terminated(t, n, ns, p, "job", 0)
		mustContain(t, "job", log, `INFO detected sidecar sidecar=`+c.profile+` from="the Kubernetes API, pod `+where+`"`)
		if u := readyURL(c.profile); u != "" {
			mustContain(t, "job", log, `app: check `+regexp.QuoteMeta(u)+` 2\d\d`)
		}
		mustContain(t, "job", log, `INFO sidecar quit sidecar=`+c.profile)
		if strings.Contains(log, "could not look") {
			t.Errorf("job: detection warned that it could not look")
		}
		if t.Failed() {
			t.Logf("log of job:\n%s", log)
		}
		scLog := terminated(t, n, ns, p, c.container, 0)
		mustContain(t, c.container, scLog, logEnvoyQuit)
		return
	}

	// Without the binding: the command's container ends (the pod does not: its sidecar runs on).
	p = waitPod(t, n, ns, podName, jobTimeout, "with job terminated", func(p pod) bool {
		st := p.status("job")
		return st != nil && st.State.Terminated != nil
	})
	t.Logf("container job terminated %s after the Job's creation", time.Since(begin).Round(100*time.Millisecond))
	forbidden := `403 Forbidden: the service account ` + regexp.QuoteMeta(ns+":"+rbacAccount) + ` may not get its own pod ` + where
	fix := regexp.QuoteMeta("kubectl create role sidesync-get-pods --verb=get --resource=pods -n "+ns) + ".*" +
		regexp.QuoteMeta("kubectl create rolebinding sidesync-get-pods --role=sidesync-get-pods --serviceaccount="+ns+":"+rbacAccount+" -n "+ns)
	var log string
	if contains(c.flags, "--require-sidecar") {
		log = terminated(t, n, ns, p, "job", 69)
		mustContain(t, "job", log, `ERROR no sidecar configured or detected, and --require-sidecar is set: not running the command .*`+forbidden)
		mustContain(t, "job", log, `ERROR no sidecar configured or detected, and --require-sidecar is set.* fix=.*`+fix)
		if strings.Contains(log, "app: ") {
			t.Errorf("job: the app ran, want it not run with --require-sidecar")
		}
	} else {
		log = terminated(t, n, ns, p, "job", 0)
		mustContain(t, "job", log, `WARN no sidecar configured or detected, but detection could not look: running the command without waiting .*err="`+forbidden)
		mustContain(t, "job", log, `WARN no sidecar configured or detected, but detection could not look.* fix=.*`+fix)
		mustContain(t, "job", log, `app: exit 0`)
	}
	if strings.Contains(log, "sidecar quit") || strings.Contains(log, "detected sidecar") {
		t.Errorf("job: sidesync handled a sidecar it could not have found")
	}
	if t.Failed() {
		t.Logf("log of job:\n%s", log)
	}
	// What the warning is about: nobody tells the sidecar to quit, so the pod runs on.
	p = waitPod(t, n, ns, podName, jobTimeout, "with "+c.container+" running", func(p pod) bool {
		st := p.status(c.container)
		return st != nil && st.State.Running != nil
	})
	if st := p.status("job"); st == nil || st.State.Terminated == nil || st.RestartCount != 0 {
		t.Errorf("container job: want it terminated once, not restarted: %s", describe(p))
	}
	if cond := n.WaitJob(t, ns, "baked", time.Second); cond != "" {
		t.Errorf("Job baked: %s, want it still active with its sidecar running", cond)
	}
}

// containsContainer reports whether the pod's spec has the container.
func containsContainer(p pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}
