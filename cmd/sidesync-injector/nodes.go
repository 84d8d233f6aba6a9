package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// nodeCache is what --native auto reads: the cluster's Node objects from a watch (list and
// watch nodes, nothing else), each cut down to what the choice reads (its name, labels and
// kubelet version), so that a large cluster's nodes cost little memory and no admission waits
// on the API server.
type nodeCache struct {
	lister    listersv1.NodeLister
	hasSynced cache.InformerSynced

	mu      sync.Mutex
	lastErr error // the watch's last failure (RBAC missing: forbidden), until it succeeds
}

// newNodeCache starts the watch of nodes until ctx ends.
func newNodeCache(ctx context.Context, client kubernetes.Interface, log *slog.Logger) (*nodeCache, error) {
	f := informers.NewSharedInformerFactory(client, 10*time.Minute)
	inf := f.Core().V1().Nodes()
	nc := &nodeCache{lister: inf.Lister(), hasSynced: inf.Informer().HasSynced}
	if err := inf.Informer().SetTransform(trimNode); err != nil {
		return nil, err
	}
	if err := inf.Informer().SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		nc.mu.Lock()
		changed := nc.lastErr == nil || nc.lastErr.Error() != err.Error()
		nc.lastErr = err
		nc.mu.Unlock()
		if changed { // the reflector retries with backoff: one line per new failure
			log.Warn("nodes unreadable: --native auto chooses classic sidecars until they are read", "err", err)
		}
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	return nc, nil
}

// settled reports whether the cache has either synced or failed to read the nodes: /readyz
// waits for it, so that a new injector does not choose classic for want of a first list, and
// is not held back when the RBAC is missing (it then chooses classic, and says why).
func (nc *nodeCache) settled() bool {
	if nc.hasSynced() {
		return true
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.lastErr != nil
}

// nodes is the cached nodes, or why there are none yet.
func (nc *nodeCache) nodes() ([]*corev1.Node, error) {
	if !nc.hasSynced() {
		nc.mu.Lock()
		err := nc.lastErr
		nc.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("the node cache has not synced: %w", err)
		}
		return nil, errors.New("the node cache has not synced yet")
	}
	return nc.lister.List(labels.Everything())
}

// trimNode keeps of a Node what the native choice reads.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil // a tombstone (cache.DeletedFinalStateUnknown) passes as it is
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Status:     corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: n.Status.NodeInfo.KubeletVersion}},
	}, nil
}
