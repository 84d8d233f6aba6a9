//go:build linux

package kubetest

import (
	"net/url"
	"testing"
)

// CreateNamespace creates a namespace and, as Kubernetes' service-account controller would
// (none runs with the API server alone), its "default" ServiceAccount, which the
// ServiceAccount admission plugin requires of every Pod. On a node, whose controller manager
// makes it, it waits for it instead.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	c.CreateNamespaceLabelled(t, name, nil)
}

// CreateNamespaceLabelled is CreateNamespace with labels on the namespace, such as Pod
// Security's "pod-security.kubernetes.io/enforce": "restricted".
func (c *Cluster) CreateNamespaceLabelled(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	c.Create(t, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
	if !c.controllers {
		c.CreateServiceAccount(t, name, "default")
		return
	}
	c.WaitForStatus(t, c.AdminToken, "GET", "/api/v1/namespaces/"+url.PathEscape(name)+"/serviceaccounts/default", 200)
}

// CreateServiceAccount creates a ServiceAccount.
func (c *Cluster) CreateServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name},
	})
}

// CreatePod creates a Pod from pod, raw JSON text or a Go value (a map, say) as for Do's body,
// and returns the Pod as the apiserver stored it. No kubelet runs: the Pod stays Pending.
func (c *Cluster) CreatePod(t testing.TB, namespace string, pod any) map[string]any {
	t.Helper()
	return c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/pods", pod)
}

// PolicyRule is an RBAC rule, as in a Role.
type PolicyRule struct {
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	Verbs         []string `json:"verbs"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// Subject is whom a RoleBinding binds: Kind "User", "Group" or "ServiceAccount" (which also
// needs Namespace).
type Subject struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	APIGroup  string `json:"apiGroup,omitempty"`
}

// CreateRole creates an RBAC Role.
func (c *Cluster) CreateRole(t testing.TB, namespace, name string, rules ...PolicyRule) {
	t.Helper()
	for i := range rules {
		if rules[i].APIGroups == nil {
			rules[i].APIGroups = []string{""}
		}
	}
	c.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+url.PathEscape(namespace)+"/roles", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": name},
		"rules":    rules,
	})
}

// CreateRoleBinding creates an RBAC RoleBinding of role (a Role in namespace) to subjects. RBAC
// caches what it reads: wait with WaitForStatus before relying on the binding.
func (c *Cluster) CreateRoleBinding(t testing.TB, namespace, name, role string, subjects ...Subject) {
	t.Helper()
	for i := range subjects {
		if subjects[i].APIGroup == "" && subjects[i].Kind != "ServiceAccount" {
			subjects[i].APIGroup = "rbac.authorization.k8s.io"
		}
	}
	c.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+url.PathEscape(namespace)+"/rolebindings", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
		"subjects": subjects,
	})
}

// ServiceAccountToken returns a token of ServiceAccount namespace/name from the TokenRequest
// API, signed by the apiserver as a pod's projected token would be, valid for an hour.
func (c *Cluster) ServiceAccountToken(t testing.TB, namespace, name string) string {
	t.Helper()
	created := c.Create(t, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/serviceaccounts/"+url.PathEscape(name)+"/token",
		map[string]any{
			"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
			"spec": map[string]any{"expirationSeconds": 3600},
		})
	status, _ := created["status"].(map[string]any)
	tok, _ := status["token"].(string)
	if tok == "" {
		t.Fatalf("kubetest: TokenRequest for %s/%s returned no token: %v", namespace, name, created)
	}
	return tok
}
