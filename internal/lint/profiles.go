package lint

import (
	"net/url"
	"strconv"

	"github.com/sidesync/sidesync/sidecar"
)

// What lint knows about each sidecar profile beyond the detection table (internal/detect,
// Signatures). Detection runs in the pod, after admission, and reads the marks an injector
// leaves; a manifest is read before admission, where only the request for an injection shows,
// and whether the injector will add the sidecar as a native one (kubernetes-delivery.md 1.4).

// profileInfo is one row of that knowledge.
type profileInfo struct {
	title string // the sidecar's own name, for messages
	// requests are the annotations or labels with which a pod asks the injector for the sidecar;
	// any one of them does, unless one of unless is there too.
	requests, unless []mark
	// native are the annotations that make the injector add a native sidecar; nativeFix is the
	// one to recommend.
	native    []mark
	nativeFix string
	// quitsInJobs: the mesh's control plane tells the sidecar of a Job's pod to quit once the
	// other containers ended (Kuma's pod-status controller, prior-art.md A2; Job-owned pods
	// only, kumahq/kuma#2848).
	quitsInJobs bool
}

// mark is an annotation or a label with the value it must have.
type mark struct {
	key, value string
	label      bool
}

func (m mark) on(ann, labels map[string]string) bool {
	from := ann
	if m.label {
		from = labels
	}
	v, ok := from[m.key]
	return ok && v == m.value
}

// String is the mark as messages show it, its value quoted as YAML needs "true" quoted:
// `annotation linkerd.io/inject: "enabled"`.
func (m mark) String() string {
	what := "annotation "
	if m.label {
		what = "label "
	}
	return what + quoted(m)
}

// anyOn reports whether any of marks is on the pod.
func anyOn(marks []mark, ann, labels map[string]string) bool {
	for _, m := range marks {
		if m.on(ann, labels) {
			return true
		}
	}
	return false
}

// Annotations that lint reads itself (sidecar-protocols.md 4.3, 10; kubernetes-delivery.md 1.4).
const (
	linkerdShutdown  = "config.linkerd.io/proxy-admin-shutdown"
	vaultEnableQuit  = "vault.hashicorp.com/agent-enable-quit"
	vaultPrePopulate = "vault.hashicorp.com/agent-pre-populate-only"
)

// profileInfos is the table, keyed by the profile names of internal/detect.
func profileInfos() map[string]profileInfo {
	istioNative := mark{key: "sidecar.istio.io/nativeSidecar", value: "true"}
	linkerdNative := mark{key: "config.beta.linkerd.io/proxy-enable-native-sidecar", value: "true"}
	consulNative := mark{key: "consul.hashicorp.com/enable-consul-dataplane-as-sidecar", value: "true"}
	daprNative := mark{key: "dapr.io/enable-native-sidecar", value: "true"}
	return map[string]profileInfo{
		"istio": {title: "Istio", native: []mark{istioNative}, nativeFix: quoted(istioNative),
			requests: []mark{{key: "sidecar.istio.io/inject", value: "true", label: true}, {key: "sidecar.istio.io/inject", value: "true"}}},
		"linkerd": {title: "Linkerd", nativeFix: quoted(linkerdNative),
			native: []mark{linkerdNative, {key: "config.linkerd.io/proxy-enable-native-sidecar", value: "true"},
				{key: "config.alpha.linkerd.io/proxy-enable-native-sidecar", value: "true"}},
			requests: []mark{{key: "linkerd.io/inject", value: "enabled"}}},
		"consul": {title: "Consul dataplane", native: []mark{consulNative}, nativeFix: quoted(consulNative),
			requests: []mark{{key: "consul.hashicorp.com/connect-inject", value: "true"}}},
		"kuma": {title: "Kuma", quitsInJobs: true,
			requests: []mark{{key: "kuma.io/sidecar-injection", value: "enabled", label: true}, {key: "kuma.io/sidecar-injection", value: "enabled"}}},
		// dapr.io/enabled both asks for the sidecar and marks it: detection reads it.
		"dapr": {title: "Dapr", native: []mark{daprNative}, nativeFix: quoted(daprNative)},
		"osm":  {title: "Open Service Mesh", requests: []mark{{key: "openservicemesh.io/sidecar-injection", value: "enabled"}}},
		// Vault's injector has no native sidecars (hashicorp/vault-k8s#620).
		"vault": {title: "Vault Agent", requests: []mark{{key: "vault.hashicorp.com/agent-inject", value: "true"}},
			unless: []mark{{key: vaultPrePopulate, value: "true"}}},
		"cloudsql": {title: "Cloud SQL Auth Proxy"},
		"appmesh":  {title: "App Mesh Envoy"},
	}
}

// quoted is a mark as YAML writes it: `sidecar.istio.io/nativeSidecar: "true"`.
func quoted(m mark) string { return m.key + ": " + strconv.Quote(m.value) }

// quitPath is the path of the profile's quit call ("/quitquitquit"), or "" if it has none.
func quitPath(profile string) string {
	sc, ok := sidecar.Profile(profile)
	if !ok || sc.Quit == nil {
		return ""
	}
	u, err := url.Parse(sc.Quit.URL)
	if err != nil {
		return ""
	}
	return u.Path
}
