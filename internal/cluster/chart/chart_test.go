package chart

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
)

const testNamespace = "sidesync-system"

// testCA is the PEM of a CA certificate, made once.
var testCA = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sidesync test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()

// renderCase is one set of values and what the chart must make of it.
type renderCase struct {
	name        string
	values      map[string]any
	source      string // tls.source as the chart reads it: CertsSelf, CertsCertManager, CertsSecret
	resolve     bool
	nodes       bool   // the injector lists and watches Nodes (native auto)
	caBundle    []byte // the webhook configurations' caBundle
	secret      string // the Secret the injector reads (files) or keeps (self)
	timeout     int32
	extraArgs   []string // beyond the fixed ones, in order
	imageVolume bool     // delivery: image-volume, with the Role of the injector's check
	priority    string   // the pods' priorityClassName
	quota       bool     // a ResourceQuota admitting the priority class
	goMemLimit  string   // GOMEMLIMIT, "" for none
}

// selfArgs are the injector's certificate flags with tls.source self, for a release named
// ReleaseName.
var selfArgs = []string{"--cert-secret=" + ReleaseName + CertSecretSuffix, "--cert-service=" + ReleaseName, "--cluster-domain=cluster.local",
	"--mutating-webhook-configuration=" + admission.MutatingConfigName, "--validating-webhook-configuration=" + admission.ValidatingConfigName,
	"--ca-lifetime=87600h", "--cert-lifetime=8760h"}

func renderCases() []renderCase {
	defaultArgs := []string{"--delivery=init-copy", "--native=auto", "--max-in-flight=16", "--log-format=json"}
	// 90% of the default limit, 256Mi.
	const memLimit = "241591910"
	return []renderCase{
		{name: "defaults", values: nil, source: CertsSelf, nodes: true, secret: ReleaseName + CertSecretSuffix, timeout: 10,
			extraArgs: defaultArgs, priority: "system-cluster-critical", quota: true, goMemLimit: memLimit},
		{name: "cert-manager", values: map[string]any{"tls": map[string]any{"source": CertsCertManager}, "webhook": map[string]any{"timeoutSeconds": 7}},
			source: CertsCertManager, nodes: true, secret: "sidesync-injector-tls", timeout: 7,
			extraArgs: defaultArgs, priority: "system-cluster-critical", quota: true, goMemLimit: memLimit},
		{name: "cert-manager, as earlier charts said it", values: map[string]any{"certManager": map[string]any{"enabled": true}},
			source: CertsCertManager, nodes: true, secret: "sidesync-injector-tls", timeout: 10,
			extraArgs: defaultArgs, priority: "system-cluster-critical", quota: true, goMemLimit: memLimit},
		{name: "user-secret", values: map[string]any{
			"tls":      map[string]any{"source": CertsSecret, "secretName": "my-webhook-tls", "caBundle": testCA},
			"delivery": "image-volume", "logFormat": "", "maxInFlight": 16, "native": "always",
			"priorityClassName": "", "resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1.5Gi"}},
		}, source: CertsSecret, caBundle: []byte(testCA), secret: "my-webhook-tls", timeout: 10, imageVolume: true,
			extraArgs: []string{"--delivery=image-volume", "--native=always", "--max-in-flight=16"}, goMemLimit: "1449551462"},
		{name: "user-secret, as earlier charts said it", values: map[string]any{
			"certManager":       map[string]any{"enabled": false},
			"tls":               map[string]any{"secretName": "my-webhook-tls", "caBundle": testCA},
			"priorityClassName": "", "priorityClassQuota": true,
		}, source: CertsSecret, caBundle: []byte(testCA), secret: "my-webhook-tls", timeout: 10, nodes: true,
			extraArgs: defaultArgs, goMemLimit: memLimit},
		{name: "resolve", values: map[string]any{"resolve": map[string]any{"enabled": true, "registryAllow": []any{"10.0.0.0/8", "fd00::/8"}}, "native": "never",
			"priorityClassName": "system-node-critical", "priorityClassQuota": false},
			source: CertsSelf, resolve: true, secret: ReleaseName + CertSecretSuffix, timeout: 10, priority: "system-node-critical", goMemLimit: memLimit,
			extraArgs: []string{"--delivery=init-copy", "--native=never", "--resolve", "--registry-allow=10.0.0.0/8,fd00::/8", "--max-in-flight=16", "--log-format=json"}},
	}
}

func TestRender(t *testing.T) {
	for _, c := range renderCases() {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Render(c.values, testNamespace)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range checkRendered(objs, c) {
				t.Error(p)
			}
		})
	}
}

// checkRendered lists everything wrong with the chart's objects for c.
func checkRendered(objs []map[string]any, c renderCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	kinds := map[string]int{}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		kinds[kind]++
		// Every typed object decodes strictly: a misspelled field is a failure here, not a field
		// the API server drops in silence.
		if into := typed(kind); into != nil {
			if err := Decode(o, into); err != nil {
				add("%v", err)
			}
		}
		md, _ := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		for k := range labels {
			if strings.HasPrefix(k, "sidesync.io/") {
				add("%s %v has the label %s: nothing of the injector's may carry a sidesync label", kind, md["name"], k)
			}
		}
		if ns, ok := md["namespace"]; ok && ns != testNamespace {
			add("%s %v is in namespace %v, not the release's", kind, md["name"], ns)
		}
	}
	want := map[string]int{
		"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Service": 1, "Deployment": 1,
		"PodDisruptionBudget": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 2,
	}
	switch c.source {
	case CertsCertManager:
		want["Issuer"], want["Certificate"] = 2, 2
	case CertsSelf:
		want["Role"], want["RoleBinding"], want["ClusterRole"], want["ClusterRoleBinding"] = 1, 1, 2, 2
	}
	if c.quota {
		want["ResourceQuota"] = 1
	}
	if c.imageVolume {
		want["Role"]++
		want["RoleBinding"]++
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		add("objects by kind (-want +got):\n%s", diff)
	}
	if c.imageVolume {
		problems = append(problems, checkImageVolumeRole(objs)...)
	}
	if c.source == CertsSelf {
		problems = append(problems, checkCertRoles(objs, c.secret)...)
	}
	if c.source == CertsCertManager {
		// The serving certificate names what the injector's own certificates name
		// (values.yaml's clusterDomain: cluster.local).
		var names []any
		if spec := dig(Find(objs, "Certificate", c.secret), "spec"); spec != nil {
			names, _ = spec["dnsNames"].([]any)
		}
		want := admission.ServingDNSNames(ReleaseName, testNamespace, "cluster.local")
		if fmt.Sprint(names) != fmt.Sprint(want) {
			add("the Certificate %s names %v, want %v", c.secret, names, want)
		}
	}
	if c.quota {
		problems = append(problems, checkQuota(objs, c.priority)...)
	}

	var role rbacv1.ClusterRole
	if o := Find(objs, "ClusterRole", ReleaseName); o == nil {
		add("no ClusterRole %s", ReleaseName)
	} else if err := Decode(o, &role); err == nil {
		problems = append(problems, checkRBAC(&role, c.resolve, c.nodes)...)
	}
	var binding rbacv1.ClusterRoleBinding
	if o := Find(objs, "ClusterRoleBinding", ReleaseName); o != nil && Decode(o, &binding) == nil {
		wantSubj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: ReleaseName, Namespace: testNamespace}}
		if binding.RoleRef.Name != ReleaseName || binding.RoleRef.Kind != "ClusterRole" || !cmp.Equal(binding.Subjects, wantSubj) {
			add("the ClusterRoleBinding binds %+v to %+v", binding.RoleRef, binding.Subjects)
		}
	}

	var dep appsv1.Deployment
	if o := Find(objs, "Deployment", ReleaseName); o == nil {
		add("no Deployment %s", ReleaseName)
		return problems
	} else if err := Decode(o, &dep); err != nil {
		return problems
	}
	problems = append(problems, checkDeployment(&dep, c)...)

	var pdb policyv1.PodDisruptionBudget
	if o := Find(objs, "PodDisruptionBudget", ReleaseName); o != nil && Decode(o, &pdb) == nil {
		if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) || pdb.Spec.MaxUnavailable != nil {
			add("the PodDisruptionBudget is not minAvailable 1: %+v", pdb.Spec)
		}
		if pdb.Spec.Selector == nil || !cmp.Equal(pdb.Spec.Selector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			add("the PodDisruptionBudget does not select the Deployment's pods")
		}
	}

	var svc corev1.Service
	if o := Find(objs, "Service", ReleaseName); o == nil {
		add("no Service %s", ReleaseName)
	} else if Decode(o, &svc) == nil {
		problems = append(problems, checkService(&svc, &dep)...)
	}

	problems = append(problems, checkWebhooks(objs, c)...)
	return problems
}

func checkDeployment(dep *appsv1.Deployment, c renderCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	spec := &dep.Spec.Template.Spec
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		add("replicas: %v, want 2", dep.Spec.Replicas)
	}
	if !cmp.Equal(dep.Spec.Selector.MatchLabels, selectorSubset(dep.Spec.Template.Labels, dep.Spec.Selector.MatchLabels)) {
		add("the Deployment's selector does not match its pods' labels")
	}
	spread := false
	for _, t := range spec.TopologySpreadConstraints {
		if t.TopologyKey == "kubernetes.io/hostname" && t.WhenUnsatisfiable == corev1.ScheduleAnyway &&
			t.LabelSelector != nil && cmp.Equal(t.LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			spread = true
		}
	}
	if !spread {
		add("no topologySpreadConstraint over kubernetes.io/hostname, ScheduleAnyway, selecting the pods")
	}
	if spec.ServiceAccountName != ReleaseName {
		add("serviceAccountName %q", spec.ServiceAccountName)
	}
	problems = append(problems, checkRestricted(spec)...)
	if len(spec.Containers) != 1 {
		add("%d containers, want 1", len(spec.Containers))
		return problems
	}
	ctr := spec.Containers[0]
	if ctr.Image != "ghcr.io/sidesync/sidesync-injector:v0.1.0" {
		add("image %q", ctr.Image)
	}
	certArgs := []string{"--tls-cert-file=/tls/tls.crt", "--tls-key-file=/tls/tls.key"}
	if c.source == CertsSelf {
		certArgs = selfArgs
	}
	wantArgs := slices.Concat([]string{"--listen=:8443"}, certArgs, []string{"--probe-listen=:8080",
		"--namespace=$(POD_NAMESPACE)", "--image=ghcr.io/sidesync/sidesync:v0.1.0"}, c.extraArgs)
	if diff := cmp.Diff(wantArgs, ctr.Args); diff != "" {
		add("args (-want +got):\n%s", diff)
	}
	if len(ctr.Command) > 0 {
		add("command %q: the image's entrypoint is the injector", ctr.Command)
	}
	if spec.PriorityClassName != c.priority {
		add("priorityClassName %q, want %q", spec.PriorityClassName, c.priority)
	}
	podNS, memLimit := false, ""
	for _, e := range ctr.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			podNS = true
		}
		if e.Name == "GOMEMLIMIT" {
			memLimit = e.Value
		}
	}
	if memLimit != c.goMemLimit {
		add("GOMEMLIMIT %q, want %q", memLimit, c.goMemLimit)
	}
	if !podNS {
		add("POD_NAMESPACE is not metadata.namespace from the downward API")
	}
	if ctr.Resources.Limits.Memory().IsZero() || ctr.Resources.Limits.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
		add("resources without limits (or requests): %+v", ctr.Resources)
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["https"] != 8443 || ports["metrics"] != 8080 {
		add("container ports %v, want https 8443 and metrics 8080", ports)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			add("no %s probe", name)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("metrics") || (p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP) {
			add("%s probe %+v, want HTTP GET %s on the probe port", name, p.HTTPGet, path)
		}
	}
	probe("liveness", ctr.LivenessProbe, admission.HealthzPath)
	probe("readiness", ctr.ReadinessProbe, admission.ReadyzPath)
	mounted := false
	for _, m := range ctr.VolumeMounts {
		if m.MountPath == "/tls" && m.ReadOnly && m.SubPath == "" {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == c.secret {
					mounted = true
				}
			}
		}
	}
	switch {
	case c.source == CertsSelf && len(spec.Volumes) != 1:
		add("volumes %+v: the injector keeps its certificates in memory, no Secret is mounted", spec.Volumes)
	case c.source != CertsSelf && !mounted:
		add("the Secret %s is not mounted read-only at /tls (whole, so that renewals reach the pod)", c.secret)
	}
	return problems
}

// selectorSubset is labels restricted to the keys of sel.
func selectorSubset(labels, sel map[string]string) map[string]string {
	out := map[string]string{}
	for k := range sel {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

func checkService(svc *corev1.Service, dep *appsv1.Deployment) []string {
	var problems []string
	if !cmp.Equal(svc.Spec.Selector, dep.Spec.Selector.MatchLabels) {
		problems = append(problems, "the Service does not select the Deployment's pods")
	}
	byName := map[string]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		byName[p.Name] = p
	}
	if p := byName["https"]; p.Port != ServicePort || p.TargetPort != intstr.FromString("https") {
		problems = append(problems, fmt.Sprintf("the Service's https port %+v, want 443 to the container's https (8443)", p))
	}
	if p, ok := byName["metrics"]; !ok || p.TargetPort != intstr.FromString("metrics") {
		problems = append(problems, "the Service has no metrics port to the container's")
	}
	return problems
}

// checkWebhooks compares the rendered webhook configurations and backstop with what
// internal/cluster/admission makes for the same values: the same, but for the chart's labels and the
// cert-manager annotation.
func checkWebhooks(objs []map[string]any, c renderCase) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	o := Options(testNamespace, ReleaseName, c.caBundle, c.timeout)
	wantAnn := map[string]string(nil)
	if c.source == CertsCertManager {
		wantAnn = map[string]string{"cert-manager.io/inject-ca-from": testNamespace + "/sidesync-injector-tls"}
	}
	type meta interface {
		GetLabels() map[string]string
		SetLabels(map[string]string)
		GetAnnotations() map[string]string
		SetAnnotations(map[string]string)
	}
	compare := func(kind, name string, got, want meta, annotations map[string]string) {
		obj := Find(objs, kind, name)
		if obj == nil {
			add("no %s %s", kind, name)
			return
		}
		if err := Decode(obj, got); err != nil {
			add("%v", err)
			return
		}
		if l := got.GetLabels(); l["app.kubernetes.io/managed-by"] != "Helm" {
			add("%s %s: labels %v, want the chart's", kind, name, l)
		}
		if diff := cmp.Diff(annotations, got.GetAnnotations()); diff != "" {
			add("%s %s: annotations (-want +got):\n%s", kind, name, diff)
		}
		got.SetLabels(nil)
		got.SetAnnotations(nil)
		if diff := cmp.Diff(want, got); diff != "" {
			add("%s %s differs from internal/cluster/admission's (-admission +chart):\n%s", kind, name, diff)
		}
	}
	compare("MutatingWebhookConfiguration", admission.MutatingConfigName,
		&admissionregistrationv1.MutatingWebhookConfiguration{}, admission.MutatingWebhookConfiguration(o), wantAnn)
	compare("ValidatingWebhookConfiguration", admission.ValidatingConfigName,
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, admission.ValidatingWebhookConfiguration(o), wantAnn)
	policy, bindings := admission.Backstop(o, admission.ByWebhook)
	compare("ValidatingAdmissionPolicy", policy.Name, &admissionregistrationv1.ValidatingAdmissionPolicy{}, policy, nil)
	for _, b := range bindings {
		compare("ValidatingAdmissionPolicyBinding", b.Name, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, b, nil)
	}
	return problems
}

// TestChecksCatch proves that the checks above fail: each case breaks one rendered object the
// way a careless edit of the chart would, and the checks must say so.
func TestChecksCatch(t *testing.T) {
	c := renderCases()[0]
	breakers := []struct {
		name   string
		want   string // in one of the problems
		mutate func(objs []map[string]any) []map[string]any
	}{
		{"pods/exec", `pods/exec`, func(objs []map[string]any) []map[string]any {
			role := Find(objs, "ClusterRole", ReleaseName)
			role["rules"] = append(role["rules"].([]any), map[string]any{"apiGroups": []any{""}, "resources": []any{"pods/exec"}, "verbs": []any{"create"}})
			return objs
		}},
		{"secrets without resolve", `/secrets`, func(objs []map[string]any) []map[string]any {
			role := Find(objs, "ClusterRole", ReleaseName)
			role["rules"] = append(role["rules"].([]any), map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}})
			return objs
		}},
		{"get on nodes", `get on ""/nodes`, func(objs []map[string]any) []map[string]any {
			role := Find(objs, "ClusterRole", ReleaseName)
			role["rules"] = append(role["rules"].([]any), map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get"}})
			return objs
		}},
		{"any Secret for the certificates", "the Role " + ReleaseName + CertSecretSuffix, func(objs []map[string]any) []map[string]any {
			rules := Find(objs, "Role", ReleaseName+CertSecretSuffix)["rules"].([]any)
			delete(rules[1].(map[string]any), "resourceNames")
			return objs
		}},
		{"any webhook configuration", "the ClusterRole " + ReleaseName + CertSecretSuffix, func(objs []map[string]any) []map[string]any {
			rules := Find(objs, "ClusterRole", ReleaseName+CertSecretSuffix)["rules"].([]any)
			rules[0].(map[string]any)["verbs"] = []any{"get", "list", "watch", "patch", "delete"}
			return objs
		}},
		{"GOMEMLIMIT the whole limit", "GOMEMLIMIT", func(objs []map[string]any) []map[string]any {
			for _, e := range containerOf(objs)["env"].([]any) {
				if e := e.(map[string]any); e["name"] == "GOMEMLIMIT" {
					e["value"] = "268435456"
				}
			}
			return objs
		}},
		{"no priority", "priorityClassName", func(objs []map[string]any) []map[string]any {
			delete(dig(Find(objs, "Deployment", ReleaseName), "spec", "template", "spec"), "priorityClassName")
			return objs
		}},
		{"one replica", "replicas", func(objs []map[string]any) []map[string]any {
			dig(Find(objs, "Deployment", ReleaseName), "spec")["replicas"] = 1
			return objs
		}},
		{"privilege escalation", "allowPrivilegeEscalation", func(objs []map[string]any) []map[string]any {
			delete(containerOf(objs)["securityContext"].(map[string]any), "allowPrivilegeEscalation")
			return objs
		}},
		{"capabilities", "capabilities", func(objs []map[string]any) []map[string]any {
			containerOf(objs)["securityContext"].(map[string]any)["capabilities"] = map[string]any{"drop": []any{"NET_RAW"}}
			return objs
		}},
		{"seccomp", "seccompProfile", func(objs []map[string]any) []map[string]any {
			delete(containerOf(objs)["securityContext"].(map[string]any), "seccompProfile")
			delete(dig(Find(objs, "Deployment", ReleaseName), "spec", "template", "spec", "securityContext"), "seccompProfile")
			return objs
		}},
		{"writable root", "readOnlyRootFilesystem", func(objs []map[string]any) []map[string]any {
			containerOf(objs)["securityContext"].(map[string]any)["readOnlyRootFilesystem"] = false
			return objs
		}},
		{"root", "runAsNonRoot", func(objs []map[string]any) []map[string]any {
			delete(containerOf(objs)["securityContext"].(map[string]any), "runAsNonRoot")
			delete(dig(Find(objs, "Deployment", ReleaseName), "spec", "template", "spec", "securityContext"), "runAsNonRoot")
			return objs
		}},
		{"a flag lost", "args", func(objs []map[string]any) []map[string]any {
			ctr := containerOf(objs)
			ctr["args"] = ctr["args"].([]any)[1:]
			return objs
		}},
		{"no PDB", "PodDisruptionBudget", func(objs []map[string]any) []map[string]any {
			return slices.DeleteFunc(objs, func(o map[string]any) bool { return o["kind"] == "PodDisruptionBudget" })
		}},
		{"a hand edit of the webhook", "differs from internal/cluster/admission's", func(objs []map[string]any) []map[string]any {
			hooks := Find(objs, "MutatingWebhookConfiguration", admission.MutatingConfigName)["webhooks"].([]any)
			hooks[0].(map[string]any)["failurePolicy"] = "Ignore"
			return objs
		}},
		{"a typo", "unknown field", func(objs []map[string]any) []map[string]any {
			dig(Find(objs, "Deployment", ReleaseName), "spec")["replica"] = 2
			return objs
		}},
		{"a sidesync label", "sidesync label", func(objs []map[string]any) []map[string]any {
			dig(Find(objs, "Deployment", ReleaseName), "metadata", "labels")[admission.InjectLabel] = admission.Enabled
			return objs
		}},
	}
	for _, b := range breakers {
		t.Run(b.name, func(t *testing.T) {
			objs, err := Render(c.values, testNamespace)
			if err != nil {
				t.Fatal(err)
			}
			if p := checkRendered(objs, c); len(p) > 0 {
				t.Fatalf("the chart as rendered already fails: %v", p)
			}
			problems := checkRendered(b.mutate(objs), c)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, b.want) }) {
				t.Errorf("broken, the checks found %q, none about %q", problems, b.want)
			}
		})
	}
}

func dig(obj map[string]any, path ...string) map[string]any {
	for _, p := range path {
		obj = obj[p].(map[string]any)
	}
	return obj
}

func containerOf(objs []map[string]any) map[string]any {
	spec := dig(Find(objs, "Deployment", ReleaseName), "spec", "template", "spec")
	return spec["containers"].([]any)[0].(map[string]any)
}

// TestRenderRefuses: values the chart must refuse, with the reason.
func TestRenderRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no secret", map[string]any{"certManager": map[string]any{"enabled": false}, "tls": map[string]any{"caBundle": testCA}}, "tls.secretName is required"},
		{"no CA", map[string]any{"certManager": map[string]any{"enabled": false}, "tls": map[string]any{"secretName": "s"}}, "tls.caBundle"},
		{"base64 CA", map[string]any{"certManager": map[string]any{"enabled": false}, "tls": map[string]any{"secretName": "s", "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"}}, "must be PEM"},
		{"no secret, by source", map[string]any{"tls": map[string]any{"source": CertsSecret, "caBundle": testCA}}, "tls.secretName is required"},
		{"no CA, by source", map[string]any{"tls": map[string]any{"source": CertsSecret, "secretName": "s"}}, "tls.caBundle"},
		{"a source of no kind", map[string]any{"tls": map[string]any{"source": "vault"}}, "source"},
		{"certManager.enabled against tls.source", map[string]any{"certManager": map[string]any{"enabled": true}, "tls": map[string]any{"source": CertsSecret}},
			"certManager.enabled: true means tls.source: cert-manager, but tls.source is secret"},
		{"a lifetime of no duration", map[string]any{"tls": map[string]any{"certLifetime": "1 year"}}, "certLifetime"},
		{"timeout", map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}}, "timeoutSeconds"},
		{"delivery", map[string]any{"delivery": "copy"}, "delivery"},
		{"native", map[string]any{"native": "sometimes"}, "native"},
		{"native empty", map[string]any{"native": ""}, "native"},
		{"registry CIDR", map[string]any{"resolve": map[string]any{"enabled": true, "registryAllow": []any{"registry.example.com"}}}, "registryAllow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(c.values, testNamespace)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Render: %v, want an error about %q", err, c.want)
			}
		})
	}
	t.Run("kubeVersion", func(t *testing.T) {
		dir, err := Dir()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := renderDir(dir, ReleaseName, nil, testNamespace, "v1.32.9"); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
			t.Errorf("rendered for Kubernetes 1.32: %v", err)
		}
		if _, err := renderDir(dir, ReleaseName, nil, testNamespace, "v1.33.0"); err != nil {
			t.Errorf("Kubernetes 1.33: %v", err)
		}
	})
	t.Run("image volumes below 1.35", func(t *testing.T) {
		iv := map[string]any{"delivery": string(inject.ImageVolume)}
		for _, v := range []string{"v1.33.13", "v1.34.9", "v1.34.2-eks-1a2b3c"} {
			_, err := Injector.RenderOn(v, iv, testNamespace)
			if err == nil || !strings.Contains(err.Error(), "image volumes, which need Kubernetes 1.35 or newer") || !strings.Contains(err.Error(), v) {
				t.Errorf("delivery: image-volume on %s: %v, want a refusal naming image volumes, 1.35 and %s", v, err, v)
			}
			if _, err := Injector.RenderOn(v, map[string]any{"delivery": string(inject.InitCopy)}, testNamespace); err != nil {
				t.Errorf("delivery: init-copy on %s: %v", v, err)
			}
		}
		for _, v := range []string{"v1.35.0", "v1.35.0-gke.100", "v1.37.2"} {
			objs, err := Injector.RenderOn(v, iv, testNamespace)
			if err != nil {
				t.Errorf("delivery: image-volume on %s: %v", v, err)
				continue
			}
			for _, p := range checkImageVolumeRole(objs) {
				t.Errorf("%s: %s", v, p)
			}
		}
	})
}

// checkImageVolumeRole lists what is wrong with the Role and RoleBinding of the injector's check
// of image volumes: anything beyond creating pods in its own namespace, bound to anyone but its
// ServiceAccount.
func checkImageVolumeRole(objs []map[string]any) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	name := ReleaseName + ImageVolumeCheckSuffix
	var role rbacv1.Role
	if o := Find(objs, "Role", name); o == nil {
		add("no Role %s", name)
	} else if err := Decode(o, &role); err != nil {
		add("%v", err)
	} else if want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}; !cmp.Equal(role.Rules, want) {
		add("the Role %s grants %+v, want only creating pods", name, role.Rules)
	}
	var binding rbacv1.RoleBinding
	if o := Find(objs, "RoleBinding", name); o == nil {
		add("no RoleBinding %s", name)
	} else if err := Decode(o, &binding); err != nil {
		add("%v", err)
	} else {
		wantSubj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: ReleaseName, Namespace: testNamespace}}
		if binding.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}) || !cmp.Equal(binding.Subjects, wantSubj) {
			add("the RoleBinding binds %+v to %+v", binding.RoleRef, binding.Subjects)
		}
	}
	return problems
}

// TestGeneratedUpToDate: the committed generated templates of every chart are what the
// generator writes now.
func TestGeneratedUpToDate(t *testing.T) {
	for _, ch := range Charts() {
		dir, err := ch.Dir()
		if err != nil {
			t.Fatal(err)
		}
		files, err := ch.Generate()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedKeys(files) {
			have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				t.Errorf("%v: run go generate ./internal/cluster/chart", err)
				continue
			}
			if !bytes.Equal(have, files[name]) {
				t.Errorf("%s/%s is stale: run go generate ./internal/cluster/chart\n%s", string(ch), name, cmp.Diff(string(files[name]), string(have)))
			}
		}
	}
}

// TestGeneratorRefusesLeftovers: a marker the generator did not replace is an error, not a
// template.
func TestGeneratorRefusesLeftovers(t *testing.T) {
	o := admission.ValidatingWebhookConfiguration(markerOptions())
	o.Webhooks[0].Name = markService + ".example.com" // a marker where the generator does not look
	o.Webhooks[0].ClientConfig.Service.Name = "fixed"
	_, err := templateOne(marked{obj: withMarkers(o, true), annotations: true, endpoint: true, namespace: true})
	if err == nil {
		t.Fatal("a configuration without the Service marker made a template")
	}
	plain := admission.ValidatingWebhookConfiguration(Options("ns", "svc", nil, 0))
	if _, err := templateOne(marked{obj: withMarkers(plain, true), annotations: true, endpoint: true, namespace: true}); err == nil {
		t.Fatal("a configuration without markers made a template")
	}
	if leftoverMarker("timeoutSeconds: 987654") == "" {
		t.Fatal("the timeout marker is not seen")
	}
}

// TestGeneratorEscapesActions: text that Helm would take for an action comes out as itself.
func TestGeneratorEscapesActions(t *testing.T) {
	o := admission.ValidatingWebhookConfiguration(markerOptions())
	o.Webhooks[0].Name = "a{{ .Values }}b"
	s, err := templateOne(marked{obj: withMarkers(o, true), annotations: true, endpoint: true, namespace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `a{{ "{{" }} .Values }}b`) {
		t.Errorf("not escaped:\n%s", s)
	}
}

// TestInstallGuide: docs/INSTALL.md gives the names internal/cluster/admission and the chart use.
func TestInstallGuide(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "..", "..", "..", "docs", "INSTALL.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"helm install sidesync-injector deploy/chart/sidesync-injector -n sidesync-system --create-namespace",
		"helm template sidesync-injector deploy/chart/sidesync-injector -n sidesync-system",
		"kubectl label namespace NS " + admission.InjectLabel + "=" + admission.Enabled,
		admission.InjectLabel + ": " + admission.Disabled,
		admission.InjectLabel + `: "` + admission.OptOutAnnotationValue + `"`,
		admission.SkippedAnnotation, admission.NativeAnnotation, "sidesync_injector_native_choices_total",
		admission.MutatingConfigName, admission.ValidatingConfigName, admission.BackstopPolicy,
		admission.ExplicitWebhook, admission.NamespaceWebhook,
		".webhooks[]?.clientConfig.caBundle",
		"https://github.com/argoproj/argo-cd/issues/1487", "https://github.com/argoproj/argo-cd/issues/4326",
		"`tls.source: " + CertsSecret + "`", "`tls.source: " + CertsCertManager + "`", "`tls.source: " + CertsSelf + "`",
		ReleaseName + CertSecretSuffix, "system-cluster-critical", "sidesync_injector_certificate_expiry_timestamp_seconds", fmt.Sprintf("`GOMEMLIMIT` is %d %%", GoMemLimitPercent),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/INSTALL.md does not say %q", want)
		}
	}
}

// TestRenderDoesNotChangeValues: Helm's coalescing writes into the values it is given; Render
// gives it a copy.
func TestRenderDoesNotChangeValues(t *testing.T) {
	values := map[string]any{"resolve": map[string]any{"enabled": true}}
	if _, err := Render(values, testNamespace); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"resolve": map[string]any{"enabled": true}}, values); diff != "" {
		t.Errorf("values changed:\n%s", diff)
	}
}

// TestNativeValue: the chart's native value takes exactly the injector's modes (--native), and
// its default is auto.
func TestNativeValue(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Native struct{ Enum []string }
		}
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	want := []string{string(inject.NativeAuto), string(inject.NativeAlways), string(inject.NativeNever)}
	if diff := cmp.Diff(want, schema.Properties.Native.Enum); diff != "" {
		t.Errorf("the schema's native values (-want +got):\n%s", diff)
	}
	for _, m := range want {
		if _, err := inject.ParseNativeMode(m); err != nil {
			t.Errorf("the schema allows %q, which the injector refuses: %v", m, err)
		}
	}
	objs, err := Render(nil, testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if args := fmt.Sprint(containerOf(objs)["args"]); !strings.Contains(args, "--native="+string(inject.NativeAuto)) {
		t.Errorf("the default renders %s, want --native=%s", args, inject.NativeAuto)
	}
}
