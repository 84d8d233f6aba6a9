package admission

// Selection. A namespace opts in with the label InjectLabel=Enabled; a pod opts in by itself
// with the same label (then a pod that must be wrapped is never created unwrapped: the explicit
// webhook fails closed), and opts out with InjectLabel=Disabled or the annotation
// InjectLabel: "false" (annotations are seen by matchConditions, not by selectors).
const (
	// InjectLabel is the label (on a namespace or a pod) and the annotation (on a pod) that
	// select or exclude.
	InjectLabel = "sidesync.io/inject"
	// Enabled selects: a namespace's label, or a pod's own.
	Enabled = "enabled"
	// Disabled excludes a pod (label) in a selected namespace.
	Disabled = "disabled"
	// OptOutAnnotationValue excludes a pod by annotation: sidesync.io/inject: "false".
	OptOutAnnotationValue = "false"
	// SkippedAnnotation is written on a selected pod that the webhook admitted unwrapped, with the
	// reason (a registry that did not answer in time, an app without a command).
	SkippedAnnotation = "sidesync.io/skipped"
	// NativeAnnotation is written by the webhook on a pod it wraps or skips: whether it asked
	// inject for native sidecars, and why ("classic (auto): node n1 ... runs no kubelet of 1.29
	// or newer"; NativeChoice.Annotation).
	NativeAnnotation = "sidesync.io/native"
	// MirrorAnnotation marks a static pod's mirror, which the API server lets nobody change.
	MirrorAnnotation = "kubernetes.io/config.mirror"
	// NamespaceNameLabel is the label the API server sets on every namespace to its name.
	NamespaceNameLabel = "kubernetes.io/metadata.name"
)

// SystemNamespaces are never selected, whatever their labels: a webhook that selects the pods of
// the control plane can lock a cluster out (vault-k8s#258, linkerd#10817).
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// ServingDNSNames are the DNS names of the injector's serving certificate, for its Service
// service in namespace: the API server calls a webhook's Service as SERVICE.NAMESPACE.svc (the
// TLS server name of k8s.io/apiserver's webhook client), and the two other forms are what a
// client inside the cluster may use. The injector's self-managed certificates and the chart's
// cert-manager Certificate both name these (the chart's through a generated template).
func ServingDNSNames(service, namespace, clusterDomain string) []string {
	svc := service + "." + namespace + ".svc"
	return []string{svc, svc + "." + clusterDomain, service + "." + namespace}
}

// The webhook's HTTP paths.
const (
	MutatePath  = "/mutate-pods"
	WarnPath    = "/warn-workloads"
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
	MetricsPath = "/metrics"
)

// Names of the configurations and of their webhooks.
const (
	MutatingConfigName   = "sidesync-injector"
	ValidatingConfigName = "sidesync-warnings"
	// ExplicitWebhook serves pods that opted in themselves: failurePolicy Fail.
	ExplicitWebhook = "explicit.pods.sidesync.io"
	// NamespaceWebhook serves the pods of opted-in namespaces: failurePolicy Ignore.
	NamespaceWebhook = "namespace.pods.sidesync.io"
	// WarnWebhook warns at the creation of Jobs and CronJobs.
	WarnWebhook = "workloads.sidesync.io"
)
