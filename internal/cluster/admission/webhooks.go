package admission

import (
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Endpoint says where the API server reaches the webhook: a Service in the cluster, or a URL
// (a webhook outside the cluster, and the tests' on loopback). Exactly one of Service and URL is
// set.
type Endpoint struct {
	// Service is the webhook's Service: its namespace and name, and its port.
	Service *admissionregistrationv1.ServiceReference
	// URL is the base URL, "https://host:port", without a path.
	URL string
	// CABundle is the PEM of the CA that signed the webhook's serving certificate; empty when
	// something else fills it in (cert-manager's CA injector).
	CABundle []byte
}

// Options are the settings of the webhook configurations.
type Options struct {
	Endpoint Endpoint
	// Namespace is the injector's own namespace: never selected, so that the injector's pods
	// never wait on themselves.
	Namespace string
	// TimeoutSeconds is how long the API server waits for an answer (1 to 30; 10 when 0).
	TimeoutSeconds int32
}

// DefaultTimeoutSeconds is the API server's default, and ours.
const DefaultTimeoutSeconds = 10

func (o Options) timeout() *int32 {
	t := o.TimeoutSeconds
	if t == 0 {
		t = DefaultTimeoutSeconds
	}
	return &t
}

// clientConfig is where the API server sends path.
func (o Options) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: o.Endpoint.CABundle}
	if s := o.Endpoint.Service; s != nil {
		svc := *s
		svc.Path = &path
		cc.Service = &svc
		return cc
	}
	url := o.Endpoint.URL + path
	cc.URL = &url
	return cc
}

// excluded is the namespace selector term that keeps the system namespaces and the injector's own
// out.
func (o Options) excluded() metav1.LabelSelectorRequirement {
	names := append([]string(nil), SystemNamespaces...)
	if o.Namespace != "" {
		names = append(names, o.Namespace)
	}
	return metav1.LabelSelectorRequirement{Key: NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: names}
}

// podMatchConditions are what selectors cannot see: the opt-out annotation, mirror pods, Windows
// pods. They are CEL over the AdmissionRequest (object is the pod).
func podMatchConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		{Name: "not-opted-out", Expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations) || object.metadata.annotations[%q] != %q`,
			InjectLabel, InjectLabel, OptOutAnnotationValue)},
		{Name: "not-a-mirror-pod", Expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations)`, MirrorAnnotation)},
		{Name: "not-windows", Expression: `!has(object.spec.os) || object.spec.os.name != "windows"`},
	}
}

// MutatingWebhookConfiguration is the configuration of the pod webhook: two webhooks on one
// endpoint. Pods that opted in themselves (label InjectLabel=Enabled) fail closed: such a pod is
// never created unwrapped. The other pods of an opted-in namespace fail open (Ignore), and the
// ValidatingAdmissionPolicy of Backstop flags those admitted unwrapped. Both are for CREATE only,
// reinvoked when a later webhook changed the pod (IfNeeded), and have side effects (an Event)
// only when the request is no dry run.
func MutatingWebhookConfiguration(o Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	side := admissionregistrationv1.SideEffectClassNoneOnDryRun
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	equivalent := admissionregistrationv1.Equivalent
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
			Scope: ptr(admissionregistrationv1.NamespacedScope)},
	}}
	hook := func(name string, policy *admissionregistrationv1.FailurePolicyType, ns, obj *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name:                    name,
			ClientConfig:            o.clientConfig(MutatePath),
			Rules:                   rules,
			FailurePolicy:           policy,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       ns,
			ObjectSelector:          obj,
			SideEffects:             &side,
			TimeoutSeconds:          o.timeout(),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvoke,
			MatchConditions:         podMatchConditions(),
		}
	}
	explicit := hook(ExplicitWebhook, &fail,
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{o.excluded()}},
		&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: Enabled}})
	namespaced := hook(NamespaceWebhook, &ignore,
		&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: Enabled}, MatchExpressions: []metav1.LabelSelectorRequirement{o.excluded()}},
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: InjectLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{Enabled, Disabled}}}})
	// Namespace-wide, only the pods that run to completion (a Job's, a bare pod's with
	// restartPolicy Never or OnFailure): a Deployment's pods never end, and nothing hangs there.
	namespaced.MatchConditions = append(namespaced.MatchConditions, RunsToCompletion)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{explicit, namespaced},
	}
}

// ValidatingWebhookConfiguration is the configuration of the warnings at the creation of Jobs
// and CronJobs: it never denies (failurePolicy Ignore, and the handler always allows) and has no
// side effects. It selects every namespace but the excluded ones, since a plain Job in a mesh's
// namespace is worth a warning whether sidesync is selected there or not.
func ValidatingWebhookConfiguration(o Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         WarnWebhook,
			ClientConfig: o.clientConfig(WarnPath),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs", "cronjobs"},
					Scope: ptr(admissionregistrationv1.NamespacedScope)},
			}},
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{o.excluded()}},
			SideEffects:             &none,
			TimeoutSeconds:          ptr(int32(5)),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// RunsToCompletion is the match condition of namespace-wide selection: the API server has
// defaulted restartPolicy to Always when the pod says nothing.
var RunsToCompletion = admissionregistrationv1.MatchCondition{Name: "runs-to-completion",
	Expression: `!has(object.spec.restartPolicy) || object.spec.restartPolicy != ` + strconv.Quote(string(restart.Always))}

func ptr[T any](v T) *T { return &v }
