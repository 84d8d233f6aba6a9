//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauthn "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/inject/resolve"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/registrytest"
)

// The webhook's registry lookups (--resolve) against registries served in-process on loopback:
// go-containerregistry's registry behind basic auth, a registry that accepts connections and
// never answers, and, for the cache, one that counts its reads.

// testRegistry is an in-process registry that counts its requests and, once locked, wants
// basic auth.
type testRegistry struct {
	host           string
	user, password string
	locked         atomic.Bool
	manifests      atomic.Int64 // GET and HEAD of /v2/<repo>/manifests/<reference>
	byTag          atomic.Int64 // those of a tag, not a digest: the reads that start a lookup
	unauthorised   atomic.Int64 // requests answered 401
}

func startTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{user: "puller", password: "s3cret-" + fmt.Sprint(time.Now().UnixNano())}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.locked.Load() {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.password {
				r.unauthorised.Add(1)
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if _, ref, ok := strings.Cut(req.URL.Path, "/manifests/"); ok && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
			r.manifests.Add(1)
			if !strings.HasPrefix(ref, "sha256:") {
				r.byTag.Add(1)
			}
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// dockerConfigSecret is a kubernetes.io/dockerconfigjson Secret with the registry's credential.
func (r *testRegistry) dockerConfigSecret(name string) map[string]any {
	auth := base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, r.host, r.user, r.password, auth)
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name},
		"type": "kubernetes.io/dockerconfigjson", "data": map[string]any{".dockerconfigjson": base64.StdEncoding.EncodeToString([]byte(cfg))}}
}

// stalledRegistry accepts connections and never answers; accepted tells of each, and the
// connections are closed when the test ends.
type stalledRegistry struct {
	host     string
	accepted chan struct{}
}

func startStalledRegistry(t *testing.T) *stalledRegistry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stalledRegistry{host: l.Addr().String(), accepted: make(chan struct{}, 64)}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case s.accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return s
}

// imagePod is pod with the app's image and, when not nil, its imagePullSecrets and service
// account.
func imagePod(name, image string, command []string, labels map[string]string, pullSecrets []string, serviceAccount string) map[string]any {
	p := pod(name, command, labels, nil)
	spec := p["spec"].(map[string]any)
	spec["containers"].([]any)[0].(map[string]any)["image"] = image
	for _, s := range pullSecrets {
		l, _ := spec["imagePullSecrets"].([]any)
		spec["imagePullSecrets"] = append(l, map[string]any{"name": s})
	}
	if serviceAccount != "" {
		spec["serviceAccountName"] = serviceAccount
	}
	return p
}

// appContainer is the stored pod's container "app".
func appContainer(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	for _, c := range p["spec"].(map[string]any)["containers"].([]any) {
		if c := c.(map[string]any); c["name"] == "app" {
			return c
		}
	}
	t.Fatalf("no container app in %v", p)
	return nil
}

func envOf(c map[string]any, name string) (string, bool) {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if e := e.(map[string]any); e["name"] == name {
			v, _ := e["value"].(string)
			return v, true
		}
	}
	return "", false
}

// TestResolveOnAPIServer runs the injector with --resolve on the real kube-apiserver: images
// read with the pods' pull secrets, and a registry that never answers.
func TestResolveOnAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own
	reg := startTestRegistry(t)
	amd := registrytest.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/bin/app-amd64"}, Cmd: []string{"serve", "--port=80"}}
	arm := registrytest.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/bin/app-arm64"}, Cmd: []string{"serve", "--port=80"}}
	image := reg.host + "/team/app:1"
	digest := registrytest.PushIndex(t, image, true, amd, arm)
	reg.locked.Store(true)
	stalledExplicit, stalledWide := startStalledRegistry(t), startStalledRegistry(t)

	c, in, _ := webhookCluster(t, "--resolve", "--registry-allow=127.0.0.0/8")
	sel := map[string]string{admission.InjectLabel: admission.Enabled}
	c.CreateNamespaceLabelled(t, "selected", sel)
	c.CreateNamespaceLabelled(t, "elsewhere", sel)
	c.CreateNamespace(t, "plain")
	c.CreateNamespace(t, "unlabelled")
	c.Create(t, "/api/v1/namespaces/selected/secrets", reg.dockerConfigSecret("regcred"))
	c.Create(t, "/api/v1/namespaces/selected/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "puller"}, "imagePullSecrets": []any{map[string]any{"name": "regcred"}}})

	t.Run("the pod's pull secret: wrapped, pinned to the index, as inject writes", func(t *testing.T) {
		p := imagePod("with-secret", image, nil, nil, []string{"regcred"}, "")
		stored := c.CreatePod(t, "selected", p)
		if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
			t.Fatalf("not wrapped: annotations %v", annotationsOf(stored))
		}
		app := appContainer(t, stored)
		if want := reg.host + "/team/app@" + digest.String(); app["image"] != want {
			t.Errorf("image %v, want %s (the index's digest)", app["image"], want)
		}
		v, ok := envOf(app, contract.Env(contract.FlagPlatformCommands))
		var byPlat map[string][]string
		if !ok || json.Unmarshal([]byte(v), &byPlat) != nil {
			t.Fatalf("%s: %q", contract.Env(contract.FlagPlatformCommands), v)
		}
		wantPlat := map[string][]string{"linux/amd64": {"/bin/app-amd64", "serve", "--port=80"}, "linux/arm64/v8": {"/bin/app-arm64", "serve", "--port=80"}}
		if mustJSONT(t, byPlat) != mustJSONT(t, wantPlat) {
			t.Errorf("platform commands %s, want %s (no attestation manifest)", v, mustJSONT(t, wantPlat))
		}
		// What Apply writes with the same image read by resolve directly, created unselected.
		eps, errs := resolve.Images(context.Background(), []string{image}, resolve.Options{Keychain: fixedKeychain{&authn.Basic{Username: reg.user, Password: reg.password}}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		obj, err := manifest.DecodeJSONObject([]byte(mustJSONT(t, p)))
		if err != nil {
			t.Fatal(err)
		}
		out, r, err := inject.Apply(obj, manifest.TypeMeta{}, inject.Options{Version: testVersion, Image: testImage}, eps)
		if err != nil || !r.Changed {
			t.Fatalf("Apply: %v %+v", err, r)
		}
		want := c.CreatePod(t, "plain", out)
		if g, w := mustJSONT(t, withoutToken(stored)["spec"]), mustJSONT(t, withoutToken(want)["spec"]); g != w {
			t.Errorf("stored spec differs from Apply's:\n got %s\nwant %s", g, w)
		}
	})
	t.Run("the service account's pull secret: wrapped", func(t *testing.T) {
		stored := c.CreatePod(t, "selected", imagePod("by-service-account", image, nil, nil, nil, "puller"))
		if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
			t.Errorf("not wrapped: annotations %v", annotationsOf(stored))
		}
	})
	t.Run("no pull secret: admitted unwrapped, skipped for the registry, nothing from the cache", func(t *testing.T) {
		before := reg.unauthorised.Load()
		for _, tc := range []struct {
			ns      string
			secrets []string
		}{
			{"selected", nil},                  // the same namespace as the pods above, no secret
			{"elsewhere", []string{"regcred"}}, // names a secret its namespace does not have
		} {
			stored := c.CreatePod(t, tc.ns, imagePod(fmt.Sprintf("without-secret-%d", time.Now().UnixNano()), image, nil, nil, tc.secrets, ""))
			ann := annotationsOf(stored)
			if _, ok := ann[contract.InjectedAnnotation]; ok {
				t.Errorf("%s: wrapped without a credential", tc.ns)
			}
			if s, _ := ann[admission.SkippedAnnotation].(string); !strings.HasPrefix(s, admission.ReasonRegistry+": ") || !strings.Contains(s, "UNAUTHORIZED") {
				t.Errorf("%s: skipped annotation %q, want %s: ... with the registry's UNAUTHORIZED", tc.ns, s, admission.ReasonRegistry)
			}
			if app := appContainer(t, stored); app["image"] != image {
				t.Errorf("%s: image %v, want %s unpinned", tc.ns, app["image"], image)
			}
		}
		if reg.unauthorised.Load() == before {
			t.Error("the registry was not asked: the lookups came from another pod's credential")
		}
		if !strings.Contains(in.stderr.String(), "UNAUTHORIZED") {
			t.Errorf("the injector's log does not say the registry refused the lookup:\n%s", in.stderr)
		}
	})
	t.Run("a registry that never answers", func(t *testing.T) {
		type answer struct {
			r    kubeResponse
			took time.Duration
		}
		send := func(ns string, p map[string]any, done *atomic.Bool) <-chan answer {
			ch := make(chan answer, 1)
			go func() {
				start := time.Now()
				r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods", p)
				done.Store(true)
				ch <- answer{kubeResponse{r.Code, r.Body}, time.Since(start)}
			}()
			return ch
		}
		var explicitDone, wideDone atomic.Bool
		explicit := send("unlabelled", imagePod("stalled-explicit", stalledExplicit.host+"/app:1", nil, sel, nil, ""), &explicitDone)
		wide := send("selected", imagePod("stalled-wide", stalledWide.host+"/app:1", nil, nil, nil, ""), &wideDone)
		for _, s := range []*stalledRegistry{stalledExplicit, stalledWide} {
			select {
			case <-s.accepted:
			case <-time.After(2 * time.Minute):
				t.Fatalf("the injector did not connect to the stalled registry %s:\n%s", s.host, in.stderr)
			}
		}
		// Both lookups are pending: pods with a command are admitted meanwhile.
		for i := range 3 {
			start := time.Now()
			stored := c.CreatePod(t, "selected", pod(fmt.Sprintf("with-command-%d", i), []string{"/app"}, nil, nil))
			if _, ok := annotationsOf(stored)[contract.InjectedAnnotation]; !ok {
				t.Errorf("a pod with a command was not wrapped")
			}
			t.Logf("pod with a command admitted in %s while the lookups were pending", time.Since(start).Round(time.Millisecond))
		}
		if explicitDone.Load() || wideDone.Load() {
			t.Errorf("a stalled lookup's admission ended before the pods with a command were admitted (explicit %v, namespace-wide %v)", explicitDone.Load(), wideDone.Load())
		}
		wait := func(ch <-chan answer) answer {
			select {
			case a := <-ch:
				return a
			case <-time.After(2 * time.Minute):
				t.Fatal("no answer 2 minutes after the creation")
			}
			return answer{}
		}
		e := wait(explicit)
		// The webhook's own denial, which it gives within the API server's timeout: past it, the
		// API server would have answered with its own error instead.
		if e.r.code != 403 || !bytes.Contains(e.r.body, []byte("asks to be wrapped")) || !bytes.Contains(e.r.body, []byte(stalledExplicit.host)) {
			t.Errorf("opted-in pod, stalled registry: %d %s, want 403 with the webhook's reason", e.r.code, e.r.body)
		}
		t.Logf("opted-in pod denied after %s", e.took.Round(time.Millisecond))
		w := wait(wide)
		var stored map[string]any
		if w.r.code != 201 || json.Unmarshal(w.r.body, &stored) != nil {
			t.Fatalf("namespace-wide pod, stalled registry: %d %s", w.r.code, w.r.body)
		}
		ann := annotationsOf(stored)
		if _, ok := ann[contract.InjectedAnnotation]; ok {
			t.Error("wrapped with a registry that never answered")
		}
		if s, _ := ann[admission.SkippedAnnotation].(string); !strings.HasPrefix(s, admission.ReasonRegistry+": ") || !strings.Contains(s, stalledWide.host) {
			t.Errorf("skipped annotation %q, want %s: ... naming the registry %s", s, admission.ReasonRegistry, stalledWide.host)
		}
		for _, s := range []*stalledRegistry{stalledExplicit, stalledWide} {
			if !strings.Contains(in.stderr.String(), s.host+"/app:1 err=\"the registry did not answer within") {
				t.Errorf("the injector's log does not say %s did not answer", s.host)
			}
		}
		t.Logf("namespace-wide pod admitted unwrapped after %s", w.took.Round(time.Millisecond))
		for _, a := range []answer{e, w} {
			if a.took >= admission.DefaultTimeoutSeconds*time.Second+5*time.Second {
				t.Errorf("an admission took %s: not within the webhook's timeout of %ds", a.took, admission.DefaultTimeoutSeconds)
			}
		}
	})
	if t.Failed() {
		t.Logf("injector log:\n%s", in.stderr)
	}
}

type kubeResponse struct {
	code int
	body []byte
}

// TestResolveManyAdmissions sends 1,000 admissions of command-less pods over 10 images to the
// webhook's handler at once: every pod is wrapped, and each image is read once.
func TestResolveManyAdmissions(t *testing.T) {
	reg := startTestRegistry(t)
	const images, admissions, workers = 10, 1000, 32
	for i := range images {
		registrytest.PushImage(t, fmt.Sprintf("%s/img-%d:1", reg.host, i), registrytest.Platform{OS: "linux", Architecture: "amd64",
			Entrypoint: []string{fmt.Sprintf("/bin/img-%d", i)}})
	}
	pushed, pushedTags := reg.manifests.Load(), reg.byTag.Load() // the pushes' own checks
	r, metrics := testResolver(t, "")
	srv := &admission.Server{Mutator: &admission.Mutator{Inject: inject.Options{Version: testVersion, Image: testImage}, Resolver: r, Namespace: ownNamespace},
		Metrics: metrics, Log: slog.New(slog.DiscardHandler), Slots: make(chan struct{}, 64)}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Timeout: 2 * time.Minute}
	defer client.CloseIdleConnections()

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= admissions {
					return
				}
				img := fmt.Sprintf("%s/img-%d:1", reg.host, i%images)
				if err := admitOne(client, hs.URL, i, img); err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if len(failures) > 0 {
		t.Errorf("%d of %d admissions not wrapped as expected; first: %s", len(failures), admissions, failures[0])
	}
	n, tags := reg.manifests.Load()-pushed, reg.byTag.Load()-pushedTags
	t.Logf("%d admissions over %d images in %s: %d manifest reads at the registry (%d by tag); lookups: %v read, %v cached",
		admissions, images, took.Round(time.Millisecond), n, tags,
		testutil.ToFloat64(metrics.Lookups.WithLabelValues("read")), testutil.ToFloat64(metrics.Lookups.WithLabelValues("cached")))
	if n > images || tags > images {
		t.Errorf("%d manifest reads (%d by tag) for %d images, want at most %d", n, tags, images, images)
	}
	if reads := testutil.ToFloat64(r.reads.WithLabelValues("ok")); reads > images {
		t.Errorf("%v registry reads counted by the resolver, want at most %d", reads, images)
	}
	if c := r.cache.len(); c > cacheSize || c < images {
		t.Errorf("%d cache entries", c)
	}
}

// testResolver is a resolver for a pod without pull secrets, that may reach loopback (and
// reads only platforms, when set).
func testResolver(t *testing.T, platforms string) (*resolver, *admission.Metrics) {
	t.Helper()
	allow, err := parseAllow("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := parsePlatforms(platforms)
	if err != nil {
		t.Fatal(err)
	}
	metrics := admission.NewMetrics(prometheus.NewRegistry())
	anonymous := func(ctx context.Context, _, _ string, _ []string) (authn.Keychain, error) {
		return k8sauthn.NewFromPullSecrets(ctx, nil)
	}
	return newResolver(anonymous, metrics, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), testVersion,
		registryOptions{platforms: ps, allow: allow}), metrics
}

// admitOne sends the admission of a command-less pod of img and checks that the answer wraps
// it, pinned.
func admitOne(client *http.Client, url string, i int, img string) error {
	raw, err := json.Marshal(imagePod(fmt.Sprintf("p-%d", i), img, nil, nil, nil, ""))
	if err != nil {
		return err
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("uid-%d", i)), Namespace: "selected",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	resp, err := client.Post(url+admission.MutatePath+"?timeout=30s", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		return fmt.Errorf("admission %d: %d, %v", i, resp.StatusCode, err)
	}
	repo := strings.TrimSuffix(img, ":1")
	if !out.Response.Allowed || !bytes.Contains(out.Response.Patch, []byte(repo+"@sha256:")) || bytes.Contains(out.Response.Patch, []byte(admission.SkippedAnnotation)) {
		return fmt.Errorf("admission %d of %s: allowed %v, patch %.400s", i, img, out.Response.Allowed, out.Response.Patch)
	}
	return nil
}

// TestResolvePlatforms: --platforms limits what is read of an index; a single platform is
// inlined, as inject does for an image that runs one argv.
func TestResolvePlatforms(t *testing.T) {
	reg := startTestRegistry(t)
	image := reg.host + "/multi:1"
	registrytest.PushIndex(t, image, true,
		registrytest.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/amd64"}},
		registrytest.Platform{OS: "linux", Architecture: "arm64", Entrypoint: []string{"/arm64"}})
	r, _ := testResolver(t, "linux/arm64")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eps, errs := r.Resolve(ctx, "ns", nil, "", []string{image})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := eps[image]
	if len(got.Platforms) != 1 || got.Platforms["linux/arm64"].Entrypoint[0] != "/arm64" || !strings.Contains(got.Pinned, "@sha256:") {
		t.Errorf("--platforms linux/arm64: %+v", got)
	}
	// Cached by digest too: the pinned reference is answered without the registry.
	before := reg.manifests.Load()
	if eps, errs := r.Resolve(ctx, "ns", nil, "", []string{got.Pinned}); len(errs) > 0 || eps[got.Pinned].Pinned != got.Pinned {
		t.Errorf("pinned %s: %v %v", got.Pinned, eps, errs)
	}
	if n := reg.manifests.Load() - before; n != 0 {
		t.Errorf("%d manifest reads for the pinned reference of a cached image", n)
	}
}

// TestResolveRefusesLoopbackByDefault: without --registry-allow the injector does not connect
// to a registry on loopback, and says why.
func TestResolveRefusesLoopbackByDefault(t *testing.T) {
	reg := startTestRegistry(t)
	image := reg.host + "/app:1"
	registrytest.PushImage(t, image, registrytest.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/app"}})
	r, _ := testResolver(t, "")
	r.opts.Transport = (&dialGuard{}).transport()
	before := reg.manifests.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, errs := r.Resolve(ctx, "ns", nil, "", []string{image})
	if err := errs[image]; err == nil || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "--registry-allow") {
		t.Errorf("loopback registry without --registry-allow: %v", err)
	}
	if n := reg.manifests.Load() - before; n != 0 {
		t.Errorf("the registry was read %d times", n)
	}
}
