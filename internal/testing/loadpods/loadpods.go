// Package loadpods builds the pods and AdmissionReviews of the admission webhook's benchmarks
// (cmd/sidesync-injector's load_test.go, and the side-by-side comparison with Istio's injector in
// bench/istioinject): realistic pods of a Job or Deployment, padded to a size in bytes of JSON
// with env vars of their apps, so that a benchmark's cost can be read per pod size; and what
// those benchmarks share to offer them (OpenLoop, HTTPSClient) and to read the latencies
// (Percentiles).
package loadpods

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Size is a pod's size in bytes of JSON, and its name in a benchmark's case ("16KiB").
type Size struct {
	Name  string
	Bytes int
}

// The sizes the benchmarks use. A pod is padded up to its size; one whose fields alone are
// larger (a 1 KiB pod with several apps) is left as it is.
var (
	KiB1   = Size{"1KiB", 1 << 10}
	KiB16  = Size{"16KiB", 16 << 10}
	KiB64  = Size{"64KiB", 64 << 10}
	KiB256 = Size{"256KiB", 256 << 10}
)

// lean is the largest size whose containers are kept lean (a name, an image, a command, one
// env var): a fully described container does not fit in 1 KiB beside another.
const lean = 2 << 10

// Meshed is a Pod of about size bytes of JSON in namespace ns (empty: none written) as Istio's
// injector leaves it: over 2 KiB, a web app and a worker (each with a command, args, ports, env,
// resources, probes, mounts), Istio's istio-init and istio-proxy; up to 2 KiB, one lean app and
// a lean istio-proxy (a full Istio-injected pod is over 1 KiB without any padding).
func Meshed(name, ns string, size int) map[string]any {
	meta := meta(name, ns, map[string]any{"security.istio.io/tlsMode": "istio", "service.istio.io/canonical-name": "orders"})
	meta["annotations"] = map[string]any{"sidecar.istio.io/status": `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"]}`}
	app := webApp()
	proxy := map[string]any{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
		"args":  []any{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"},
		"ports": []any{map[string]any{"containerPort": 15090, "name": "http-envoy-prom"}}}
	apps := []map[string]any{app}
	spec := map[string]any{"restartPolicy": "Never", "containers": []any{app, proxy}, "serviceAccountName": "default"}
	if size > lean {
		describe(app)
		worker := worker("worker")
		apps = append(apps, worker)
		spec["containers"] = []any{app, worker, proxy}
		proxy["env"] = []any{
			map[string]any{"name": "PILOT_CERT_PROVIDER", "value": "istiod"},
			map[string]any{"name": "CA_ADDR", "value": "istiod.istio-system.svc:15012"},
			map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
			map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
			map[string]any{"name": "ISTIO_META_APP_CONTAINERS", "value": "app,worker"},
		}
		proxy["readinessProbe"] = map[string]any{"httpGet": map[string]any{"path": "/healthz/ready", "port": 15021}, "periodSeconds": 15}
		proxy["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"cpu": "2", "memory": "1Gi"}}
		proxy["securityContext"] = map[string]any{"runAsUser": 1337, "runAsGroup": 1337, "runAsNonRoot": true, "readOnlyRootFilesystem": true}
		proxy["volumeMounts"] = []any{map[string]any{"name": "istio-envoy", "mountPath": "/etc/istio/proxy"}}
		spec["initContainers"] = []any{map[string]any{"name": "istio-init", "image": "docker.io/istio/proxyv2:1.28.0",
			"args":            []any{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-b", "*"},
			"securityContext": map[string]any{"capabilities": map[string]any{"add": []any{"NET_ADMIN", "NET_RAW"}, "drop": []any{"ALL"}}}}}
		spec["volumes"] = []any{map[string]any{"name": "istio-envoy", "emptyDir": map[string]any{"medium": "Memory"}}, configVolume()}
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	pad(pod, apps, size)
	return pod
}

// Unmeshed is a Pod of about size bytes of JSON in namespace ns (empty: none written) with apps
// app containers and no sidecar yet: the pod as its owner submits it, before any injector. Its
// label sidecar.istio.io/inject=true asks for Istio's proxy, so that both Istio's injector and
// sidesync's (which reads the request as announcing the sidecar) change it. The first app is a web
// app ("app"), the others workers ("worker", "worker-2", ...); over 2 KiB each is fully described
// (resources, probes, mounts), up to 2 KiB lean.
func Unmeshed(name, ns string, size, apps int) map[string]any {
	meta := meta(name, ns, map[string]any{"sidecar.istio.io/inject": "true"})
	all := []map[string]any{webApp()}
	for i := 1; i < apps; i++ {
		n := "worker"
		if i > 1 {
			n = fmt.Sprintf("worker-%d", i)
		}
		all = append(all, worker(n))
	}
	containers := make([]any, len(all))
	for i, c := range all {
		containers[i] = c
	}
	spec := map[string]any{"restartPolicy": "Never", "containers": containers, "serviceAccountName": "default"}
	if size > lean {
		describe(all[0])
		spec["volumes"] = []any{configVolume()}
	} else {
		for _, c := range all[1:] {
			delete(c, "resources")
			delete(c, "volumeMounts")
		}
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	pad(pod, all, size)
	return pod
}

func meta(name, ns string, labels map[string]any) map[string]any {
	l := map[string]any{"app": "orders", "version": "v7"}
	for k, v := range labels {
		l[k] = v
	}
	m := map[string]any{"name": name, "labels": l}
	if ns != "" {
		m["namespace"] = ns
	}
	return m
}

// webApp is the web app, lean: describe adds the rest.
func webApp() map[string]any {
	return map[string]any{"name": "app", "image": "registry.example.com/orders/api:7.4.1",
		"command": []any{"/app/orders-api"}, "args": []any{"--listen=:8080", "--db=postgres://db:5432/orders"},
		"ports": []any{map[string]any{"containerPort": 8080, "name": "http"}},
		"env":   []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}}}
}

// describe gives the web app its resources, readiness probe and mount.
func describe(app map[string]any) {
	app["resources"] = map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}, "limits": map[string]any{"memory": "512Mi"}}
	app["readinessProbe"] = map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": 8080}, "periodSeconds": 5}
	app["volumeMounts"] = []any{map[string]any{"name": "config", "mountPath": "/etc/orders"}}
}

func worker(name string) map[string]any {
	return map[string]any{"name": name, "image": "registry.example.com/orders/worker:7.4.1",
		"command": []any{"/app/orders-worker", "--queue=orders"}, "env": []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}},
		"resources":    map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
		"volumeMounts": []any{map[string]any{"name": "config", "mountPath": "/etc/orders"}}}
}

func configVolume() map[string]any {
	return map[string]any{"name": "config", "configMap": map[string]any{"name": "orders"}}
}

// pad adds env vars to apps in turn, each about 100 bytes of JSON, while pod stays within size.
func pad(pod map[string]any, apps []map[string]any, size int) {
	value := strings.Repeat("0123456789abcdef", 5)[:72]
	have := len(JSON(pod))
	per := len(JSON(map[string]any{"name": "FEATURE_00000", "value": value})) + 1
	for i := 0; have+(i+1)*per <= size; i++ {
		c := apps[i%len(apps)]
		c["env"] = append(c["env"].([]any), map[string]any{"name": fmt.Sprintf("FEATURE_%05d", i), "value": value})
	}
}

// JSON is v in JSON; it panics on a value encoding/json refuses, which the builders never make.
func JSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Review is the AdmissionReview (admission.k8s.io/v1) the API server sends for the creation of
// pod in ns by the Job controller.
func Review(uid, ns string, pod []byte) []byte {
	podGVK := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGVR := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	dry := false
	return JSON(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(uid), Kind: podGVK, Resource: podGVR,
			RequestKind: &podGVK, RequestResource: &podGVR, Namespace: ns, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:job-controller",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
			Object: runtime.RawExtension{Raw: pod}, DryRun: &dry,
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kube-controller-manager"}`)}},
	})
}

// OpenLoop calls fire n times at rate per second, each call on its own goroutine at its
// scheduled time (start + i/rate), whatever the calls before it take: a slow answer never
// lowers the offered rate. A ticker wakes the loop; each wake-up issues every call that is due,
// so a late wake-up catches up instead of dropping calls. It returns when every call has
// returned, with how long the issuing took.
func OpenLoop(rate, n int, fire func(i int, scheduled time.Time)) time.Duration {
	interval := time.Second / time.Duration(rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; {
		due := min(n, int(time.Since(start)/interval)+1)
		for ; i < due; i++ {
			j, sched := i, start.Add(time.Duration(i)*interval)
			wg.Go(func() { fire(j, sched) })
		}
		if i < n {
			<-tick.C
		}
	}
	issued := time.Since(start)
	wg.Wait()
	return issued
}

// Percentiles of ds, in milliseconds.
func Percentiles(ds []time.Duration, qs ...float64) []float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	out := make([]float64, len(qs))
	for i, q := range qs {
		if len(s) == 0 {
			out[i] = math.NaN()
			continue
		}
		k := min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)
		out[i] = float64(s[max(k, 0)]) / 1e6
	}
	return out
}

// HTTPSClient trusts caPEM and speaks HTTP/2 when the server does, as the API server's webhook
// client does: one connection, many streams.
func HTTPSClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute}}
}

// Create creates a pod (its JSON) through the API server at apiURL as token, with query added to
// the path ("?dryRun=All" or ""), and returns the time from the request sent to the answer read,
// and the pod the API server answered with. Any answer but 201 Created is an error naming ns.
func Create(api *http.Client, apiURL, token, ns, query string, pod []byte) (time.Duration, []byte, error) {
	req, err := http.NewRequest("POST", apiURL+"/api/v1/namespaces/"+ns+"/pods"+query, bytes.NewReader(pod))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := api.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		return 0, nil, fmt.Errorf("%s: %d %.300s", ns, resp.StatusCode, data)
	}
	return took, data, nil
}

// EnvInt is the positive integer in the environment variable name (a benchmark's knob), or def
// when it is unset; anything else fails b, naming the variable.
func EnvInt(b testing.TB, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
