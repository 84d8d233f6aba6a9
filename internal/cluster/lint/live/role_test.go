//go:build linux

package live

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// testCronJobsJobs: a Job that a CronJob read too created is left out; one whose CronJob is not
// read is linted.
func testCronJobsJobs(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	const ns = "cronjobs-jobs"
	createNamespace(t, client, ns)
	cj, err := client.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec:       batchv1.CronJobSpec{Schedule: "@daily", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec()}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := func(name string, owner metav1.OwnerReference) {
		t.Helper()
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}}, Spec: jobSpec()}
		if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	owned("nightly-29000000", metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &yes})
	owned("gone-29000000", metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "gone", UID: "0d5a5c3e-0000-4000-8000-000000000000", Controller: &yes})
	owned("not-controlled", metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID})
	objs, err := Read(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ns + "/CronJob/nightly", ns + "/Job/gone-29000000", ns + "/Job/not-controlled"}
	if diff := cmp.Diff(want, names(objs)); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
}

// testRole applies deploy/lint/role.yaml, binds it to ServiceAccounts, and reads as them
// (impersonated): for -A with a ClusterRoleBinding, for -n with a RoleBinding. Without the list
// of CronJobs, Read fails naming it; without the get of namespaces, it lints all the same and
// says so.
func testRole(t *testing.T, admin *rest.Config, client kubernetes.Interface) {
	ctx := t.Context()
	const ns = "team-a"
	if _, err := client.CoreV1().Namespaces().Create(ctx, meshes(t)[1].namespace(ns), metav1.CreateOptions{}); err != nil { // asks for Istio
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report"}, Spec: jobSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := readRole(t)
	for i, tc := range []struct {
		name      string
		rules     []rbacv1.PolicyRule
		namespace string // "" for -A, bound with a ClusterRoleBinding
		wantErr   []string
		unread    bool // Read returns the objects and a *NamespacesUnread
	}{
		{name: "as written, -A", rules: role.Rules},
		{name: "as written, -n", rules: role.Rules, namespace: ns},
		{name: "without list on cronjobs", rules: without(role.Rules, "cronjobs", "list"), namespace: ns,
			wantErr: []string{"listing CronJobs in team-a", `cannot list resource "cronjobs"`}},
		{name: "without get on namespaces", rules: without(role.Rules, "namespaces", "get"), namespace: ns,
			wantErr: []string{"reading namespace team-a", `cannot get resource "namespaces"`}, unread: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa := "linter-" + string(rune('a'+i))
			user := bind(t, client, role.Name+"-"+sa, tc.rules, ns, sa, tc.namespace)
			as := rest.CopyConfig(admin)
			as.BearerToken, as.Impersonate = admin.BearerToken, rest.ImpersonationConfig{UserName: user}
			c, err := kubernetes.NewForConfig(as)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Read(ctx, c, tc.namespace)
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v; want it to name %q", err, want)
				}
			}
			var unread *NamespacesUnread
			switch {
			case len(tc.wantErr) == 0 && err != nil:
				t.Fatalf("Read: %v", err)
			case tc.unread != errors.As(err, &unread):
				t.Errorf("error %v: a *NamespacesUnread is %v, want %v", err, !tc.unread, tc.unread)
			}
			if len(tc.wantErr) > 0 && !tc.unread {
				return
			}
			at := slices.Index(names(objs), ns+"/Job/report")
			if at < 0 {
				t.Fatalf("Read = %v; want %s/Job/report among them", names(objs), ns)
			}
			// The namespace asks for Istio: seen when the namespace is read, not otherwise.
			if from := objs[at].FromNamespace; (from["istio"] != "") == tc.unread {
				t.Errorf("FromNamespace = %v, with the namespace unread: %v", from, tc.unread)
			}
		})
	}
}

// readRole reads deploy/lint/role.yaml.
func readRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "lint", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("deploy/lint/role.yaml: %v", err)
	}
	if role.Kind != "ClusterRole" || role.Name == "" {
		t.Fatalf("deploy/lint/role.yaml: a %s named %q, want a ClusterRole", role.Kind, role.Name)
	}
	return &role
}

// without is rules without verb on resource.
func without(rules []rbacv1.PolicyRule, resource, verb string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if !slices.Contains(r.Resources, resource) {
			out = append(out, r)
			continue
		}
		if rest := slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resource }); len(rest) > 0 {
			out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: rest, Verbs: r.Verbs})
		}
		if verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(s string) bool { return s == verb }); len(verbs) > 0 {
			out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{resource}, Verbs: verbs})
		}
	}
	return out
}

// bind creates ClusterRole name with rules and ServiceAccount sa in saNamespace, binds them
// (in namespace with a RoleBinding, or cluster-wide when it is ""), waits until RBAC allows the
// ServiceAccount to list Jobs there, and returns its user name.
func bind(t *testing.T, client kubernetes.Interface, name string, rules []rbacv1.PolicyRule, saNamespace, sa, namespace string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts(saNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: saNamespace}}
	var err error
	if namespace == "" {
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	} else {
		_, err = client.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + saNamespace + ":" + sa
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "list", Group: "batch", Resource: "jobs"}}}
	// RBAC reads bindings from a cache: wait until it has this one, polling the API server's
	// own answer (30 s is only a failure guard).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			return user
		}
		if time.Now().After(deadline) {
			t.Fatalf("RBAC does not allow %s to list Jobs after 30s", user)
		}
	}
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobSpec is a Job's spec the API server takes.
func jobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "app", Image: "example/app:1.0", Command: []string{"./report"}}},
	}}}
}
