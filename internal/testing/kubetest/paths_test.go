//go:build linux

package kubetest

import "testing"

func TestCollectionPath(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind, want string
	}{
		{"v1", "ServiceAccount", "/api/v1/namespaces/ns/serviceaccounts"},
		{"v1", "Service", "/api/v1/namespaces/ns/services"},
		{"v1", "Namespace", "/api/v1/namespaces"},
		{"apps/v1", "Deployment", "/apis/apps/v1/namespaces/ns/deployments"},
		{"policy/v1", "PodDisruptionBudget", "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
		{"rbac.authorization.k8s.io/v1", "RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings"},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"},
		{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"},
		{"cert-manager.io/v1", "Certificate", ""},
	} {
		got, ok := CollectionPath(map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind}, "ns")
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s %s: %q %v, want %q", tc.apiVersion, tc.kind, got, ok, tc.want)
		}
	}
}
