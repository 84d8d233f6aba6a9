package istioinject

import (
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
)

// The injector's identity in the benchmark (its flags --image and --namespace, its version).
const (
	SidesyncVersion   = "v1.2.3"
	SidesyncImage     = "ghcr.io/sidesync/sidesync:v1.2.3"
	SidesyncNamespace = "sidesync-system"
)

// Sidesync is sidesync's mutating webhook handler as cmd/sidesync-injector serves it with its
// default flags (init-copy delivery, --native auto over one node of KubeletVersion, no registry
// lookups, 16 requests in flight), its metrics registered and its log lines, JSON at level info,
// written to log (the namespace watch, the Events and the validating handler are left out: they
// are not on a pod's mutating path).
func Sidesync(log *os.File) http.Handler {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: KubeletVersion}}}
	srv := &admission.Server{
		Mutator: &admission.Mutator{
			Inject:    inject.Options{Version: SidesyncVersion, Image: SidesyncImage, Delivery: inject.InitCopy},
			Native:    &admission.NativeChooser{Mode: inject.NativeAuto, Nodes: func() ([]*corev1.Node, error) { return []*corev1.Node{node}, nil }},
			Namespace: SidesyncNamespace,
		},
		Metrics: admission.NewMetrics(prometheus.NewRegistry()),
		Log:     slog.New(slog.NewJSONHandler(log, nil)),
		Slots:   make(chan struct{}, 16),
	}
	return srv.Handler()
}
