package istioinject

import (
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"istio.io/istio/operator/pkg/render"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/kube/multicluster"
	"istio.io/istio/pkg/log"
)

// IstioVersion is the istio.io/istio module this package requires (go.mod), the one
// .ci/build-istio.sh builds pilot-agent from: a commit of 2026-08-27 on master (Istio publishes
// no module tags).
const IstioVersion = "v0.0.0-20260827124520-eed52ebb66ad"

// KubeletVersion is the one node's kubelet in the fake cluster Istio's injector reads: with
// ENABLE_NATIVE_SIDECARS at its default (auto), istiod makes istio-proxy a native sidecar when
// every node runs a kubelet of 1.33 or later, as a cluster of the kube-apiserver the tests run
// (v1.37.2) does.
const KubeletVersion = "v1.37.2"

// Istio is Istio's sidecar injector as istiod serves it: its webhook's HTTP handler (the mux on
// which inject.NewWebhook registered /inject), configured from what a default `istioctl install`
// renders (the profile "default": the istio-sidecar-injector ConfigMap's injection template and
// values, the istio ConfigMap's mesh config), and its MutatingWebhookConfiguration.
type Istio struct {
	Handler http.Handler
	// Webhook is the rendered istio-sidecar-injector MutatingWebhookConfiguration (unstructured),
	// its clientConfig pointing at istiod's Service.
	Webhook map[string]any
	stop    chan struct{}
}

// Close stops the fake cluster's informers.
func (i *Istio) Close() { close(i.stop) }

// NewIstio renders Istio's default profile with its own renderer (what istioctl install and
// istioctl manifest generate call, from the charts embedded in istio.io/istio/manifests) and
// builds the injector from it. Istio's per-admission log lines go to logPath.
func NewIstio(logPath string) (*Istio, error) {
	o := log.DefaultOptions()
	o.OutputPaths, o.ErrorOutputPaths = []string{logPath}, []string{logPath}
	if err := log.Configure(o); err != nil {
		return nil, fmt.Errorf("istio's log: %w", err)
	}
	sets, _, err := render.GenerateManifest(nil, []string{"profile=default"}, false, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("rendering istio's default profile: %w", err)
	}
	var injectorCM, meshCM, webhook map[string]any
	for _, set := range sets {
		for _, m := range set.Manifests {
			switch {
			case m.GetKind() == "ConfigMap" && m.GetName() == "istio-sidecar-injector":
				injectorCM = m.Object
			case m.GetKind() == "ConfigMap" && m.GetName() == "istio":
				meshCM = m.Object
			case m.GetKind() == "MutatingWebhookConfiguration" && m.GetName() == "istio-sidecar-injector":
				webhook = m.Object
			}
		}
	}
	if injectorCM == nil || meshCM == nil || webhook == nil {
		return nil, errors.New("istio's default profile rendered no istio-sidecar-injector ConfigMap, istio ConfigMap or MutatingWebhookConfiguration")
	}
	config, _ := injectorCM["data"].(map[string]any)["config"].(string)
	values, _ := injectorCM["data"].(map[string]any)["values"].(string)
	meshYAML, _ := meshCM["data"].(map[string]any)["mesh"].(string)
	cfg, err := inject.UnmarshalConfig([]byte(config))
	if err != nil {
		return nil, fmt.Errorf("istio's injection config: %w", err)
	}
	mc, err := mesh.ApplyMeshConfig(meshYAML, mesh.DefaultMeshConfig())
	if err != nil {
		return nil, fmt.Errorf("istio's mesh config: %w", err)
	}
	// The environment as Istio's own webhook tests build it: the mesh config, no ProxyConfig.
	store := model.NewFakeStore()
	env := &model.Environment{Watcher: meshwatcher.NewTestWatcher(mc), ConfigStore: store}
	env.SetPushContext(&model.PushContext{ProxyConfigs: model.GetProxyConfigs(store, mc)})
	mux := http.NewServeMux()
	multi := multicluster.NewFakeController()
	if _, err := inject.NewWebhook(inject.WebhookParameters{
		Watcher: staticWatcher{cfg: &cfg, values: values}, Env: env, Mux: mux, MultiCluster: multi,
	}); err != nil {
		return nil, fmt.Errorf("istio's webhook: %w", err)
	}
	// The cluster the injector watches (for native sidecars, its nodes), added after the webhook
	// registered its informers, as istiod's cluster controller adds it.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: KubeletVersion}}}
	client := kube.NewFakeClient(node)
	stop := make(chan struct{})
	multi.Add(constants.DefaultClusterName, client, stop)
	client.RunAndWait(stop)
	return &Istio{Handler: mux, Webhook: webhook, stop: stop}, nil
}

// staticWatcher hands the injector one configuration, as a ConfigMap that never changes would.
type staticWatcher struct {
	cfg    *inject.Config
	values string
}

func (w staticWatcher) SetHandler(func(*inject.Config, string) error) {}
func (w staticWatcher) Run(<-chan struct{})                           {}
func (w staticWatcher) Get() (*inject.Config, string, error)          { return w.cfg, w.values, nil }
