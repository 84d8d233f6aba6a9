package lint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/stream"
)

// FuzzLint decodes arbitrary manifests and lints every Pod, Job and CronJob in them, as
// `kubectl sidesync lint` does. Neither may panic; both are deterministic; every finding names
// its object, has a known severity, a rule and a message; and the findings do not change when
// the manifest is written and read again (by internal/cluster/stream, as inject does).
func FuzzLint(f *testing.F) {
	told := `env: [{name: SIDESYNC_RESTART_POLICY, value: OnFailure}]`
	rules42 := `restartPolicy: Never, restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42, 43]}}]`
	for _, s := range []string{
		job(noAnn, containers(app, istioProxy)),
		job(noAnn, containers(wrapped, istioProxy)),
		job(noAnn, containers(`{name: job, image: x, command: [/usr/local/bin/sidesync, --sidecar, istio, "--", run]}`, istioProxy)),
		job(noAnn, containers(quitCurl, istioProxy)),
		job(noAnn, containers(`{name: job, image: x, command: [sidesync, --quit=never, "--", run]}`, istioProxy)),
		job(noAnn, containers(`{name: job, image: x, command: [sidesync, "--", run], env: [{name: SIDESYNC_DISABLED, value: "true"}]}`, istioProxy)),
		job(noAnn, containers(`{name: job, image: x, command: [sidesync, wait, "--", run]}`, istioProxy)),
		job(noAnn, `{restartPolicy: OnFailure, containers: [{name: job, image: x, command: [/sidesync/bin/sidesync, "--"], args: [run], `+told+`}, `+istioProxy+`]}`),
		job(noAnn, `{restartPolicy: OnFailure, containers: [{name: job, image: x, command: [/sidesync/bin/sidesync, --restart-rules, '[{"action":"Restart"}]', "--", run]}, {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--quitquitquit]}]}`),
		job(noAnn, `{containers: [{name: job, image: x, command: [sidesync, "--", x], `+rules42+`}, `+istioProxy+`]}`),
		jobWith(`podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [69]}}, {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}`, noAnn, containers(wrapped, istioProxy)),
		job(`{sidecar.istio.io/status: '{"initContainers":["istio-proxy"]}', sidesync.io/sidecars: "linkerd:native=true"}`,
			`{restartPolicy: Never, containers: [`+wrapped+`], initContainers: [{name: istio-proxy, image: istio/proxyv2, restartPolicy: Always}]}`),
		job(`{linkerd.io/inject: enabled, vault.hashicorp.com/agent-inject: "true", dapr.io/enabled: "true"}`, containers(wrapped)),
		podYAML(noAnn, containers(app, istioProxy)),
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '* * * * *', jobTemplate: {spec: {template: {spec: " + containers(app, istioProxy) + "}}}}\n",
		`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"},"spec":{"containers":[{"name":"x"}]}},{"kind":"List","items":[]}]}`,
		`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"x","ports":[{"containerPort":"80"}]}]}}`,
		"kind: ConfigMap\n---\nkind: [B\n",
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../../../deploy/examples/*.yaml")
	plain, _ := filepath.Glob("../../../deploy/examples/*/*.yaml")
	for _, name := range slices.Concat(files, plain) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(data)
		objs2, err2 := Decode(data)
		if (err == nil) != (err2 == nil) || len(objs) != len(objs2) {
			t.Fatalf("Decode is not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "document ") {
				t.Fatalf("Decode error %q names no document", err)
			}
			return
		}
		findings := lintAll(t, objs)
		if again := lintAll(t, objs2); !reflect.DeepEqual(findings, again) {
			t.Fatalf("Lint is not deterministic:\n%v\n%v", findings, again)
		}
		docs, format, err := stream.Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Decode read what stream.Read refuses: %v", err)
		}
		var b bytes.Buffer
		if err := stream.Write(&b, docs, format); err != nil {
			t.Fatalf("Write: %v", err)
		}
		written, err := Decode(b.Bytes())
		if err != nil {
			t.Fatalf("%q, written as %q, does not decode: %v", data, b.Bytes(), err)
		}
		if got := lintAll(t, written); !reflect.DeepEqual(got, findings) {
			t.Fatalf("%q, written as %q, lints as\n%v\nwant\n%v", data, b.Bytes(), got, findings)
		}
	})
}

// lintAll lints every object and checks each finding.
func lintAll(t *testing.T, objs []Object) []Finding {
	t.Helper()
	var all []Finding
	for _, o := range objs {
		for _, f := range Lint(o) {
			if f.Object != o.ID() || f.Rule == "" || f.Message == "" || !slices.Contains([]Severity{Error, Warning, Info}, f.Severity) {
				t.Fatalf("finding %+v of %s", f, o.ID())
			}
			all = append(all, f)
		}
	}
	return all
}

// FuzzLintWrapper lints a Job whose app container runs arbitrary words (sidesync's flags among
// them: --quit, --disabled, --restart-policy, --restart-rules, ...) with arbitrary sidesync
// variables, next to an Istio proxy and a Cloud SQL Auth Proxy with arbitrary flags, under
// arbitrary restart settings and sidecar annotations: the strings lint parses itself, which
// byte-level mutation of a whole manifest seldom reaches. Lint must not panic, must be
// deterministic, and every finding must be well formed.
func FuzzLintWrapper(f *testing.F) {
	for _, s := range [][6]string{
		{"/sidesync/bin/sidesync\n--\npython\njob.py", "", "Never", "", "", ""},
		{"sidesync\n--quit=never\n--\nrun", "SIDESYNC_DISABLED=true", "OnFailure", "", "", "--health-check\n--quitquitquit"},
		{"sidesync\n--restart-policy=OnFailure\n--restart-rules\n[{\"action\":\"Restart\",\"exitCodes\":{\"operator\":\"In\",\"values\":[42]}}]\n--\nrun", "", "Always", "Never",
			`[{"action":"Restart","exitCodes":{"operator":"NotIn","values":[0]}}]`, "--quitquitquit=false\n--http-port\n9190"},
		{"sidesync\nwait\n--\nrun", "SIDESYNC_RESTART_POLICY=OnFailure\nSIDESYNC_RESTART_RULES=[{\"action\":\"Reboot\"}]\nSIDESYNC_QUIT=never", "OnFailure", "", "", ""},
		{"sh\n-c\npython job.py; curl -X POST localhost:15020/quitquitquit", "", "Never", "", "", "--admin-port=9191"},
		{"sidesync\n--disabled\n--quit-url\nhttp://127.0.0.1:15020/quitquitquit\n--\nrun", "SIDESYNC_QUIT=", "", "sometimes", "[]", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], "istio,cloudsql:ready-port=9190", true)
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], "", false)
	}
	f.Fuzz(func(t *testing.T, command, env, podRestart, ownRestart, rules, proxyArgs, annotation string, native bool) {
		app := corev1.Container{Name: "job", Image: "example/job", Command: splitLines(command)}
		for _, kv := range splitLines(env) {
			k, v, _ := strings.Cut(kv, "=")
			if k == "" {
				continue // a variable without a name is no manifest: Decode refuses it, rightly
			}
			app.Env = append(app.Env, corev1.EnvVar{Name: k, Value: v})
		}
		if ownRestart != "" {
			p := corev1.ContainerRestartPolicy(ownRestart)
			app.RestartPolicy = &p
		}
		if rules != "" {
			_ = json.Unmarshal([]byte(rules), &app.RestartPolicyRules)
		}
		proxy := corev1.Container{Name: "cloud-sql-proxy", Image: "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0", Args: splitLines(proxyArgs)}
		istio := corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.0"}
		spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicy(podRestart), Containers: []corev1.Container{app, istio}}
		if native {
			always := corev1.ContainerRestartPolicyAlways
			proxy.RestartPolicy = &always
			spec.InitContainers = []corev1.Container{proxy}
		} else {
			spec.Containers = append(spec.Containers, proxy)
		}
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"sidesync.io/sidecars": annotation, "sidecar.istio.io/status": annotation}},
			Spec:       spec,
		}}}
		j.APIVersion, j.Kind = "batch/v1", "Job"
		objs := typedObjects(t, j)
		findings := lintAll(t, objs)
		if again := lintAll(t, typedObjects(t, j)); !reflect.DeepEqual(findings, again) {
			t.Fatalf("Lint is not deterministic:\n%v\n%v", findings, again)
		}
	})
}

// typedObjects is what lint reads of a typed object, written as JSON.
func typedObjects(t *testing.T, obj any) []Object {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return objs
}

// splitLines splits s into lines; none for "".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
