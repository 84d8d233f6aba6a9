package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// kube is what the injector asks of the API server: namespaces' labels (from a watch, so that
// no admission waits on the API server) and Events for the owners of skipped pods.
type kube struct {
	client    kubernetes.Interface
	log       *slog.Logger
	ns        listersv1.NamespaceLister
	hasSynced cache.InformerSynced
	events    chan *corev1.Event
	cancel    context.CancelFunc
	done      chan struct{}
}

// newKube connects with the kubeconfig file, or in-cluster with the pod's service account.
func newKube(ctx context.Context, kubeconfig string, log *slog.Logger) (*kube, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "sidesync-injector"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(client, 10*time.Minute)
	nsInformer := f.Core().V1().Namespaces()
	k := &kube{client: client, log: log, ns: nsInformer.Lister(), hasSynced: nsInformer.Informer().HasSynced,
		events: make(chan *corev1.Event, 256), cancel: cancel, done: make(chan struct{})}
	f.Start(ctx.Done())
	go k.sendEvents(ctx)
	return k, nil
}

func (k *kube) stop() {
	k.cancel()
	<-k.done
}

// synced reports whether the namespaces are known.
func (k *kube) synced() bool { return k.hasSynced() }

// namespace is a namespace's labels and annotations from the watch.
func (k *kube) namespace(name string) (labels, annotations map[string]string, ok bool) {
	ns, err := k.ns.Get(name)
	if err != nil {
		return nil, nil, false
	}
	return ns.Labels, ns.Annotations, true
}

// record queues an Event on the owner; it drops it when the queue is full, never blocking an
// admission.
func (k *kube) record(namespace string, owner metav1.OwnerReference, reason, message string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: owner.Name + ".", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name,
			Namespace: namespace, UID: owner.UID},
		Reason: reason, Message: message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "sidesync-injector"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "sidesync.io/injector", ReportingInstance: "sidesync-injector",
	}
	select {
	case k.events <- ev:
	default:
		k.log.Warn("event dropped: the queue is full", "owner", fmt.Sprintf("%s/%s", owner.Kind, owner.Name), "reason", reason)
	}
}

func (k *kube) sendEvents(ctx context.Context) {
	defer close(k.done)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-k.events:
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := k.client.CoreV1().Events(ev.Namespace).Create(c, ev, metav1.CreateOptions{})
			cancel()
			if err != nil {
				k.log.Warn("event not written", "owner", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name, "err", err)
			}
		}
	}
}
