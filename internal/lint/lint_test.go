package lint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLines checks whole lines: what a user reads.
func TestLines(t *testing.T) {
	tests := []struct {
		name, manifest string
		want           []string
	}{
		{"the Cloud SQL Auth Proxy without --quitquitquit", job(noAnn, containers(wrapped,
			`{name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1, args: [--health-check, my:project:db]}`)),
			[]string{"Job/report: error: container cloud-sql-proxy (Cloud SQL Auth Proxy) runs without --quitquitquit: nothing can tell it to quit, " +
				"so the Job never completes; add --quitquitquit (and --admin-port if 9091 is taken), or run it as a native sidecar"}},
		{"Istio, nothing quits it", job(noAnn, containers(app, istioProxy)),
			[]string{"Job/report: error: container istio-proxy (Istio) is a classic sidecar and nothing tells it to quit: it keeps running after the app ends, " +
				"so the Job never completes; wrap the app with sidesync (kubectl sidesync inject), or run it as a native sidecar (in initContainers, with restartPolicy: Always)"}},
		{"Linkerd asked for, wrapped", job(`{linkerd.io/inject: enabled}`, containers(wrapped)),
			[]string{`Job/report: error: container linkerd-proxy (Linkerd, from the annotation linkerd.io/inject: "enabled") is a classic sidecar whose /shutdown endpoint is off ` +
				`(config.linkerd.io/proxy-admin-shutdown is not "enabled"): nothing can tell it to quit, so the Job never completes; ` +
				`add the pod annotation config.linkerd.io/proxy-admin-shutdown: enabled (or the Helm value proxy.enableShutdownEndpoint: true), ` +
				`or have it injected as a native sidecar (config.beta.linkerd.io/proxy-enable-native-sidecar: "true")`}},
		{"Istio asked for by label, wrapped but turned off", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: report}\nspec:\n  template:\n" +
			"    metadata: {labels: {sidecar.istio.io/inject: \"true\"}}\n    spec: " + containers(`{name: job, image: x, command: [sidesync, --disabled, "--", run]}`) + "\n",
			[]string{`Job/report: error: container istio-proxy (Istio, from the label sidecar.istio.io/inject: "true") is a classic sidecar and nothing tells it to quit: ` +
				`it keeps running after the app ends, so the Job never completes; let the app's sidesync quit it (it runs --disabled, with --quit never, ` +
				`or as sidesync wait), or have it injected as a native sidecar (sidecar.istio.io/nativeSidecar: "true")`}},
		{"pod OnFailure, sidesync told", job(noAnn, `{restartPolicy: OnFailure, containers: [`+
			wrappedWith(`env: [{name: SIDESYNC_RESTART_POLICY, value: OnFailure}]`)+`, `+istioProxy+`]}`),
			[]string{"Job/report: warning: container job restarts in place on failure (the pod's restartPolicy OnFailure); sidesync does not quit the sidecars then; " +
				"make sure backoffLimit or activeDeadlineSeconds bound the restarts"}},
		{"no sidecar", job(noAnn, containers(app)),
			[]string{"Job/report: info: no sidecar found; sidesync is not needed for sidecars here (it still keeps exit codes and reaps zombies)"}},
		{"native sidecars with startup probes", job(noAnn, nativeSpec(app, fluentBitProbe)),
			[]string{"Job/report: info: every sidecar is native with a startup probe: Kubernetes already orders and stops them; sidesync is not needed for them"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range lintOne(t, tt.manifest) {
				got = append(got, f.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOrder: findings come rule by rule, and the same input gives the same output.
func TestOrder(t *testing.T) {
	manifest := jobWith(`podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: NotIn, values: [0]}}]}`,
		`{vault.hashicorp.com/agent-inject: "true", linkerd.io/inject: enabled}`,
		`{restartPolicy: OnFailure, containers: [`+app+`, {name: db, image: cloud-sql-proxy}], initContainers: [`+fluentBit+`]}`)
	want := []short{
		errorOf(RuleNeverQuits, "db"), errorOf(RuleNeverQuits, "linkerd-proxy"), errorOf(RuleNeverQuits, "vault-agent"),
		errorOf(RuleCloudSQLQuit, "db"), errorOf(RuleLinkerdShutdown, "linkerd-proxy"), errorOf(RuleVaultQuit, "vault-agent"),
		warningOf(RuleCloudSQLHealth, "db"), warningOf(RuleNoStartupProbe, "fluent-bit"), warningOf(RuleFailurePolicy, ""),
		warningOf(RuleRestartsInPlace, "job"),
	}
	first := lintOne(t, manifest)
	if diff := cmp.Diff(want, shorten(first)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for range 5 {
		if diff := cmp.Diff(first, lintOne(t, manifest)); diff != "" {
			t.Fatalf("a second run differs (-first +again):\n%s", diff)
		}
	}
}

// TestTypedObjects: the constructors take the typed objects an admission webhook decodes.
func TestTypedObjects(t *testing.T) {
	never := corev1.RestartPolicyNever
	spec := corev1.PodSpec{RestartPolicy: never, Containers: []corev1.Container{
		{Name: "job", Image: "example/report"}, {Name: "istio-proxy", Image: "istio/proxyv2"}}}
	tmpl := corev1.PodTemplateSpec{Spec: spec}
	objs := []Object{
		FromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}),
		FromJob(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: tmpl}}),
		FromCronJob(&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}),
	}
	for _, o := range objs {
		fs := Lint(o)
		if len(fs) != 1 || fs[0].Rule != RuleNeverQuits || fs[0].Object != o.ID() {
			t.Errorf("%s: got\n%s\nwant one %s finding", o.ID(), lines(fs), RuleNeverQuits)
		}
	}
}

// TestCounts is the summary line.
func TestCounts(t *testing.T) {
	fs := []Finding{{Severity: Error}, {Severity: Error}, {Severity: Warning}, {Severity: Info}}
	tests := []struct {
		objects int
		fs      []Finding
		want    string
	}{
		{3, fs, "2 errors, 1 warning in 3 objects"},
		{1, fs[2:], "0 errors, 1 warning in 1 object"},
		{0, nil, "0 errors, 0 warnings in 0 objects"},
	}
	for _, tt := range tests {
		if got := Count(tt.objects, tt.fs).String(); got != tt.want {
			t.Errorf("Count(%d, ...) = %q, want %q", tt.objects, got, tt.want)
		}
	}
}
