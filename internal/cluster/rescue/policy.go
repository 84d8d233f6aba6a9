package rescue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// PolicyName names the ValidatingAdmissionPolicy that confines the sidesync-rescuer's service
// account, and its binding. Both are cluster-wide: one rescuer per cluster.
const PolicyName = "rescuer.pods.sidesync.io"

// PolicyMessage begins every denial of the policy.
const PolicyMessage = "sidesync-rescuer may only add ephemeral containers that run sidesync quit"

// MaxQuitSidecars is how many --sidecar flags the policy lets a quit container carry. CEL (as
// Kubernetes 1.30 has it) has no loop over a list's indexes, so the policy names each place a
// flag may take; a pod with more running sidecars than this is not one rescue meets.
const MaxQuitSidecars = 16

// PolicyOptions say whom the policy confines and to what image.
type PolicyOptions struct {
	// Image is the sidesync image the rescuer adds (its --image).
	Image string
	// Namespace and ServiceAccount name the rescuer's service account.
	Namespace, ServiceAccount string
}

// Policy is the ValidatingAdmissionPolicy, and its binding, that lets the rescuer's service
// account add to a pod (an UPDATE of pods/ephemeralcontainers, which a patch of the subresource
// is to admission) only what Decide adds without Options.Signal: containers named
// ContainerPrefix+N, of o.Image, whose command is QuitCommand followed by --sidecar SPEC pairs,
// with no args, no target container, nothing mounted, no variable but the quit credentials the
// catalog declares (copied as they are from one of the pod's containers), and no privilege; and
// no ephemeral container the pod has already may change. The match condition on the user name
// leaves every other user's requests to the API server's other rules. It fails closed: a
// rescue that the policy cannot judge is not made.
func Policy(o PolicyOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	namespaced := admissionregistrationv1.NamespacedScope
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: &equivalent,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
						Resources: []string{"pods/ephemeralcontainers"}, Scope: &namespaced},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "sidesync-rescuer",
				Expression: "request.userInfo.username == " + q("system:serviceaccount:"+o.Namespace+":"+o.ServiceAccount),
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "image", Expression: q(o.Image)},
				{Name: "old", Expression: "has(oldObject.spec.ephemeralContainers) ? oldObject.spec.ephemeralContainers : []"},
				{Name: "added", Expression: "has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers.filter(c, !variables.old.exists(o, o.name == c.name)) : []"},
			},
			Validations: policyRules(),
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// policyRules are the policy's validations: one rule each, so that a denial says which.
func policyRules() []admissionregistrationv1.Validation {
	forbidden := metav1.StatusReasonForbidden
	rule := func(expr, why string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{Expression: expr, Message: PolicyMessage + ": " + why, Reason: &forbidden}
	}
	added := func(cond string) string { return "variables.added.all(c, " + cond + ")" }
	creds := Credentials()
	return []admissionregistrationv1.Validation{
		rule("variables.old.all(o, has(object.spec.ephemeralContainers) && object.spec.ephemeralContainers.exists(n, n == o))",
			"an ephemeral container the pod has may not change"),
		rule(added("c.name.startsWith("+q(ContainerPrefix)+")"),
			"its name must begin with "+ContainerPrefix),
		// The image's message names the image, which only the variable knows once the chart
		// has rendered it.
		{
			Expression:        added("has(c.image) && c.image == variables.image"),
			MessageExpression: q(PolicyMessage+": its image must be ") + " + variables.image",
			Reason:            &forbidden,
		},
		rule(added(quitCommandCEL()),
			fmt.Sprintf("its command must be %s followed only by at most %d pairs --%s SPEC, SPEC one of sidesync's profiles",
				strings.Join(QuitCommand(), " "), MaxQuitSidecars, contract.FlagSidecar)),
		rule(added("!has(c.args) || size(c.args) == 0"), "it may have no args"),
		rule(added(`!has(c.targetContainerName) || c.targetContainerName == ""`), "it may not target a container (targetContainerName)"),
		rule(added("(!has(c.volumeMounts) || size(c.volumeMounts) == 0) && (!has(c.volumeDevices) || size(c.volumeDevices) == 0)"),
			"it may mount no volume or device"),
		rule(added("(!has(c.envFrom) || size(c.envFrom) == 0) && (!has(c.env) || c.env.all(e, e.name in "+celList(creds)+
			" && object.spec.containers.exists(k, has(k.env) && k.env.exists(v, v == e))))"),
			"its only variables may be the sidecars' quit credentials ("+strings.Join(creds, ", ")+"), each as one of the pod's containers has it, and no envFrom"),
		rule(added(securityCEL()),
			"its securityContext must say runAsNonRoot, and neither privileged, privilege escalation, added capabilities nor user 0"),
	}
}

// quitCommandCEL is the condition on a container c whose command is QuitCommand followed by
// pairs --sidecar SPEC, SPEC starting with a profile's name: the places of the flag and of the
// specs are listed, up to MaxQuitSidecars pairs.
func quitCommandCEL() string {
	base := QuitCommand()
	n := len(base)
	terms := []string{
		"has(c.command)",
		fmt.Sprintf("size(c.command) >= %d", n+2),
		fmt.Sprintf("size(c.command) <= %d", n+2*MaxQuitSidecars),
		fmt.Sprintf("(size(c.command) - %d) %% 2 == 0", n),
	}
	for i, w := range base {
		terms = append(terms, fmt.Sprintf("c.command[%d] == %s", i, q(w)))
	}
	var flags, specs []string
	for i := range MaxQuitSidecars {
		flags = append(flags, strconv.Itoa(n+2*i))
		specs = append(specs, strconv.Itoa(n+2*i+1))
	}
	terms = append(terms,
		"["+strings.Join(flags, ", ")+"].all(i, i >= size(c.command) || c.command[i] == "+q("--"+contract.FlagSidecar)+")",
		"["+strings.Join(specs, ", ")+"].all(i, i >= size(c.command) || "+catalog.NamesProfileCEL("c.command[i]")+")")
	return strings.Join(terms, " && ")
}

// securityCEL is the condition on c's securityContext: what Decide sets for a quit container
// (runAsNonRoot), and none of what would give it more than the pod's other containers have.
func securityCEL() string {
	sc := "c.securityContext"
	return strings.Join([]string{
		"has(" + sc + ")",
		"has(" + sc + ".runAsNonRoot) && " + sc + ".runAsNonRoot",
		"(!has(" + sc + ".privileged) || !" + sc + ".privileged)",
		"(!has(" + sc + ".allowPrivilegeEscalation) || !" + sc + ".allowPrivilegeEscalation)",
		"(!has(" + sc + ".capabilities) || !has(" + sc + ".capabilities.add) || size(" + sc + ".capabilities.add) == 0)",
		"(!has(" + sc + ".runAsUser) || " + sc + ".runAsUser != 0)",
	}, " && ")
}

// Credentials are the variables a quit container may carry: the credentials the catalog's
// rows send with their quit calls (Dapr's API token), sorted.
func Credentials() []string {
	var names []string
	for _, e := range catalog.Entries() {
		if e.Credential != nil && !slices.Contains(names, e.Credential.Env) {
			names = append(names, e.Credential.Env)
		}
	}
	slices.Sort(names)
	return names
}

// q and celList write CEL constants: the catalog's, the one way every rendering writes them.
var (
	q       = catalog.CELString
	celList = catalog.CELList
)
