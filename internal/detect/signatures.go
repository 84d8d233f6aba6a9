package detect

import (
	"slices"
	"strings"
)

//go:generate go test -run TestREADMEDetection -update

// Signature is how detection recognises one sidecar profile: the marks its injector leaves on
// the pod, the annotation that moves its port, and the containers that give it away in a Pod
// object. Signatures is the one table of them; detection, the README and the completeness test
// all read it.
type Signature struct {
	Profile string // the sidecar profile it reveals (sidecar.Profile)
	// Undetectable, when not empty, says why nothing reveals this profile; every other field is
	// then empty. A profile is listed even so, so that a forgotten one can be told apart from
	// one that cannot be detected.
	Undetectable string
	// Marks are the annotations or labels that reveal the profile; any one of them does.
	Marks []Mark
	// Unless are marks that say there is no sidecar after all, though a mark names it (Vault's
	// pre-populate-only: the agent runs as an init container alone).
	Unless []Mark
	// Port is the annotation that moves the profile's port, if any.
	Port PortAnnotation
	// Container is the name of the container the injector adds. When a mark revealed the
	// profile, detection reads this container in the Pod object: whether it is a native sidecar,
	// whether it has a startup probe.
	Container string
	// Containers reveal the profile in a Pod object that carries no mark for it: any container
	// that matches one of them.
	Containers []ContainerMatch
	// Reads says, for the documentation, what the row's own functions read besides.
	Reads string

	// fromMarks refines what a mark found, from the pod's annotations.
	fromMarks func(f *Found, ann map[string]string)
	// fromContainer refines what was found, from the sidecar's container.
	fromContainer func(f *Found, c container)
}

// Mark is an annotation or a label that an injector puts on the pods it injects.
type Mark struct {
	Key   string
	Value string // the value it must have; "" means any value
	Label bool   // a label, not an annotation
}

// PortAnnotation is an annotation that moves a profile's port.
type PortAnnotation struct {
	Key string // "" when the profile has none
	// QuitOnly moves only the quit call: the readiness check stays on its own port.
	QuitOnly bool
}

// ContainerMatch matches a container of a Pod.
type ContainerMatch struct {
	Name  string // the container's name; "" matches any name
	Image string // a piece of its image, in lower case; "" matches any image
}

// Annotations and labels that injectors put on the pods they inject (sidecar-protocols.md;
// each injector's source for the constant).
const (
	istioStatus         = "sidecar.istio.io/status"      // JSON listing the injected containers
	istioStatusPort     = "status.sidecar.istio.io/port" // the agent's port, 15020 by default
	linkerdVersion      = "linkerd.io/proxy-version"
	linkerdAdminPort    = "config.linkerd.io/admin-port"
	linkerdShutdown     = "config.linkerd.io/proxy-admin-shutdown"
	consulInjected      = "consul.hashicorp.com/connect-inject-status"
	consulGracefulPort  = "consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port"
	kumaInjected        = "kuma.io/sidecar-injected"
	kumaAdminPort       = "kuma.io/envoy-admin-port"
	daprEnabled         = "dapr.io/enabled"
	daprHTTPPort        = "dapr.io/http-port"
	vaultInjected       = "vault.hashicorp.com/agent-inject-status"
	vaultPrePopulate    = "vault.hashicorp.com/agent-pre-populate-only"
	vaultEnableQuit     = "vault.hashicorp.com/agent-enable-quit"
	vaultListenerPort   = "vault.hashicorp.com/agent-cache-listener-port"
	osmProxyLabel       = "osm-proxy-uuid" // a label, on every pod OSM injected
	linkerdNativePrefix = "proxy-enable-native-sidecar"
)

// Signatures returns the detection table: one row per sidecar profile, in the order detection
// reports what it finds (marks first, then containers).
func Signatures() []Signature {
	return []Signature{
		{Profile: "istio", Marks: []Mark{{Key: istioStatus}}, Port: PortAnnotation{istioStatusPort, true},
			Container: "istio-proxy", Containers: []ContainerMatch{{Name: "istio-proxy"}},
			Reads: "native when `" + istioStatus + "` lists `istio-proxy` among its `initContainers`", fromMarks: istioMarks},
		{Profile: "linkerd", Marks: []Mark{{Key: linkerdVersion}}, Port: PortAnnotation{Key: linkerdAdminPort},
			Container: "linkerd-proxy", Containers: []ContainerMatch{{Name: "linkerd-proxy"}},
			Reads: "native with `config.linkerd.io/" + linkerdNativePrefix + ": true` (or the beta and alpha spellings); " +
				"warns without `" + linkerdShutdown + ": enabled`", fromMarks: linkerdMarks},
		{Profile: "consul", Marks: []Mark{{Key: consulInjected, Value: "injected"}}, Port: PortAnnotation{consulGracefulPort, true},
			Container: "consul-dataplane", Containers: []ContainerMatch{{Name: "consul-dataplane"}}},
		{Profile: "kuma", Marks: []Mark{{Key: kumaInjected, Value: "true"}}, Port: PortAnnotation{Key: kumaAdminPort},
			Container: "kuma-sidecar", Containers: []ContainerMatch{{Name: "kuma-sidecar"}}},
		{Profile: "dapr", Marks: []Mark{{Key: daprEnabled, Value: "true"}}, Port: PortAnnotation{Key: daprHTTPPort},
			Container: "daprd", Containers: []ContainerMatch{{Name: "daprd"}}},
		// A container named envoy is not always OSM's: it reveals nothing alone.
		{Profile: "osm", Marks: []Mark{{Key: osmProxyLabel, Label: true}}, Container: "envoy"},
		{Profile: "vault", Marks: []Mark{{Key: vaultInjected, Value: "injected"}}, Unless: []Mark{{Key: vaultPrePopulate, Value: "true"}},
			Port: PortAnnotation{Key: vaultListenerPort}, Container: "vault-agent", Containers: []ContainerMatch{{Name: "vault-agent"}},
			Reads: "no quit call unless `" + vaultEnableQuit + ": \"true\"`", fromMarks: vaultMarks},
		// The Cloud SQL Auth Proxy is added by hand or by operators that leave no mark. gce-proxy
		// is v1's image (gcr.io/cloudsql-docker/gce-proxy), whose flags have neither a health check
		// sidesync knows nor a quit endpoint: it is found so that it is never wrapped, and lint
		// says it cannot be told to quit.
		{Profile: "cloudsql", Containers: []ContainerMatch{{Image: "cloud-sql-proxy"}, {Image: "cloudsql-proxy"}, {Image: "cloud_sql_proxy"}, {Image: "gce-proxy"}},
			Reads: "the proxy's flags `--health-check`, `--http-port`, `--quitquitquit`, `--admin-port`", fromContainer: cloudSQLContainer},
		{Profile: "appmesh", Containers: []ContainerMatch{{Name: "envoy", Image: "appmesh"}}},
		{Profile: "envoy", Undetectable: "a plain Envoy carries no injector's mark, and a container named envoy may be anyone's"},
		{Profile: "http", Undetectable: "a generic profile, whose URLs the user gives"},
		{Profile: "tcp", Undetectable: "a generic profile, whose address the user gives"},
	}
}

// LookupSignature returns the detection row of the profile called name.
func LookupSignature(name string) (Signature, bool) {
	for _, s := range Signatures() {
		if s.Profile == name {
			return s, true
		}
	}
	return Signature{}, false
}

// String is the mark as the log and the README name it: the key, with "label " before a label.
func (m Mark) String() string {
	if m.Label {
		return "label " + m.Key
	}
	return m.Key
}

// on reports whether the pod carries the mark.
func (m Mark) on(ann, labels map[string]string) bool {
	from := ann
	if m.Label {
		from = labels
	}
	v, ok := from[m.Key]
	return ok && (m.Value == "" || v == m.Value)
}

// marked returns the mark of s that the pod carries, unless one of its Unless marks says
// otherwise.
func (s Signature) marked(ann, labels map[string]string) (Mark, bool) {
	for _, u := range s.Unless {
		if u.on(ann, labels) {
			return Mark{}, false
		}
	}
	for _, m := range s.Marks {
		if m.on(ann, labels) {
			return m, true
		}
	}
	return Mark{}, false
}

// matches reports whether c is a container that reveals s.
func (s Signature) matches(c container) bool {
	image := strings.ToLower(c.Image)
	return slices.ContainsFunc(s.Containers, func(m ContainerMatch) bool {
		return (m.Name == "" || m.Name == c.Name) && strings.Contains(image, m.Image)
	})
}
