package lint

import (
	"slices"
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
			[]string{"Job/report: error: container cloud-sql-proxy (Cloud SQL Auth Proxy) is a classic sidecar whose /quitquitquit endpoint (--quitquitquit) is off: " +
				"nothing can tell it to quit, so the Job never completes; add --quitquitquit (and --admin-port if 9091 is taken), " +
				"or run it as a native sidecar, as kubectl sidesync inject --native does: move it into initContainers with restartPolicy: Always, " +
				"startupProbe: {httpGet: {path: /startup, port: 9090}}, and env CSQL_PROXY_HTTP_ADDRESS=0.0.0.0"}},
		{"Istio, nothing quits it", job(noAnn, containers(app, istioProxy)),
			[]string{"Job/report: error: container istio-proxy (Istio) is a classic sidecar and nothing tells it to quit: it keeps running after the app ends, " +
				"so the Job never completes; wrap the apps with sidesync (kubectl sidesync inject; an app without a command needs --resolve), " +
				`or have it injected as a native sidecar (sidecar.istio.io/nativeSidecar: "true")`}},
		{"Linkerd asked for, wrapped", job(`{linkerd.io/inject: enabled}`, containers(wrapped)),
			[]string{`Job/report: warning: if your mesh injects classic sidecars (Linkerd 2.20+ injects native sidecars by default; older releases, or proxy.nativeSidecar: false, classic ones), ` +
				`container linkerd-proxy (Linkerd, from the annotation linkerd.io/inject: "enabled") is a classic sidecar whose /shutdown endpoint is off ` +
				`unless the cluster turns it on (the Helm value proxy.enableShutdownEndpoint does it for every pod; proxies before mid-2024 always serve it): ` +
				`otherwise nothing can tell it to quit, so the Job never completes; ` +
				`add the pod annotation config.linkerd.io/proxy-admin-shutdown: enabled (or the Helm value proxy.enableShutdownEndpoint: true), ` +
				`or have it injected as a native sidecar (config.beta.linkerd.io/proxy-enable-native-sidecar: "true")`}},
		{"Istio asked for by label, wrapped but turned off", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: report}\nspec:\n  template:\n" +
			"    metadata: {labels: {sidecar.istio.io/inject: \"true\"}}\n    spec: " + containers(`{name: job, image: x, command: [sidesync, --disabled, "--", run]}`) + "\n",
			[]string{`Job/report: warning: if your mesh injects classic sidecars (Istio 1.28+ injects native sidecars when every node runs Kubernetes 1.33+ ` +
				`(ENABLE_NATIVE_SIDECARS=auto); older releases, or a cluster with an older node, get classic ones), container istio-proxy ` +
				`(Istio, from the label sidecar.istio.io/inject: "true") is a classic sidecar and nothing tells it to quit: ` +
				`it keeps running after the app ends, so the Job never completes; let the apps' sidesync quit it (job's runs --disabled), ` +
				`or have it injected as a native sidecar (sidecar.istio.io/nativeSidecar: "true")`}},
		{"an uploader left unwrapped", job(noAnn, containers(wrapped, `{name: uploader, image: x, command: [upload]}`, istioProxy)),
			[]string{"Job/report: error: container job runs sidesync and container uploader does not: the sidecars are told to quit when job ends, " +
				"while uploader may still run and lose them; wrap every app container (kubectl sidesync inject wraps them all, and makes them peers)"}},
		{"two wrappers that do not know each other", job(noAnn, containers(wrapped, `{name: uploader, image: x, command: [/sidesync/bin/sidesync, "--", upload]}`, istioProxy)),
			[]string{"Job/report: error: containers job and uploader each tell the sidecars to quit when their own command ends, without waiting for the other " +
				"app containers: the first to end cuts the others' sidecars; inject again (kubectl sidesync inject makes the wrapped containers peers), " +
				"or give each --peers, --state-dir (a shared emptyDir) and --container"}},
		{"the Kubernetes documentation's log shipper", job(noAnn, containers(app, `{name: logs, image: busybox, command: [sh, -c, "tail -F /var/log/app.log"]}`)),
			[]string{"Job/report: warning: containers job and logs are regular containers and no sidecar sidesync knows is among them: if one of them never ends " +
				"on its own (a log shipper, a proxy), it keeps running, so the Job never completes; run such a container as a native sidecar (in initContainers, " +
				"with restartPolicy: Always), or name it to sidesync (--sidecar http:quit=URL) if it can be told to quit"}},
		{"a CronJob of batch/v1beta1", "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: old}\nspec: {}\n",
			[]string{"CronJob/old: error: apiVersion batch/v1beta1 is not served since Kubernetes 1.25: upgrade it to batch/v1; " +
				"then lint it again; kubectl sidesync inject passes it through unchanged until then"}},
		{"a stale SIDESYNC_RESTART_POLICY", job(noAnn, containers(wrappedWith(`env: [{name: SIDESYNC_RESTART_POLICY, value: OnFailure}]`), istioProxy)),
			[]string{"Job/report: error: container job restarts in place on no exit code (the pod's restartPolicy Never), but the sidesync it runs is told it does " +
				"on every exit code but 0: after every exit code but 0 it keeps the sidecars for a restart that never comes, so the Job never completes; " +
				"inject it again to update SIDESYNC_RESTART_POLICY and SIDESYNC_RESTART_RULES, or correct them"}},
		{"a native Cloud SQL Auth Proxy without --health-check: never wrap, probe", job(noAnn, `{restartPolicy: Never, containers: [`+app+
			`], initContainers: [{name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.28.0, restartPolicy: Always, args: [p:r:i]}]}`),
			[]string{"Job/report: warning: container cloud-sql-proxy (Cloud SQL Auth Proxy) is a native sidecar without a startupProbe: Kubernetes starts the app " +
				"as soon as the sidecar's process runs, ready or not; add --health-check (and --http-port if 9090 is taken) and a startupProbe on it"}},
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
		errorOf(RuleNeverQuits, "db"), warningOf(RuleNeverQuits, "linkerd-proxy"), errorOf(RuleNeverQuits, "vault-agent"),
		errorOf(RuleCloudSQLQuit, "db"), warningOf(RuleLinkerdShutdown, "linkerd-proxy"), errorOf(RuleVaultQuit, "vault-agent"),
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

// TestKinds: a Pod, a Job and a CronJob with the same pod give the same finding, each naming
// its object.
func TestKinds(t *testing.T) {
	never := corev1.RestartPolicyNever
	spec := corev1.PodSpec{RestartPolicy: never, Containers: []corev1.Container{
		{Name: "job", Image: "example/report"}, {Name: "istio-proxy", Image: "istio/proxyv2"}}}
	tmpl := corev1.PodTemplateSpec{Spec: spec}
	objs := slices.Concat(
		typedObjects(t, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}),
		typedObjects(t, &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: tmpl}}),
		typedObjects(t, &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}, ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}))
	if len(objs) != 3 {
		t.Fatalf("%d objects", len(objs))
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
