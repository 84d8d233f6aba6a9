package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// The HTTP paths: the chart's probes and its Service name them.
const (
	metricsPath = "/metrics"
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
)

// fieldManager owns the rescue containers in the pods' managed fields.
const fieldManager = "sidesync-rescuer"

// serve runs the manager, with the rescuer and the metrics and probe servers, until ctx ends or
// the manager stops. Its logs and controller-runtime's and client-go's all go to h.
func serve(ctx context.Context, c *config, build buildinfo.Info, h slog.Handler) error {
	logger := logr.FromSlogHandler(h)
	ctrllog.SetLogger(logger) // controller-runtime's
	klog.SetLogger(logger)    // client-go's: leader election, the Event broadcaster
	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	cfg.UserAgent = "sidesync-rescuer/" + build.Version
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	// The metrics and probes are served on listeners of run's own, not by the manager's
	// servers: those log the address asked for, and a listener opened here says the one bound
	// (port 0 in tests).
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Cache:                         cacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                c.leaderElect,
		LeaderElectionID:              c.leaderElectionID,
		LeaderElectionNamespace:       c.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("the manager: %w", err)
	}
	m, err := newMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	r := &rescuer{client: mgr.GetClient(), events: mgr.GetEventRecorder(fieldManager), metrics: m,
		image: c.image, grace: c.grace, now: time.Now, pods: map[types.NamespacedName]*memory{}}
	if err := r.setup(mgr); err != nil {
		return fmt.Errorf("the controller: %w", err)
	}
	addrs, err := addServers(mgr, c, h)
	if err != nil {
		return err
	}
	attrs := append([]any{"version", build.Version, "image", c.image, "grace", c.grace.String(), "leaderElect", c.leaderElect}, addrs...)
	slog.New(h).Info("serving", attrs...)
	return mgr.Start(ctx)
}

// addServers adds to the manager the metrics and probe servers, on listeners opened here, and
// returns their bound addresses as log attributes ("metrics", ADDR, "probes", ADDR). A server
// whose address is 0 is not started.
func addServers(mgr manager.Manager, c *config, h slog.Handler) ([]any, error) {
	metricsMux := http.NewServeMux()
	metricsMux.Handle("GET "+metricsPath, promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	probeMux := http.NewServeMux()
	probeMux.HandleFunc("GET "+healthzPath, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	probeMux.HandleFunc("GET "+readyzPath, func(w http.ResponseWriter, req *http.Request) {
		// Ready once the cache has read what it watches (at once on a replica that is not the
		// leader, which watches nothing).
		sctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(sctx) {
			http.Error(w, "not ready: the cache is not synced", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	var addrs []any
	for _, s := range []struct {
		name, addr string
		mux        *http.ServeMux
	}{
		{"metrics", c.metricsAddr, metricsMux}, {"probes", c.probeAddr, probeMux},
	} {
		if s.addr == "0" {
			continue
		}
		l, err := net.Listen("tcp", s.addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		timeout := 5 * time.Second
		srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(h, slog.LevelDebug)}
		if err := mgr.Add(&manager.Server{Name: s.name, Server: srv, Listener: l, ShutdownTimeout: &timeout}); err != nil {
			l.Close()
			return nil, err
		}
		addrs = append(addrs, s.name, l.Addr().String())
	}
	return addrs, nil
}

// cacheOptions narrow what the rescuer caches to what it may act on, on the API server's side:
// running pods (the status.phase field selector: a pod that ends leaves the watch, which tells
// it as a deletion) with the label the Job controller gives its pods, and namespaces with the
// rescue label. Unrelated pods are never sent. Managed fields are dropped: rescue never reads
// them.
func cacheOptions() cache.Options {
	jobPods, err := labels.NewRequirement(batchv1.ControllerUidLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Label: labels.NewSelector().Add(*jobPods),
				Field: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)),
			},
			&corev1.Namespace{}: {Label: labels.SelectorFromSet(labels.Set{rescue.NamespaceLabel: rescue.Enabled})},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// restConfig connects with the kubeconfig file, or in-cluster with the pod's service account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}
