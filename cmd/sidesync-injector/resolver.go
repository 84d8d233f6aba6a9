package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauthn "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/inject/resolve"
)

// resolver reads images' ENTRYPOINT and CMD from their registries for the webhook (--resolve),
// with the credentials the kubelet would pull them with: the pod's imagePullSecrets and its
// service account's, read from the API server for the admission (docs/RESOLVE-WEBHOOK.md).
//
//   - One read per image and credential at a time however many pods ask (singleflight). The
//     shared read runs on its own budget (readTimeout), not the first asker's; each admission
//     waits only within its own (waitContext), and gives up with a "registry" skip.
//   - Cached in a bounded LRU (cacheSize entries): a reference pinned to a digest for the
//     injector's life (its content cannot change), a tag for tagCacheFor (it may move), and
//     the pinned form of what a tag read, for the injector's life too.
//   - The cache rule. An entry is keyed by the image and by the credential it was read with:
//     none, or a keyed hash of the registry credential (scopeOf). A pod uses the entries read
//     with no credential, which anyone could read, and those read with the very credential
//     its own pull secrets give for that registry. So a pod that has no credential for a
//     private image never gets its ENTRYPOINT (nor its digest) from a lookup another pod's
//     credential made, in its namespace or another; pods that present one credential, in any
//     namespace, share the reads, since the registry would answer each of them alike.
//   - Connections go through the SSRF guard (resolver_dial.go); a pod's image cannot make the
//     injector reach loopback, link-local, private or multicast addresses unless
//     --registry-allow lists them.
type resolver struct {
	keychain keychainFunc
	metrics  *admission.Metrics
	log      *slog.Logger
	opts     resolve.Options // Platforms, Transport, UserAgent, Warn; Keychain is set per read

	group singleflight.Group
	cache *lru
	// fingerprintKey keys the credential hashes of the cache keys, so that they reveal
	// nothing of the credential outside this process.
	fingerprintKey []byte
	readTimeout    time.Duration
	reads          *prometheus.CounterVec // registry reads made, by result (ok, error)
}

// keychainFunc is the credentials of a pod: its pull secrets and its service account's.
type keychainFunc func(ctx context.Context, namespace, serviceAccount string, pullSecrets []string) (authn.Keychain, error)

// podKeychain reads a pod's pull secrets with the injector's client: its imagePullSecrets, then
// those of its service account (go-containerregistry's pkg/authn/kubernetes, which reads
// kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg secrets as the kubelet does). It
// needs get on secrets and serviceaccounts; a secret that does not exist is skipped, as the
// kubelet skips it.
func podKeychain(k *kube) keychainFunc {
	return func(ctx context.Context, namespace, serviceAccount string, pullSecrets []string) (authn.Keychain, error) {
		return k8sauthn.New(ctx, k.client, k8sauthn.Options{Namespace: namespace, ServiceAccountName: serviceAccount, ImagePullSecrets: pullSecrets})
	}
}

const (
	tagCacheFor = time.Minute      // how long a tag's image is kept
	readTimeout = 30 * time.Second // bounds one shared registry read
	cacheSize   = 4096             // entries kept at most
)

func newResolver(kc keychainFunc, m *admission.Metrics, reg prometheus.Registerer, log *slog.Logger, version string, ro registryOptions) *resolver {
	key := make([]byte, 32)
	rand.Read(key)
	r := &resolver{keychain: kc, metrics: m, log: log, cache: newLRU(cacheSize), fingerprintKey: key, readTimeout: readTimeout,
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidesync_injector_registry_reads_total",
			Help: "Reads of an image from its registry (each shared by every admission that waited for it), by result: ok, error."}, []string{"result"})}
	guard := &dialGuard{allow: ro.allow, refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "sidesync_injector_registry_dials_refused_total",
		Help: "Connections to a registry address refused by the SSRF guard (loopback, link-local, private, multicast; see --registry-allow)."})}
	r.opts = resolve.Options{Platforms: ro.platforms, Transport: guard.transport(), UserAgent: "sidesync-injector/" + version,
		Warn: func(msg string) { log.Warn("registry", "msg", msg) }}
	if reg != nil {
		reg.MustRegister(r.reads, guard.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sidesync_injector_registry_cache_entries",
			Help: fmt.Sprintf("Images kept in the registry lookup cache (at most %d).", cacheSize)}, func() float64 { return float64(r.cache.len()) }))
	}
	return r
}

// lookup is one image an admission waits for.
type lookup struct {
	image string
	ch    <-chan singleflight.Result
}

// readResult is what a shared read gives its waiters.
type readResult struct {
	img    inject.ResolvedImage
	cached bool // found in the cache by the read itself: another read had just finished
}

// Resolve implements admission.Resolver.
func (r *resolver) Resolve(ctx context.Context, namespace string, pullSecrets []string, serviceAccount string, images []string) (inject.Entrypoints, map[string]error) {
	eps, errs := inject.Entrypoints{}, map[string]error{}
	start := time.Now()
	wctx, cancel := waitContext(ctx)
	defer cancel()

	// Entries read with no credential serve every pod, without reading its secrets.
	var misses []string
	for _, img := range images {
		if ri, ok := r.cache.get(cacheKey("", img), start); ok {
			eps[img] = ri
			r.count("cached")
			continue
		}
		misses = append(misses, img)
	}
	if len(misses) == 0 {
		return eps, errs
	}
	kc, kcErr := r.keychain(wctx, namespace, serviceAccount, pullSecrets)
	if kcErr != nil {
		// Without the secrets, read as the public: what that reads anyone may know.
		kc = authn.NewMultiKeychain()
		kcErr = fmt.Errorf("the pull secrets were not read (%w)", kcErr)
		r.log.Warn("pull secrets not read: reading anonymously", "namespace", namespace, "service_account", serviceAccount, "err", kcErr)
	}
	var waits []lookup
	for _, img := range misses {
		auth, scope, err := r.credential(wctx, kc, img)
		if err != nil {
			errs[img] = withKeychainError(kcErr, err)
			r.count("error")
			continue
		}
		key := cacheKey(scope, img)
		if scope != "" {
			if ri, ok := r.cache.get(key, time.Now()); ok {
				eps[img] = ri
				r.count("cached")
				continue
			}
		}
		waits = append(waits, lookup{img, r.group.DoChan(key, func() (any, error) {
			return r.read(context.WithoutCancel(ctx), key, scope, img, auth)
		})})
	}
	for _, l := range waits {
		select {
		case <-wctx.Done():
			errs[l.image] = fmt.Errorf("the registry did not answer within %s", time.Since(start).Round(10*time.Millisecond))
			r.count("timeout")
		case res := <-l.ch:
			if res.Err != nil {
				errs[l.image] = withKeychainError(kcErr, res.Err)
				r.count("error")
				continue
			}
			rr := res.Val.(readResult)
			eps[l.image] = rr.img
			if rr.cached {
				r.count("cached")
			} else {
				r.count("read")
			}
		}
	}
	for img, err := range errs {
		r.log.Warn("registry lookup failed", "namespace", namespace, "image", img, "err", err)
	}
	return eps, errs
}

// read reads img from its registry with auth, shared by every admission that asks for key
// meanwhile, and caches it.
func (r *resolver) read(ctx context.Context, key, scope, img string, auth authn.Authenticator) (any, error) {
	// A read of key that ended between an admission's look at the cache and its DoChan has
	// left its entry: no second read.
	if ri, ok := r.cache.get(key, time.Now()); ok {
		return readResult{img: ri, cached: true}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.readTimeout)
	defer cancel()
	o := r.opts
	o.Keychain = fixedKeychain{auth}
	ri, err := resolve.Image(ctx, img, o)
	if err != nil {
		r.reads.WithLabelValues("error").Inc()
		return nil, err
	}
	r.reads.WithLabelValues("ok").Inc()
	now := time.Now()
	expires := now.Add(tagCacheFor)
	if isDigest(img) {
		expires = time.Time{}
	}
	r.cache.put(key, ri, expires)
	if ri.Pinned != "" && ri.Pinned != img {
		r.cache.put(cacheKey(scope, ri.Pinned), ri, time.Time{})
	}
	return readResult{img: ri}, nil
}

// credential is what img is read with: the pod's credential for its repository, and the
// cache scope that credential gives ("" for none).
func (r *resolver) credential(ctx context.Context, kc authn.Keychain, img string) (authn.Authenticator, string, error) {
	ref, err := name.ParseReference(img)
	if err != nil {
		return nil, "", err
	}
	auth, err := authn.Resolve(ctx, kc, ref.Context())
	if err != nil {
		return nil, "", fmt.Errorf("credentials for %s: %w", ref.Context().RegistryStr(), err)
	}
	if auth == authn.Anonymous {
		return auth, "", nil
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return nil, "", fmt.Errorf("credentials for %s: %w", ref.Context().RegistryStr(), err)
	}
	if *cfg == (authn.AuthConfig{}) {
		return authn.Anonymous, "", nil
	}
	b, _ := json.Marshal(cfg)
	mac := hmac.New(sha256.New, r.fingerprintKey)
	mac.Write(b)
	return auth, "cred:" + hex.EncodeToString(mac.Sum(nil)[:16]), nil
}

func (r *resolver) count(result string) {
	if r.metrics != nil {
		r.metrics.Lookups.WithLabelValues(result).Inc()
	}
}

// waitContext is how long an admission waits for its lookups: its budget less a reserve (a
// fifth of it, at most a second) to answer in, so that a registry that does not answer ends
// in the webhook's own skip or denial, never in the API server's timeout.
func waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(time.Until(dl)/5, time.Second)
	return context.WithDeadline(ctx, dl.Add(-reserve))
}

// cacheKey is the cache's and the singleflight's key: the credential's scope and the image.
func cacheKey(scope, img string) string { return scope + "\x00" + img }

// isDigest reports whether img is pinned to a digest.
func isDigest(img string) bool { return strings.Contains(img, "@") }

// withKeychainError adds why the pod's credentials were not used to a lookup's error.
func withKeychainError(kcErr, err error) error {
	if kcErr == nil {
		return err
	}
	return fmt.Errorf("%v, and read without them: %w", kcErr, err)
}

// fixedKeychain gives every registry one authenticator: the read uses the credential its
// cache key names.
type fixedKeychain struct{ auth authn.Authenticator }

func (k fixedKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }
