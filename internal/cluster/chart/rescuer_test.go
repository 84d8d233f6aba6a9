package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// rescuerCase is one set of values for the rescuer's chart and what it must make of them.
type rescuerCase struct {
	name           string
	values         map[string]any
	fullname       string // of the release's objects
	serviceAccount string
	image          string // the sidesync image: --image, and the policy's
	args           []string
	leaderElect    bool
	service        bool
}

func rescuerCases() []rescuerCase {
	return []rescuerCase{
		{name: "defaults", fullname: "sidesync-rescuer", serviceAccount: "sidesync-rescuer", image: "ghcr.io/sidesync/sidesync:v0.1.0",
			args: []string{"--image=ghcr.io/sidesync/sidesync:v0.1.0", "--grace=30s", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
				"--leader-elect=true", "--leader-election-namespace=$(POD_NAMESPACE)", "--leader-election-id=sidesync-rescuer", "--log-format=json"},
			leaderElect: true, service: true},
		{name: "a digest, an account, no leader election", values: map[string]any{
			"sidesyncImage":  map[string]any{"repository": "registry.example.com:5000/mirror/sidesync", "digest": "sha256:" + strings.Repeat("ab", 32)},
			"serviceAccount": map[string]any{"name": "rescuer"}, "leaderElect": false, "grace": "1m30s", "logFormat": "text",
			"service": map[string]any{"enabled": false}, "fullnameOverride": "rescue",
		}, fullname: "rescue", serviceAccount: "rescuer", image: "registry.example.com:5000/mirror/sidesync@sha256:" + strings.Repeat("ab", 32),
			args: []string{"--image=registry.example.com:5000/mirror/sidesync@sha256:" + strings.Repeat("ab", 32), "--grace=1m30s",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--leader-elect=false", "--log-format=text"}},
	}
}

func TestRescuerRender(t *testing.T) {
	for _, c := range rescuerCases() {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Rescuer.Render(c.values, testNamespace)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range checkRescuer(objs, c) {
				t.Error(p)
			}
		})
	}
}

// checkRescuer lists everything wrong with the rescuer chart's objects for c.
func checkRescuer(objs []map[string]any, c rescuerCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	kinds := map[string]int{}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		kinds[kind]++
		if into := rescuerTyped(kind); into != nil {
			if err := Decode(o, into); err != nil {
				add("%v", err)
			}
		}
		md, _ := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		for k := range labels {
			if strings.HasPrefix(k, "sidesync.io/") {
				add("%s %v has the label %s: nothing of the rescuer's may carry a sidesync label", kind, md["name"], k)
			}
		}
		if labels["app.kubernetes.io/managed-by"] != "Helm" {
			add("%s %v: labels %v, want the chart's", kind, md["name"], labels)
		}
		if ns, ok := md["namespace"]; ok && ns != testNamespace {
			add("%s %v is in namespace %v, not the release's", kind, md["name"], ns)
		}
	}
	want := map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Deployment": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}
	if c.leaderElect {
		want["Role"], want["RoleBinding"] = 1, 1
	}
	if c.service {
		want["Service"] = 1
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		add("objects by kind (-want +got):\n%s", diff)
	}
	if o := Find(objs, "ServiceAccount", c.serviceAccount); o == nil {
		add("no ServiceAccount %s", c.serviceAccount)
	}
	problems = append(problems, checkRescuerRBAC(objs, c)...)
	var dep appsv1.Deployment
	if o := Find(objs, "Deployment", c.fullname); o == nil {
		add("no Deployment %s", c.fullname)
	} else if Decode(o, &dep) == nil {
		problems = append(problems, checkRescuerDeployment(&dep, c)...)
		if o := Find(objs, "Service", c.fullname); o != nil {
			var svc corev1.Service
			if Decode(o, &svc) == nil && (!cmp.Equal(svc.Spec.Selector, dep.Spec.Selector.MatchLabels) ||
				len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics")) {
				add("the Service does not lead to the pods' metrics port: %+v", svc.Spec)
			}
		}
	}
	return append(problems, checkRescuerPolicy(objs, c)...)
}

// rescuerTyped are the kinds the rescuer's chart makes that k8s.io/api has types for.
func rescuerTyped(kind string) any {
	switch kind {
	case "Role":
		return &rbacv1.Role{}
	case "RoleBinding":
		return &rbacv1.RoleBinding{}
	case "ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	}
	return typed(kind)
}

// grant is one verb on one resource, for a rule's name or for any.
type grant struct{ group, resource, verb, name string }

// grants lists what rules grant, one verb on one resource (and name) each.
func grants(rules []rbacv1.PolicyRule) ([]grant, []string) {
	var out []grant
	var problems []string
	for i, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			problems = append(problems, fmt.Sprintf("rule %d: nonResourceURLs are not expected", i))
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, grant{g, res, v, n})
					}
				}
			}
		}
	}
	return out, problems
}

// checkRescuerRBAC: the ClusterRole grants exactly pods get/list/watch, pods/ephemeralcontainers
// patch, namespaces get/list/watch and Events create/patch in both groups; the Role exactly
// leases create, and get/update of the Lease named after the release; both are bound to the
// service account alone.
func checkRescuerRBAC(objs []map[string]any, c rescuerCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	exactly := func(who string, rules []rbacv1.PolicyRule, want []grant) {
		got, p := grants(rules)
		problems = append(problems, p...)
		less := func(a, b grant) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
		slices.SortFunc(got, less)
		slices.SortFunc(want, less)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(grant{})); diff != "" {
			add("%s grants (-want +got):\n%s", who, diff)
		}
	}
	var role rbacv1.ClusterRole
	if o := Find(objs, "ClusterRole", c.fullname); o == nil || Decode(o, &role) != nil {
		add("no ClusterRole %s", c.fullname)
	} else {
		exactly("the ClusterRole", role.Rules, []grant{
			{"", "pods", "get", ""}, {"", "pods", "list", ""}, {"", "pods", "watch", ""},
			{"", "pods/ephemeralcontainers", "patch", ""},
			{"", "namespaces", "get", ""}, {"", "namespaces", "list", ""}, {"", "namespaces", "watch", ""},
			{"", "events", "create", ""}, {"", "events", "patch", ""},
			{"events.k8s.io", "events", "create", ""}, {"events.k8s.io", "events", "patch", ""},
		})
	}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: c.serviceAccount, Namespace: testNamespace}}
	var crb rbacv1.ClusterRoleBinding
	if o := Find(objs, "ClusterRoleBinding", c.fullname); o == nil || Decode(o, &crb) != nil {
		add("no ClusterRoleBinding %s", c.fullname)
	} else if crb.RoleRef.Name != c.fullname || crb.RoleRef.Kind != "ClusterRole" || !cmp.Equal(crb.Subjects, subjects) {
		add("the ClusterRoleBinding binds %+v to %+v", crb.RoleRef, crb.Subjects)
	}
	if !c.leaderElect {
		return problems
	}
	var lease rbacv1.Role
	if o := Find(objs, "Role", c.fullname); o == nil || Decode(o, &lease) != nil {
		add("no Role %s", c.fullname)
	} else {
		g := "coordination.k8s.io"
		exactly("the Role", lease.Rules, []grant{{g, "leases", "create", ""}, {g, "leases", "get", c.fullname}, {g, "leases", "update", c.fullname}})
	}
	var rb rbacv1.RoleBinding
	if o := Find(objs, "RoleBinding", c.fullname); o == nil || Decode(o, &rb) != nil {
		add("no RoleBinding %s", c.fullname)
	} else if rb.RoleRef.Name != c.fullname || rb.RoleRef.Kind != "Role" || !cmp.Equal(rb.Subjects, subjects) {
		add("the RoleBinding binds %+v to %+v", rb.RoleRef, rb.Subjects)
	}
	return problems
}

func checkRescuerDeployment(dep *appsv1.Deployment, c rescuerCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	spec := &dep.Spec.Template.Spec
	if spec.ServiceAccountName != c.serviceAccount {
		add("serviceAccountName %q", spec.ServiceAccountName)
	}
	if !cmp.Equal(dep.Spec.Selector.MatchLabels, selectorSubset(dep.Spec.Template.Labels, dep.Spec.Selector.MatchLabels)) {
		add("the Deployment's selector does not match its pods' labels")
	}
	problems = append(problems, checkRestricted(spec)...)
	if len(spec.Containers) != 1 {
		return append(problems, fmt.Sprintf("%d containers, want 1", len(spec.Containers)))
	}
	ctr := spec.Containers[0]
	if ctr.Image != "ghcr.io/sidesync/sidesync-rescuer:v0.1.0" {
		add("image %q", ctr.Image)
	}
	if diff := cmp.Diff(c.args, ctr.Args); diff != "" {
		add("args (-want +got):\n%s", diff)
	}
	if ctr.Resources.Limits.Memory().IsZero() || ctr.Resources.Limits.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
		add("resources without limits (or requests): %+v", ctr.Resources)
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 8080 || ports["probes"] != 8081 {
		add("container ports %v, want metrics 8080 and probes 8081, as the args say", ports)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": ctr.LivenessProbe, "/readyz": ctr.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port != intstr.FromString("probes") {
			add("no HTTP probe of %s on the probes port: %+v", name, p)
		}
	}
	return problems
}

// checkRescuerPolicy compares the rendered policy and binding with rescue.Policy's for the
// release: the same, but for the chart's labels.
func checkRescuerPolicy(objs []map[string]any, c rescuerCase) []string {
	var problems []string
	policy, binding := rescue.Policy(rescue.PolicyOptions{Namespace: testNamespace, ServiceAccount: c.serviceAccount, Image: c.image})
	for _, pair := range []struct {
		kind      string
		got, want interface {
			GetName() string
			SetLabels(map[string]string)
		}
	}{
		{"ValidatingAdmissionPolicy", &admissionregistrationv1.ValidatingAdmissionPolicy{}, policy},
		{"ValidatingAdmissionPolicyBinding", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, binding},
	} {
		o := Find(objs, pair.kind, pair.want.GetName())
		if o == nil {
			problems = append(problems, fmt.Sprintf("no %s %s", pair.kind, pair.want.GetName()))
			continue
		}
		if err := Decode(o, pair.got); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		pair.got.SetLabels(nil)
		if diff := cmp.Diff(pair.want, pair.got); diff != "" {
			problems = append(problems, fmt.Sprintf("%s differs from internal/cluster/rescue's (-rescue +chart):\n%s", pair.kind, diff))
		}
	}
	return problems
}

// TestRescuerChecksCatch proves that the checks above fail on careless edits of the chart.
func TestRescuerChecksCatch(t *testing.T) {
	c := rescuerCases()[0]
	clusterRole := func(objs []map[string]any) map[string]any { return Find(objs, "ClusterRole", c.fullname) }
	container := func(objs []map[string]any) map[string]any {
		return dig(Find(objs, "Deployment", c.fullname), "spec", "template", "spec")["containers"].([]any)[0].(map[string]any)
	}
	for _, b := range []struct {
		name, want string
		mutate     func(objs []map[string]any)
	}{
		{"pods/exec", "pods/exec", func(objs []map[string]any) {
			role := clusterRole(objs)
			role["rules"] = append(role["rules"].([]any), map[string]any{"apiGroups": []any{""}, "resources": []any{"pods/exec"}, "verbs": []any{"create"}})
		}},
		{"patch pods", `resource: "pods", verb: "patch"`, func(objs []map[string]any) {
			rule := clusterRole(objs)["rules"].([]any)[0].(map[string]any)
			rule["verbs"] = append(rule["verbs"].([]any), "patch")
		}},
		{"any lease", "leases", func(objs []map[string]any) {
			rule := Find(objs, "Role", c.fullname)["rules"].([]any)[1].(map[string]any)
			delete(rule, "resourceNames")
		}},
		{"another image in the policy", "differs from internal/cluster/rescue's", func(objs []map[string]any) {
			v := Find(objs, "ValidatingAdmissionPolicy", rescue.PolicyName)["spec"].(map[string]any)["variables"].([]any)[0].(map[string]any)
			v["expression"] = `"busybox"`
		}},
		{"fail open", "differs from internal/cluster/rescue's", func(objs []map[string]any) {
			Find(objs, "ValidatingAdmissionPolicy", rescue.PolicyName)["spec"].(map[string]any)["failurePolicy"] = "Ignore"
		}},
		{"a writable root", "readOnlyRootFilesystem", func(objs []map[string]any) {
			container(objs)["securityContext"].(map[string]any)["readOnlyRootFilesystem"] = false
		}},
		{"a flag lost", "args", func(objs []map[string]any) {
			ctr := container(objs)
			ctr["args"] = ctr["args"].([]any)[1:]
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			objs, err := Rescuer.Render(c.values, testNamespace)
			if err != nil {
				t.Fatal(err)
			}
			if p := checkRescuer(objs, c); len(p) > 0 {
				t.Fatalf("the chart as rendered already fails: %v", p)
			}
			b.mutate(objs)
			problems := checkRescuer(objs, c)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, b.want) }) {
				t.Errorf("broken, the checks found %q, none about %q", problems, b.want)
			}
		})
	}
}

// TestRescuerRenderRefuses: values that would write something else than an image reference or
// an account's name into the policy's CEL are refused, by the schema or the templates.
func TestRescuerRenderRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"a quote in the repository", map[string]any{"sidesyncImage": map[string]any{"repository": `ghcr.io/x" || true || "`}}, "sidesyncImage"},
		{"a space in the tag", map[string]any{"sidesyncImage": map[string]any{"tag": "v1 x"}}, "tag"},
		{"a bad digest", map[string]any{"sidesyncImage": map[string]any{"digest": "sha256:xyz"}}, "digest"},
		{"an account that is no name", map[string]any{"serviceAccount": map[string]any{"name": `a" || true || "`}}, "serviceAccount"},
		{"a grace that is no duration", map[string]any{"grace": "30"}, "grace"},
		{"a log format", map[string]any{"logFormat": "xml"}, "logFormat"},
		{"no replica", map[string]any{"replicaCount": 0}, "replicaCount"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rescuer.Render(c.values, testNamespace)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Render: %v, want an error about %q", err, c.want)
			}
		})
	}
	t.Run("kubeVersion", func(t *testing.T) {
		dir, err := Rescuer.Dir()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := renderDir(dir, string(Rescuer), nil, testNamespace, "v1.29.9"); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
			t.Errorf("rendered for Kubernetes 1.29: %v", err)
		}
		if _, err := renderDir(dir, string(Rescuer), nil, testNamespace, "v1.30.0"); err != nil {
			t.Errorf("Kubernetes 1.30: %v", err)
		}
	})
}

// TestRescuerTemplateNames: the generated names the chart's NOTES use are internal/cluster/rescue's.
func TestRescuerTemplateNames(t *testing.T) {
	tpl := string(rescueTemplate())
	for _, want := range []string{rescue.NamespaceLabel, rescue.Enabled, rescue.ContainerPrefix, rescue.PolicyName} {
		if !strings.Contains(tpl, "\n"+want+"\n") {
			t.Errorf("_rescue.tpl does not define %q", want)
		}
	}
}

// TestRescuerGeneratorRefuses: a policy with no place for a marker, or with a marker the
// generator does not replace, makes no template.
func TestRescuerGeneratorRefuses(t *testing.T) {
	fixed, binding := rescue.Policy(rescue.PolicyOptions{Namespace: "ns", ServiceAccount: markServiceAccount, Image: markImage})
	if _, err := policyTemplateOf(fixed, binding); err == nil || !strings.Contains(err.Error(), markNamespace) {
		t.Errorf("a policy without the namespace's marker: %v", err)
	}
	policy, binding := rescue.Policy(rescue.PolicyOptions{Namespace: markNamespace, ServiceAccount: markServiceAccount, Image: markImage})
	policy.Spec.Validations[0].Message = "SIDESYNC_MARK_ELSEWHERE"
	if _, err := policyTemplateOf(policy, binding); err == nil || !strings.Contains(err.Error(), "left over") {
		t.Errorf("a policy with an unknown marker: %v", err)
	}
	policy, binding = rescue.Policy(rescue.PolicyOptions{Namespace: markNamespace, ServiceAccount: markServiceAccount, Image: markImage})
	policy.Spec.Validations[0].Message = "{{ .Values }}"
	s, err := policyTemplateOf(policy, binding)
	if err != nil || !strings.Contains(string(s), `{{ "{{" }} .Values }}`) {
		t.Errorf("an action in the policy is not escaped: %v\n%s", err, s)
	}
}
