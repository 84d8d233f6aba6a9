//go:build linux

package kubetest

import (
	"strings"
)

// clusterScoped are the built-in kinds that live outside namespaces, among those the tests send.
var clusterScoped = []string{"Namespace", "ClusterRole", "ClusterRoleBinding",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}

// CollectionPath is where the API server takes an object like obj (a decoded manifest: its
// apiVersion and kind) to create it in namespace, as kubectl finds it: the group and version,
// the namespace unless the kind is cluster-scoped, and the kind's plural (lower case, "y" →
// "ies", else "s", as every built-in kind the tests send is spelt). It reports false for a
// kind of a group that is not Kubernetes' own (cert-manager's), which a bare API server does
// not serve.
func CollectionPath(obj map[string]any, namespace string) (string, bool) {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	group, version, grouped := strings.Cut(apiVersion, "/")
	base := "/api/" + apiVersion
	if grouped {
		if !builtinGroup(group) {
			return "", false
		}
		base = "/apis/" + group + "/" + version
	}
	plural := strings.ToLower(kind)
	if strings.HasSuffix(plural, "y") {
		plural = strings.TrimSuffix(plural, "y") + "ies"
	} else {
		plural += "s"
	}
	for _, k := range clusterScoped {
		if k == kind {
			return base + "/" + plural, true
		}
	}
	return base + "/namespaces/" + namespace + "/" + plural, true
}

// builtinGroup reports whether an API group is one of Kubernetes' own.
func builtinGroup(g string) bool {
	switch g {
	case "apps", "batch", "policy", "autoscaling":
		return true
	}
	return strings.HasSuffix(g, ".k8s.io")
}
