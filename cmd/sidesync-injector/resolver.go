package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sidesync/sidesync/internal/admission"
	"github.com/sidesync/sidesync/internal/inject"
	"github.com/sidesync/sidesync/internal/inject/resolve"
)

// resolver reads images' ENTRYPOINT and CMD from their registries for the webhook: one read per
// image at a time however many pods ask (singleflight); kept for the injector's life for a
// reference pinned to a digest (its content cannot change) and for tagCacheFor for a tag (which
// may move); each admission waits within its own budget, and the shared read has readTimeout.
type resolver struct {
	kube    *kube
	metrics *admission.Metrics
	log     *slog.Logger
	agent   string

	group singleflight.Group
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	img inject.ResolvedImage
	at  time.Time
}

// tagCacheFor is how long a tag's image is kept; readTimeout bounds one shared registry read.
const (
	tagCacheFor = time.Minute
	readTimeout = 30 * time.Second
)

func newResolver(k *kube, m *admission.Metrics, log *slog.Logger, version string) *resolver {
	return &resolver{kube: k, metrics: m, log: log, agent: "sidesync-injector/" + version, cache: map[string]cached{}}
}

// Resolve implements admission.Resolver.
func (r *resolver) Resolve(ctx context.Context, namespace string, pullSecrets []string, serviceAccount string, images []string) (inject.Entrypoints, map[string]error) {
	eps, errs := inject.Entrypoints{}, map[string]error{}
	for _, img := range images {
		r.mu.Lock()
		got, ok := r.cache[img]
		r.mu.Unlock()
		if ok && (strings.Contains(img, "@") || time.Since(got.at) < tagCacheFor) {
			eps[img] = got.img
			r.metrics.Lookups.WithLabelValues("cached").Inc()
			continue
		}
		ch := r.group.DoChan(img, func() (any, error) {
			// The read is shared: it runs on its own budget, not the first asker's.
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
			defer cancel()
			return resolve.Image(c, img, resolve.Options{UserAgent: r.agent})
		})
		select {
		case <-ctx.Done():
			errs[img] = ctx.Err()
			r.metrics.Lookups.WithLabelValues("timeout").Inc()
		case res := <-ch:
			if res.Err != nil {
				errs[img] = res.Err
				r.metrics.Lookups.WithLabelValues("error").Inc()
				continue
			}
			ri := res.Val.(inject.ResolvedImage)
			eps[img] = ri
			r.metrics.Lookups.WithLabelValues("read").Inc()
			r.mu.Lock()
			r.cache[img] = cached{ri, time.Now()}
			r.mu.Unlock()
		}
	}
	return eps, errs
}
