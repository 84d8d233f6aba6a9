package chart

import (
	"fmt"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// typed are the kinds the chart makes that k8s.io/api has types for.
func typed(kind string) any {
	switch kind {
	case "Deployment":
		return &appsv1.Deployment{}
	case "Service":
		return &corev1.Service{}
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	case "Secret":
		return &corev1.Secret{}
	case "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "ResourceQuota":
		return &corev1.ResourceQuota{}
	case "ClusterRole":
		return &rbacv1.ClusterRole{}
	case "ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "Role":
		return &rbacv1.Role{}
	case "RoleBinding":
		return &rbacv1.RoleBinding{}
	case "MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	case "ValidatingWebhookConfiguration":
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	}
	return nil
}

// checkRBAC lists what is wrong with the injector's ClusterRole: a verb or resource beyond
// namespaces get/list/watch, events create (core and events.k8s.io), only when nodes (native
// auto) is on, nodes list/watch (an informer needs no get), and, only when resolve is on, secrets
// and serviceaccounts get. pods/exec, wildcards and every write but Events' are wrong.
func checkRBAC(role *rbacv1.ClusterRole, resolve, nodes bool) []string {
	type key struct{ group, resource, verb string }
	allowed := map[key]bool{
		{"", "namespaces", "get"}: true, {"", "namespaces", "list"}: true, {"", "namespaces", "watch"}: true,
		{"", "events", "create"}: true, {"events.k8s.io", "events", "create"}: true,
	}
	if nodes {
		allowed[key{"", "nodes", "list"}] = true
		allowed[key{"", "nodes", "watch"}] = true
	}
	if resolve {
		allowed[key{"", "secrets", "get"}] = true
		allowed[key{"", "serviceaccounts", "get"}] = true
	}
	var problems []string
	granted := map[key]bool{}
	for i, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			problems = append(problems, fmt.Sprintf("rule %d: resourceNames or nonResourceURLs are not expected", i))
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					k := key{g, res, v}
					granted[k] = true
					if !allowed[k] {
						problems = append(problems, fmt.Sprintf("rule %d grants %s on %q/%s, which the injector must not have", i, v, g, res))
					}
				}
			}
		}
	}
	for k := range allowed {
		if !granted[k] {
			problems = append(problems, fmt.Sprintf("the injector needs %s on %q/%s, not granted", k.verb, k.group, k.resource))
		}
	}
	return problems
}

// checkRestricted lists what keeps a pod from the Pod Security Standards' restricted profile,
// for the fields the chart sets: non-root, no privilege escalation, every capability dropped,
// the runtime's seccomp profile, a read-only root file system (ours, not the standard's), and
// only secret and emptyDir volumes.
func checkRestricted(spec *corev1.PodSpec) []string {
	var problems []string
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		problems = append(problems, "the pod shares a host namespace")
	}
	for _, v := range spec.Volumes {
		if v.Secret == nil && v.EmptyDir == nil {
			problems = append(problems, fmt.Sprintf("volume %s is neither a secret nor an emptyDir", v.Name))
		}
	}
	all := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		sc := c.SecurityContext
		if sc == nil {
			problems = append(problems, c.Name+": no securityContext")
			continue
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			problems = append(problems, c.Name+": runAsNonRoot is not true")
		}
		if u := sc.RunAsUser; (u != nil && *u == 0) || (u == nil && psc.RunAsUser != nil && *psc.RunAsUser == 0) {
			problems = append(problems, c.Name+": runs as user 0")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			problems = append(problems, c.Name+": allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			problems = append(problems, c.Name+": privileged")
		}
		if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
			problems = append(problems, c.Name+": capabilities are not drop [ALL] with nothing added")
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			problems = append(problems, c.Name+": seccompProfile is not RuntimeDefault")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			problems = append(problems, c.Name+": readOnlyRootFilesystem is not true")
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				problems = append(problems, fmt.Sprintf("%s: hostPort %d", c.Name, p.HostPort))
			}
		}
	}
	return problems
}

// checkCertRoles lists what is wrong with the Role and ClusterRole of the self-managed
// certificates: anything but CertRules on the Secret and CertClusterRules, bound to anyone
// but the injector's ServiceAccount.
func checkCertRoles(objs []map[string]any, secret string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	name := ReleaseName + CertSecretSuffix
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: ReleaseName, Namespace: testNamespace}}
	var role rbacv1.Role
	if o := Find(objs, "Role", name); o == nil || Decode(o, &role) != nil {
		add("no Role %s", name)
	} else if diff := cmp.Diff(CertRules(secret), role.Rules); diff != "" {
		add("the Role %s (-want +got):\n%s", name, diff)
	}
	var crole rbacv1.ClusterRole
	if o := Find(objs, "ClusterRole", name); o == nil || Decode(o, &crole) != nil {
		add("no ClusterRole %s", name)
	} else if diff := cmp.Diff(CertClusterRules(), crole.Rules); diff != "" {
		add("the ClusterRole %s (-want +got):\n%s", name, diff)
	}
	var rb rbacv1.RoleBinding
	if o := Find(objs, "RoleBinding", name); o == nil || Decode(o, &rb) != nil {
		add("no RoleBinding %s", name)
	} else if rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}) || !cmp.Equal(rb.Subjects, subjects) {
		add("the RoleBinding binds %+v to %+v", rb.RoleRef, rb.Subjects)
	}
	var crb rbacv1.ClusterRoleBinding
	if o := Find(objs, "ClusterRoleBinding", name); o == nil || Decode(o, &crb) != nil {
		add("no ClusterRoleBinding %s", name)
	} else if crb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}) || !cmp.Equal(crb.Subjects, subjects) {
		add("the ClusterRoleBinding binds %+v to %+v", crb.RoleRef, crb.Subjects)
	}
	return problems
}

// checkQuota lists what is wrong with the ResourceQuota that admits the pods' priority class.
func checkQuota(objs []map[string]any, priority string) []string {
	qs := OfKind(objs, "ResourceQuota")
	if len(qs) != 1 {
		return []string{fmt.Sprintf("%d ResourceQuotas, want 1", len(qs))}
	}
	var q corev1.ResourceQuota
	if err := Decode(qs[0], &q); err != nil {
		return []string{err.Error()}
	}
	want := &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{priority}}}}
	if diff := cmp.Diff(want, q.Spec.ScopeSelector); diff != "" || q.Spec.Hard.Pods().IsZero() {
		return []string{fmt.Sprintf("the ResourceQuota does not admit pods of %s (-want +got):\n%s", priority, diff)}
	}
	return nil
}
