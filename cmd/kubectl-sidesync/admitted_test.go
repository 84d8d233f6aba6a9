//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/contract"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// admitNamespace enforces Pod Security "restricted" and warns of it too: Pod Security enforces
// only on Pods, and for a Job or CronJob it can only warn about the pod template.
const admitNamespace = "examples"

var restricted = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
	"pod-security.kubernetes.io/warn":            "restricted",
	"pod-security.kubernetes.io/warn-version":    "latest",
}

// injected is a manifest that inject wrote and the one it was written from.
type injected struct {
	name      string
	out, from []map[string]any
	// strict refuses unknown fields; the goldens keep fields no Kubernetes knows, on purpose.
	strict bool
}

// TestAdmitted creates, with server-side dry run, every example and every output of inject's
// golden tests (both deliveries), and the plain examples injected with an image volume, in a
// namespace that enforces Pod Security "restricted", on a real kube-apiserver. Each object must
// be admitted without a warning, the pod template of each Job and CronJob must be admitted as a
// Pod, and every wrapped container must keep, after "--", the command and args it had.
func TestAdmitted(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := kubetest.Start(t)
	c.CreateNamespaceLabelled(t, admitNamespace, restricted)

	var all []injected
	for _, plain := range plainExamples(t) {
		from := manifestObjects(t, plain)
		all = append(all,
			injected{name: "deploy/examples/" + filepath.Base(plain), out: manifestObjects(t, filepath.Join(examplesDir, filepath.Base(plain))), from: from, strict: true},
			injected{name: "plain/" + filepath.Base(plain) + " with --delivery image-volume", out: objectsOf(t, injectExample(t, plain, "--delivery", "image-volume")), from: from, strict: true})
	}
	goldens, err := filepath.Glob("../../internal/cluster/inject/testdata/golden/*.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no goldens (%v)", err)
	}
	for _, g := range goldens {
		input := strings.SplitN(filepath.Base(g), ".", 2)[0] + ".yaml"
		all = append(all, injected{name: "golden " + filepath.Base(g), out: manifestObjects(t, g),
			from: manifestObjects(t, filepath.Join("../../internal/cluster/inject/testdata", input))})
	}

	serviceAccounts(t, c, all)
	for _, m := range all {
		t.Run(m.name, func(t *testing.T) {
			for _, obj := range m.out {
				admit(t, c, m, obj)
			}
		})
	}
}

// objectsOf reads the objects of a manifest held in a string.
func objectsOf(t *testing.T, text string) []map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifestObjects(t, path)
}

// serviceAccounts creates the service accounts the pods name: the ServiceAccount admission
// plugin refuses a Pod whose account does not exist, and no controller creates them here.
func serviceAccounts(t *testing.T, c *kubetest.Cluster, all []injected) {
	t.Helper()
	var names []string
	for _, m := range all {
		for _, obj := range m.out {
			spec, _ := podTemplate(t, obj)
			if sa := str(spec, "serviceAccountName"); sa != "" && !slices.Contains(names, sa) {
				names = append(names, sa)
				c.CreateServiceAccount(t, admitNamespace, sa)
			}
		}
	}
}

// admit dry-runs obj, then its pod template as a Pod, and checks what the apiserver would store.
func admit(t *testing.T, c *kubetest.Cluster, m injected, obj map[string]any) {
	t.Helper()
	kind := str(obj, "kind")
	stored := dryRun(t, c, collection(t, obj), inNamespace(obj), m.strict)
	// What inject sent wrapped is what the apiserver must store wrapped: a Deployment passes
	// through, and so does a pod whose sidecars are all native with startup probes.
	wraps := wrappedIn(t, obj)
	checkArgv(t, objName(obj), stored, original(t, m.from, objName(obj)), wraps)
	checkKept(t, objName(obj), obj, stored)
	if kind == "Pod" {
		return
	}
	spec, _ := podTemplate(t, obj)
	var meta map[string]any
	switch kind {
	case "CronJob":
		meta = mapAt(mapAt(mapAt(mapAt(obj, "spec"), "jobTemplate"), "spec"), "template")
	default:
		meta = mapAt(mapAt(obj, "spec"), "template")
	}
	podMeta := map[string]any{"name": strings.ToLower(kind) + "-" + str(mapAt(obj, "metadata"), "name")}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := mapAt(meta, "metadata")[k]; ok {
			podMeta[k] = v
		}
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": podMeta, "spec": spec}
	stored = dryRun(t, c, collection(t, pod), pod, m.strict)
	checkArgv(t, objName(obj)+"'s pod template", stored, original(t, m.from, objName(obj)), wraps)
	checkKept(t, objName(obj)+"'s pod template", obj, stored)
}

// keptFields are the container fields that inject writes or relies on: the apiserver must store
// them as inject wrote them (a field behind a disabled feature gate would be dropped silently).
var keptFields = []string{"command", "args", "env", "volumeMounts", "restartPolicy", "restartPolicyRules"}

// checkKept compares the containers and volumes of what inject wrote with what the apiserver
// would store.
func checkKept(t *testing.T, name string, sent, stored map[string]any) {
	t.Helper()
	sentSpec, _ := podTemplate(t, sent)
	storedSpec, _ := podTemplate(t, stored)
	storedByName := map[string]map[string]any{}
	for _, c := range podContainers(storedSpec) {
		storedByName[str(c, "name")] = c
	}
	for _, c := range podContainers(sentSpec) {
		sc, ok := storedByName[str(c, "name")]
		if !ok {
			t.Errorf("%s: container %s was not stored", name, str(c, "name"))
			continue
		}
		for _, f := range keptFields {
			got := sc[f]
			if f == "volumeMounts" {
				got = withoutTokenMount(got)
			}
			if diff := cmp.Diff(normalJSON(t, c[f]), normalJSON(t, got)); diff != "" {
				t.Errorf("%s: container %s: %s is not stored as sent (-sent +stored):\n%s", name, str(c, "name"), f, diff)
			}
		}
	}
	storedVolumes := map[string]map[string]any{}
	for _, v := range listOf(storedSpec["volumes"]) {
		storedVolumes[str(v, "name")] = v
	}
	for _, v := range listOf(sentSpec["volumes"]) {
		if !strings.HasPrefix(str(v, "name"), "sidesync-") {
			continue // the user's, with the goldens' unknown fields, which the apiserver drops
		}
		sv, ok := storedVolumes[str(v, "name")]
		if !ok {
			t.Errorf("%s: volume %s was not stored", name, str(v, "name"))
			continue
		}
		for k := range v {
			if _, ok := sv[k]; !ok {
				t.Errorf("%s: volume %s: %s was not stored", name, str(v, "name"), k)
			}
		}
	}
}

// withoutTokenMount removes from a container's volumeMounts the service-account token's, which
// the ServiceAccount admission plugin adds to every Pod.
func withoutTokenMount(mounts any) any {
	var out []any
	for _, m := range listOf(mounts) {
		if !strings.HasPrefix(str(m, "name"), "kube-api-access-") {
			out = append(out, m)
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// normalJSON returns v as encoding/json decodes it, so that values read from YAML and from the
// apiserver's JSON compare equal.
func normalJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// listOf returns the objects of a JSON list.
func listOf(v any) []map[string]any {
	list, _ := v.([]any)
	var out []map[string]any
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestAdmittedRefuses shows that the checks above can fail: in the same namespace, an injected
// Job whose app container runs as root with privilege escalation is refused as a Pod, and warned
// about as a Job.
func TestAdmittedRefuses(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := kubetest.Start(t)
	c.CreateNamespaceLabelled(t, admitNamespace, restricted)
	const job = `apiVersion: batch/v1
kind: Job
metadata: {name: careless}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: job, image: example/job:1, command: [./job], securityContext: {runAsUser: 0, allowPrivilegeEscalation: true}}
`
	plain := filepath.Join(t.TempDir(), "careless.yaml")
	if err := os.WriteFile(plain, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := objectsOf(t, injectExample(t, plain))[0]
	r := c.Send(t, http.MethodPost, collection(t, obj)+"?dryRun=All&fieldValidation=Strict", obj)
	if r.Code != http.StatusCreated || !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "would violate PodSecurity") }) {
		t.Errorf("the Job: %d, warnings %q; want 201 with a PodSecurity warning", r.Code, r.Warnings)
	}
	spec, _ := podTemplate(t, obj)
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "careless"}, "spec": spec}
	r = c.Send(t, http.MethodPost, collection(t, pod)+"?dryRun=All", pod)
	if r.Code != http.StatusForbidden || !strings.Contains(string(r.Body), "violates PodSecurity") {
		t.Errorf("the Pod: %d %s; want 403, violates PodSecurity", r.Code, r.Body)
	}
}

// collection is where the API server takes obj in admitNamespace.
func collection(t *testing.T, obj map[string]any) string {
	t.Helper()
	path, ok := kubetest.CollectionPath(obj, admitNamespace)
	if !ok {
		t.Fatalf("%s: a bare API server does not serve %s", objName(obj), str(obj, "apiVersion"))
	}
	return path
}

// inNamespace returns a copy of obj in admitNamespace (the goldens name one of their own).
func inNamespace(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	meta := map[string]any{}
	for k, v := range mapAt(obj, "metadata") {
		meta[k] = v
	}
	meta["namespace"] = admitNamespace
	out["metadata"] = meta
	return out
}

// dryRun creates obj at path with dryRun=All and returns the object the apiserver would store.
// It fails the test unless the apiserver admits obj without a warning.
func dryRun(t *testing.T, c *kubetest.Cluster, path string, obj map[string]any, strict bool) map[string]any {
	t.Helper()
	validation := "Strict"
	if !strict {
		validation = "Ignore"
	}
	r := c.Send(t, http.MethodPost, path+"?dryRun=All&fieldValidation="+validation, obj)
	name := objName(obj)
	if r.Code != http.StatusCreated {
		t.Fatalf("%s: not admitted: %d %s", name, r.Code, r.Body)
	}
	if len(r.Warnings) > 0 {
		t.Errorf("%s: admitted with warnings:\n  %s", name, strings.Join(r.Warnings, "\n  "))
	}
	var stored map[string]any
	if err := json.Unmarshal(r.Body, &stored); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if mapAt(stored, "metadata")["uid"] == nil || mapAt(stored, "metadata")["creationTimestamp"] == nil {
		t.Errorf("%s: the answer is not a stored object: %.300s", name, r.Body)
	}
	return stored
}

// original returns, for the object called name in the manifest inject read, each container's
// command and args.
func original(t *testing.T, from []map[string]any, name string) map[string][]string {
	t.Helper()
	for _, obj := range from {
		if objName(obj) != name {
			continue
		}
		spec, _ := podTemplate(t, obj)
		argvs := map[string][]string{}
		for _, c := range podContainers(spec) {
			argvs[str(c, "name")] = argvOf(c)
		}
		return argvs
	}
	t.Fatalf("%s is not in the manifest inject read", name)
	return nil
}

// wrappedIn reports whether a manifest's object has a container wrapped.
func wrappedIn(t *testing.T, obj map[string]any) bool {
	spec, _ := podTemplate(t, obj)
	return slices.ContainsFunc(podContainers(spec), func(c map[string]any) bool { return argvOf(c)[0] == contract.Binary })
}

// checkArgv checks the stored object's containers: a wrapped one runs contract.Binary with the
// original command and args after "--"; any other keeps its own. There must be a wrapped one
// if wraps.
func checkArgv(t *testing.T, name string, stored map[string]any, argvs map[string][]string, wraps bool) {
	t.Helper()
	spec, _ := podTemplate(t, stored)
	wrapped := 0
	for _, c := range podContainers(spec) {
		cname, argv := str(c, "name"), argvOf(c)
		want, ok := argvs[cname]
		switch {
		case cname == contract.InitContainer:
			continue
		case !ok:
			t.Errorf("%s: container %s is not in the manifest inject read", name, cname)
		case argv[0] == contract.Binary:
			wrapped++
			i := slices.Index(argv, "--")
			if i < 0 {
				t.Errorf("%s: container %s runs %q: no --", name, cname, argv)
				continue
			}
			if diff := cmp.Diff(want, argv[i+1:]); diff != "" {
				t.Errorf("%s: container %s: the stored argv after -- is not the original (-want +got):\n%s", name, cname, diff)
			}
		default:
			if diff := cmp.Diff(want, argv); diff != "" {
				t.Errorf("%s: container %s, not wrapped, changed (-want +got):\n%s", name, cname, diff)
			}
		}
	}
	if (wrapped > 0) != wraps {
		t.Errorf("%s: the stored object has %d wrapped containers, want them: %v", name, wrapped, wraps)
	}
}

// TestRBACExample creates deploy/examples/rbac.yaml for real and asks the apiserver's RBAC
// authoriser what its ServiceAccount may do: get pods in its namespace, and nothing else
// sidesync could be blamed for.
func TestRBACExample(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := kubetest.Start(t)
	const ns = "rbac"
	c.CreateNamespaceLabelled(t, ns, restricted)
	paths := map[string]string{
		"ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts",
		"Role":           "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
		"RoleBinding":    "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
	}
	var account string
	for _, obj := range manifestObjects(t, filepath.Join(examplesDir, "rbac.yaml")) {
		path, ok := paths[str(obj, "kind")]
		if !ok {
			t.Fatalf("rbac.yaml: unexpected %s", objName(obj))
		}
		r := c.Send(t, http.MethodPost, fmt.Sprintf(path, ns)+"?fieldValidation=Strict", obj)
		if r.Code != http.StatusCreated || len(r.Warnings) > 0 {
			t.Fatalf("rbac.yaml: %s: %d %s, warnings %q", objName(obj), r.Code, r.Body, r.Warnings)
		}
		if str(obj, "kind") == "ServiceAccount" {
			account = str(mapAt(obj, "metadata"), "name")
		}
	}
	user := "system:serviceaccount:" + ns + ":" + account
	review := func(namespace, verb, resource string) (bool, string) {
		body := map[string]any{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
			"spec": map[string]any{"user": user, "groups": []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				"resourceAttributes": map[string]any{"namespace": namespace, "verb": verb, "resource": resource}},
		}
		var out struct {
			Status struct {
				Allowed bool   `json:"allowed"`
				Reason  string `json:"reason"`
			} `json:"status"`
		}
		if code := c.Do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, &out); code != http.StatusCreated {
			t.Fatalf("SubjectAccessReview: %d", code)
		}
		return out.Status.Allowed, out.Status.Reason
	}
	// RBAC's informers see the new RoleBinding eventually: ask until the grant shows, bounded.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ok, _ := review(ns, "get", "pods"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s may still not get pods in %s after 30s", user, ns)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by deadline
	}
	for _, tt := range []struct {
		namespace, verb, resource string
		want                      bool
	}{
		{ns, "get", "pods", true},
		{ns, "list", "pods", false},
		{ns, "watch", "pods", false},
		{ns, "update", "pods", false},
		{ns, "get", "secrets", false},
		{"default", "get", "pods", false},
	} {
		if got, reason := review(tt.namespace, tt.verb, tt.resource); got != tt.want {
			t.Errorf("%s may %s %s in %s: %v (%s), want %v", user, tt.verb, tt.resource, tt.namespace, got, reason, tt.want)
		}
	}
}
