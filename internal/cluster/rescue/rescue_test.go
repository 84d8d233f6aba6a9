package rescue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// The clock of the tests: the apps end at ended, the rescuer looks at now.
var (
	started = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ended   = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now     = ended.Add(10 * time.Minute)
)

const (
	image    = "ghcr.io/sidesync/sidesync:v1.4.0"
	appImage = "registry.example.com/reports/nightly:2026.11"
)

// The images the sidecars' injectors add.
const (
	istioImage   = "docker.io/istio/proxyv2:1.28.0"
	linkerdImage = "cr.l5d.io/linkerd/proxy:edge-26.5.2"
	vaultImage   = "hashicorp/vault:1.17.2"
	daprImage    = "ghcr.io/dapr/daprd:1.14.4"
	csqlImage    = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1"
	csqlV1Image  = "gcr.io/cloudsql-docker/gce-proxy:1.33.2"
	fluentImage  = "cr.fluentbit.io/fluent/fluent-bit:3.1.9"
)

func ptr[T any](v T) *T { return &v }

// podOpt changes a pod under construction; cOpt a container.
type (
	podOpt func(*corev1.Pod)
	cOpt   func(*corev1.Container)
)

// newPod is a Job's pod as the API server holds it once scheduled: owned by its Job,
// restartPolicy Never, Running; opts add its containers and their statuses, in order.
func newPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29384-x7k2p", Namespace: "reports", UID: "1f0c6a52-5d1e-4c1b-9a51-3f7a4c2d9e10",
			Labels: map[string]string{"batch.kubernetes.io/job-name": "nightly-29384"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "nightly-29384",
				UID: "8a6b1c2d-0e3f-4a5b-8c7d-9e0f1a2b3c4d", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
		Spec:   corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr(metav1.NewTime(started))},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func all(opts ...podOpt) podOpt {
	return func(p *corev1.Pod) {
		for _, o := range opts {
			o(p)
		}
	}
}

func ann(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func label(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

// ctr adds a regular container and its status.
func ctr(name, img string, st corev1.ContainerState, opts ...cOpt) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: name, Image: img}
		for _, o := range opts {
			o(&c)
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, status(name, img, st))
	}
}

// initCtr adds an init container and its status; always() makes it a native sidecar.
func initCtr(name, img string, st corev1.ContainerState, opts ...cOpt) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: name, Image: img}
		for _, o := range opts {
			o(&c)
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, status(name, img, st))
	}
}

// rescuer adds an ephemeral container an earlier rescue added, with its status unless st is
// nil (the kubelet has not reported on it yet).
func rescuer(name string, st *corev1.ContainerState) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: image, Command: []string{"/sidesync", "quit"}}})
		if st != nil {
			p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, status(name, image, *st))
		}
	}
}

func status(name, img string, st corev1.ContainerState) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: img, ImageID: img + "@sha256:0b7e", ContainerID: "containerd://" + name,
		State: st, Ready: st.Running != nil, Started: ptr(st.Running != nil)}
}

// lastExit sets the last termination of the container called name: it ended with code and is
// now waiting to run again.
func lastExit(name string, code int32) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if st := &p.Status.ContainerStatuses[i]; st.Name == name {
				st.RestartCount = 3
				st.LastTerminationState = exited(code)
			}
		}
	}
}

// noStatus drops the status of the container called name, or of every container for "".
func noStatus(name string) podOpt {
	return func(p *corev1.Pod) {
		var keep []corev1.ContainerStatus
		for _, st := range p.Status.ContainerStatuses {
			if name != "" && st.Name != name {
				keep = append(keep, st)
			}
		}
		p.Status.ContainerStatuses = keep
	}
}

func args(a ...string) cOpt { return func(c *corev1.Container) { c.Args = a } }

func command(a ...string) cOpt { return func(c *corev1.Container) { c.Command = a } }

func env(name, value string) cOpt {
	return func(c *corev1.Container) { c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value}) }
}

func envVar(v corev1.EnvVar) cOpt {
	return func(c *corev1.Container) { c.Env = append(c.Env, v) }
}

func always() cOpt {
	return func(c *corev1.Container) { c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways) }
}

func runAs(uid, gid int64) cOpt {
	return func(c *corev1.Container) {
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(uid), RunAsGroup: ptr(gid)}
	}
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}
}

func exited(code int32) corev1.ContainerState { return exitedAt(code, ended) }

func exitedAt(code int32, at time.Time) corev1.ContainerState {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
		StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(at), ContainerID: "containerd://x"}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// app is the Job's own container, ended with code.
func app(code int32) podOpt {
	return ctr("main", appImage, exited(code), command("/app/nightly"), args("--date", "2026-11-30"))
}

// The sidecars, as their injectors leave a pod.

const istioStatus = `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`

func istio(st corev1.ContainerState) podOpt {
	return all(ann("sidecar.istio.io/status", istioStatus),
		initCtr("istio-init", istioImage, exited(0), args("istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337")),
		ctr("istio-proxy", istioImage, st, args("proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"), runAs(1337, 1337)))
}

func linkerd(st corev1.ContainerState, opts ...cOpt) podOpt {
	return all(ann("linkerd.io/proxy-version", "edge-26.5.2"), ann("linkerd.io/inject", "enabled"),
		initCtr("linkerd-init", "cr.l5d.io/linkerd/proxy-init:v2.4.1", exited(0)),
		ctr("linkerd-proxy", linkerdImage, st, append([]cOpt{env("LINKERD2_PROXY_ADMIN_LISTEN_ADDR", "0.0.0.0:4191")}, opts...)...))
}

func vault(st corev1.ContainerState) podOpt {
	return all(ann("vault.hashicorp.com/agent-inject", "true"), ann("vault.hashicorp.com/agent-inject-status", "injected"),
		initCtr("vault-agent-init", vaultImage, exited(0)),
		ctr("vault-agent", vaultImage, st, command("/bin/sh", "-ec"), args("echo ${VAULT_CONFIG?} | base64 -d > /home/vault/config.json && vault agent -config=/home/vault/config.json")))
}

func dapr(st corev1.ContainerState, opts ...cOpt) podOpt {
	return all(ann("dapr.io/enabled", "true"), ann("dapr.io/app-id", "nightly"),
		ctr("daprd", daprImage, st, append([]cOpt{args("/daprd", "--mode", "kubernetes", "--app-id", "nightly")}, opts...)...))
}

func csql(st corev1.ContainerState, a ...string) podOpt {
	return ctr("cloud-sql-proxy", csqlImage, st, args(a...), runAs(65532, 65532))
}

func fluentBit(st corev1.ContainerState) podOpt {
	return ctr("fluent-bit", fluentImage, st, runAs(1000, 2000))
}

// The rescue containers a Stuck decision adds; a quit container's command stops before its
// --sidecar values, which quitsOf checks by what they mean to the pod binary.

func restrictedSC(uid, gid *int64) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		RunAsUser:                uid,
		RunAsGroup:               gid,
	}
	if uid != nil && *uid == 0 {
		sc.RunAsNonRoot = nil
	}
	return sc
}

func quitC(name string, env ...corev1.EnvVar) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: image, Command: []string{"/sidesync", "quit"}, Env: env, SecurityContext: restrictedSC(nil, nil)}}
}

func signalC(name, target string, uid, gid *int64) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: image, Command: []string{"/sidesync", "signal", "TERM"}, SecurityContext: restrictedSC(uid, gid)},
		TargetContainerName: target}
}

func quitT(container, profile string) rescue.Target {
	return rescue.Target{Container: container, Profile: profile}
}

func signalT(container, profile string) rescue.Target {
	return rescue.Target{Container: container, Profile: profile, Signal: true}
}

// quitsOf reads the --sidecar values of the quit containers in add as the pod binary reads them
// (config.ParseSidecars, with the container's own literal variables as its environment), as
// "PROFILE URL" and the quit call's headers, and returns add with the values cut from the
// commands. A value the pod binary refuses is an error of the test.
func quitsOf(t *testing.T, add []corev1.EphemeralContainer) (quits, specs []string, rest []corev1.EphemeralContainer) {
	t.Helper()
	for _, c := range add {
		c := *c.DeepCopy()
		if len(c.Command) < 2 || c.Command[1] != "quit" {
			rest = append(rest, c)
			continue
		}
		lookupEnv := func(name string) (string, bool) {
			for _, v := range c.Env {
				if v.Name == name && v.ValueFrom == nil {
					return v.Value, true
				}
			}
			return "", false
		}
		flags := c.Command[2:]
		if len(flags)%2 != 0 {
			t.Fatalf("%s: command %q: not --sidecar VALUE pairs", c.Name, c.Command)
		}
		for i := 0; i < len(flags); i += 2 {
			if flags[i] != "--sidecar" {
				t.Fatalf("%s: command %q: %q where --sidecar belongs", c.Name, c.Command, flags[i])
			}
			parsed, err := config.ParseSidecars(flags[i+1], lookupEnv)
			if err != nil || len(parsed) != 1 {
				t.Fatalf("%s: the pod binary reads --sidecar %q as %d sidecars, err %v", c.Name, flags[i+1], len(parsed), err)
			}
			q := parsed[0].Sidecar.Quit
			if q == nil {
				t.Fatalf("%s: --sidecar %q has no quit call", c.Name, flags[i+1])
			}
			meaning := parsed[0].Profile + " " + q.URL
			for _, h := range q.Header {
				meaning += " " + h.Name + ": " + h.Value
			}
			quits, specs = append(quits, meaning), append(specs, flags[i+1])
		}
		c.Command = c.Command[:2]
		rest = append(rest, c)
	}
	return quits, specs, rest
}

// decideCase is a pod and what Decide must say of it.
type decideCase struct {
	name string
	pod  *corev1.Pod
	o    rescue.Options // Image and Now are the tests' unless set

	verdict rescue.Verdict
	refusal rescue.Refusal
	reason  string // a piece of the Reason
	hint    string // a piece of the Hint
	targets []rescue.Target
	// quits are the quit calls of the quit container, as the pod binary reads its --sidecar
	// values: "PROFILE URL [HEADER: VALUE]", the URL the sidecar really serves its quit on.
	quits   []string
	add     []corev1.EphemeralContainer // quit containers' commands without the --sidecar values
	attempt int
	waited  time.Duration
}

func TestDecide(t *testing.T) {
	var cases []decideCase
	cases = append(cases, sidecarCases()...)
	cases = append(cases, ruleCases()...)
	cases = append(cases, orchestratorCases()...)
	cases = append(cases, attemptCases()...)
	cases = append(cases, signalCases()...)
	seen := map[string]bool{}
	for _, tt := range cases {
		if seen[tt.name] {
			t.Fatalf("two cases are called %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) { checkDecide(t, tt) })
	}
}

func checkDecide(t *testing.T, tt decideCase) {
	t.Helper()
	o := tt.o
	if o.Image == "" {
		o.Image = image
	}
	if o.Now.IsZero() {
		o.Now = now
	}
	before := tt.pod.DeepCopy()
	d := rescue.Decide(tt.pod, o)
	if diff := cmp.Diff(before, tt.pod); diff != "" {
		t.Errorf("Decide changed the pod (-before +after):\n%s", diff)
	}
	if d.Verdict != tt.verdict || d.Refusal != tt.refusal {
		t.Fatalf("Decide: %s %q (%s; hint %q), want %s %q", d.Verdict, d.Refusal, d.Reason, d.Hint, tt.verdict, tt.refusal)
	}
	if d.Key() != "reports/nightly-29384-x7k2p" {
		t.Errorf("Key() = %q", d.Key())
	}
	if d.Reason == "" || !strings.Contains(d.Reason, tt.reason) {
		t.Errorf("Reason = %q, want it to say %q", d.Reason, tt.reason)
	}
	if !strings.Contains(d.Hint, tt.hint) {
		t.Errorf("Hint = %q, want it to say %q", d.Hint, tt.hint)
	}
	if diff := cmp.Diff(tt.targets, d.Targets, cmpopts.IgnoreFields(rescue.Target{}, "Spec"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Targets (-want +got):\n%s", diff)
	}
	quits, specs, rest := quitsOf(t, d.Add)
	if diff := cmp.Diff(tt.quits, quits, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the quit calls the pod binary reads from the rescue's --sidecar values (-want +got):\n%s", diff)
	}
	var targetSpecs []string
	for _, tg := range d.Targets {
		if tg.Signal != (tg.Spec == "") {
			t.Errorf("target %s: Signal %v with Spec %q", tg.Container, tg.Signal, tg.Spec)
		}
		if !tg.Signal && d.Verdict == rescue.Stuck {
			targetSpecs = append(targetSpecs, tg.Spec)
		}
	}
	if diff := cmp.Diff(targetSpecs, specs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the targets' Spec and the quit container's --sidecar values differ (-targets +command):\n%s", diff)
	}
	if diff := cmp.Diff(tt.add, rest, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
	if d.Attempt != tt.attempt || d.Waited != tt.waited {
		t.Errorf("Attempt %d, Waited %v; want %d, %v", d.Attempt, d.Waited, tt.attempt, tt.waited)
	}
	if (d.Refusal == "") != (d.Verdict != rescue.Left) {
		t.Errorf("Verdict %s with Refusal %q", d.Verdict, d.Refusal)
	}
}

// sidecarCases: one pod per sidecar of the catalog that has a quit endpoint, with its ports as
// its injector or its user sets them.
func sidecarCases() []decideCase {
	stuck := func(name string, pod *corev1.Pod, targets []rescue.Target, quits []string, add ...corev1.EphemeralContainer) decideCase {
		if len(add) == 0 {
			add = []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}
		}
		return decideCase{name: name, pod: pod, verdict: rescue.Stuck, reason: "still run", targets: targets, quits: quits, add: add, attempt: 1}
	}
	left := func(name string, pod *corev1.Pod, r rescue.Refusal, reason, hint string) decideCase {
		return decideCase{name: name, pod: pod, verdict: rescue.Left, refusal: r, reason: reason, hint: hint}
	}
	tokenFromSecret := corev1.EnvVar{Name: "DAPR_API_TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "dapr-api-token"}, Key: "token"}}}
	return []decideCase{
		stuck("istio", newPod(app(0), istio(running())),
			[]rescue.Target{quitT("istio-proxy", "istio")}, []string{"istio http://127.0.0.1:15020/quitquitquit"}),
		stuck("istio with its agent on another status port", newPod(app(0), istio(running()), ann("status.sidecar.istio.io/port", "15030")),
			[]rescue.Target{quitT("istio-proxy", "istio")}, []string{"istio http://127.0.0.1:15030/quitquitquit"}),
		stuck("linkerd with /shutdown on", newPod(app(0), ann("config.linkerd.io/proxy-admin-shutdown", "enabled"),
			linkerd(running(), env("LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", "true"))),
			[]rescue.Target{quitT("linkerd-proxy", "linkerd")}, []string{"linkerd http://127.0.0.1:4191/shutdown"}),
		stuck("linkerd with /shutdown on and another admin port", newPod(app(0), ann("config.linkerd.io/admin-port", "4192"),
			linkerd(running(), env("LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", "true"))),
			[]rescue.Target{quitT("linkerd-proxy", "linkerd")}, []string{"linkerd http://127.0.0.1:4192/shutdown"}),
		// The catalog's Off.Certain is false: the Helm value, or a proxy from before mid-2024,
		// may serve /shutdown although the pod does not say so; the call is tried.
		func() decideCase {
			tt := stuck("linkerd whose pod does not say whether /shutdown is on", newPod(app(0), linkerd(running())),
				[]rescue.Target{quitT("linkerd-proxy", "linkerd")}, []string{"linkerd http://127.0.0.1:4191/shutdown"})
			tt.hint = "linkerd-proxy's /shutdown endpoint may be off: if its quit fails, --signal linkerd-proxy sends it SIGTERM"
			return tt
		}(),
		left("linkerd with /shutdown off by its variable", newPod(app(0), linkerd(running(), env("LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", "false"))),
			rescue.NoQuit, "linkerd-proxy (Linkerd): its /shutdown endpoint is off; --signal linkerd-proxy", "--signal NAME"),
		left("linkerd with /shutdown off by the annotation", newPod(app(0), ann("config.linkerd.io/proxy-admin-shutdown", "disabled"), linkerd(running())),
			rescue.NoQuit, "/shutdown endpoint is off", "--signal NAME"),
		stuck("consul", newPod(app(0), ann("consul.hashicorp.com/connect-inject-status", "injected"),
			ctr("consul-dataplane", "hashicorp/consul-dataplane:1.6.1", running(), args("-addresses=consul-server.consul.svc", "-graceful-port=20600"))),
			[]rescue.Target{quitT("consul-dataplane", "consul")}, []string{"consul http://127.0.0.1:20600/graceful_shutdown"}),
		stuck("consul with its lifecycle server on another port", newPod(app(0), ann("consul.hashicorp.com/connect-inject-status", "injected"),
			ann("consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port", "20700"),
			ctr("consul-dataplane", "hashicorp/consul-dataplane:1.6.1", running())),
			[]rescue.Target{quitT("consul-dataplane", "consul")}, []string{"consul http://127.0.0.1:20700/graceful_shutdown"}),
		stuck("kuma", newPod(app(0), ann("kuma.io/sidecar-injected", "true"), ctr("kuma-sidecar", "docker.io/kumahq/kuma-dp:2.9.1", running(), args("run", "--log-level=info"))),
			[]rescue.Target{quitT("kuma-sidecar", "kuma")}, []string{"kuma http://127.0.0.1:9901/quitquitquit"}),
		stuck("dapr without a token", newPod(app(0), dapr(running())),
			[]rescue.Target{quitT("daprd", "dapr")}, []string{"dapr http://127.0.0.1:3500/v1.0/shutdown"}),
		stuck("dapr with its token from a Secret", newPod(app(0), dapr(running(), envVar(tokenFromSecret))),
			[]rescue.Target{quitT("daprd", "dapr")}, []string{"dapr http://127.0.0.1:3500/v1.0/shutdown"},
			quitC("sidesync-rescue-1", tokenFromSecret)),
		stuck("dapr with a literal token", newPod(app(0), dapr(running(), env("DAPR_API_TOKEN", "s3cret"))),
			[]rescue.Target{quitT("daprd", "dapr")}, []string{"dapr http://127.0.0.1:3500/v1.0/shutdown dapr-api-token: s3cret"},
			quitC("sidesync-rescue-1", corev1.EnvVar{Name: "DAPR_API_TOKEN", Value: "s3cret"})),
		stuck("dapr on a custom dapr.io/http-port", newPod(app(0), ann("dapr.io/http-port", "3600"), dapr(running(), args("/daprd", "--dapr-http-port", "3600"))),
			[]rescue.Target{quitT("daprd", "dapr")}, []string{"dapr http://127.0.0.1:3600/v1.0/shutdown"}),
		stuck("cloudsql v2 with --quitquitquit and --admin-port=9192", newPod(app(0), csql(running(), "--structured-logs", "--quitquitquit", "--admin-port=9192", "proj:europe-west1:reports")),
			[]rescue.Target{quitT("cloud-sql-proxy", "cloudsql")}, []string{"cloudsql http://localhost:9192/quitquitquit"}),
		stuck("cloudsql v2 switched on by its variables", newPod(app(0),
			ctr("cloud-sql-proxy", csqlImage, running(), env("CSQL_PROXY_QUITQUITQUIT", "true"), env("CSQL_PROXY_ADMIN_PORT", "9300"), env("CSQL_PROXY_HEALTH_CHECK", "true"))),
			[]rescue.Target{quitT("cloud-sql-proxy", "cloudsql")}, []string{"cloudsql http://localhost:9300/quitquitquit"}),
		left("cloudsql v2 without --quitquitquit", newPod(app(0), csql(running(), "--structured-logs", "proj:europe-west1:reports")),
			rescue.NoQuit, "cloud-sql-proxy (Cloud SQL Auth Proxy): its /quitquitquit endpoint (--quitquitquit) is off; --signal cloud-sql-proxy", "--signal NAME"),
		left("cloudsql v1's gce-proxy", newPod(app(0), ctr("cloudsql-proxy", csqlV1Image, running(), command("/cloud_sql_proxy", "-instances=proj:europe-west1:reports=tcp:5432"))),
			rescue.NoQuit, "--signal cloudsql-proxy", "--signal NAME"),
		stuck("vault with its quit API on another port", newPod(app(0), vault(running()), ann("vault.hashicorp.com/agent-enable-quit", "true"),
			ann("vault.hashicorp.com/agent-cache-enable", "true"), ann("vault.hashicorp.com/agent-cache-listener-port", "8300")),
			[]rescue.Target{quitT("vault-agent", "vault")}, []string{"vault http://127.0.0.1:8300/agent/v1/quit"}),
		stuck("vault with its quit API on the default port", newPod(app(0), vault(running()), ann("vault.hashicorp.com/agent-enable-quit", "true")),
			[]rescue.Target{quitT("vault-agent", "vault")}, []string{"vault http://127.0.0.1:8200/agent/v1/quit"}),
		left("vault with its quit API off", newPod(app(0), vault(running())),
			rescue.NoQuit, "vault-agent (Vault Agent): its quit API is off", "--signal NAME"),
		stuck("osm", newPod(app(0), label("osm-proxy-uuid", "5f3e0d6c-6a3b-4f4e-9d4e-2c8b1f0a7e61"),
			initCtr("osm-init", "openservicemesh/init:v1.2.0", exited(0)),
			ctr("envoy", "envoyproxy/envoy-distroless:v1.24.0", running(), command("envoy"), args("--config-path", "/etc/envoy/bootstrap.yaml"))),
			[]rescue.Target{quitT("envoy", "osm")}, []string{"osm http://127.0.0.1:15000/quitquitquit"}),
		stuck("appmesh", newPod(app(0), ctr("envoy", "840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29.6.0-prod", running())),
			[]rescue.Target{quitT("envoy", "appmesh")}, []string{"appmesh http://localhost:9901/quitquitquit"}),
		stuck("several sidecars at once, one quit container, in the pod's order",
			newPod(app(0), istio(running()), vault(running()), ann("vault.hashicorp.com/agent-enable-quit", "true"),
				csql(running(), "--quitquitquit", "--admin-port", "9192", "proj:europe-west1:reports"), dapr(running(), envVar(tokenFromSecret))),
			[]rescue.Target{quitT("istio-proxy", "istio"), quitT("vault-agent", "vault"), quitT("cloud-sql-proxy", "cloudsql"), quitT("daprd", "dapr")},
			[]string{"istio http://127.0.0.1:15020/quitquitquit", "vault http://127.0.0.1:8200/agent/v1/quit",
				"cloudsql http://localhost:9192/quitquitquit", "dapr http://127.0.0.1:3500/v1.0/shutdown"},
			quitC("sidesync-rescue-1", tokenFromSecret)),
		stuck("two Cloud SQL proxies on two admin ports", newPod(app(0),
			ctr("proxy-reports", csqlImage, running(), args("--quitquitquit", "--admin-port=9192", "proj:europe-west1:reports")),
			ctr("proxy-billing", csqlImage, running(), args("--quitquitquit", "--admin-port=9193", "proj:europe-west1:billing"))),
			[]rescue.Target{quitT("proxy-reports", "cloudsql"), quitT("proxy-billing", "cloudsql")},
			[]string{"cloudsql http://localhost:9192/quitquitquit", "cloudsql http://localhost:9193/quitquitquit"}),
		left("one sidecar with a quit endpoint, one without", newPod(app(0), istio(running()), vault(running())),
			rescue.NoQuit, "vault-agent", "--signal NAME"),
		stuck("a sidecar that already ended while another runs", newPod(app(0), istio(running()), vault(exited(0))),
			[]rescue.Target{quitT("istio-proxy", "istio")}, []string{"istio http://127.0.0.1:15020/quitquitquit"}),
		stuck("native and classic sidecars: only the classic one is a target", newPod(
			ann("linkerd.io/proxy-version", "edge-26.5.2"), ann("config.linkerd.io/proxy-enable-native-sidecar", "true"),
			initCtr("linkerd-init", "cr.l5d.io/linkerd/proxy-init:v2.4.1", exited(0)),
			initCtr("linkerd-proxy", linkerdImage, running(), always()),
			app(0), csql(running(), "--quitquitquit", "proj:europe-west1:reports")),
			[]rescue.Target{quitT("cloud-sql-proxy", "cloudsql")}, []string{"cloudsql http://localhost:9091/quitquitquit"}),
		left("native sidecars only", newPod(
			ann("sidecar.istio.io/status", `{"initContainers":["istio-validation","istio-proxy"],"containers":null}`),
			initCtr("istio-validation", istioImage, exited(0)), initCtr("istio-proxy", istioImage, running(), always()), app(0)),
			rescue.NativeOnly, "native sidecars", ""),
	}
}

// ruleCases: the pod's owner, phase and apps, one rule each.
func ruleCases() []decideCase {
	istioQuit := []string{"istio http://127.0.0.1:15020/quitquitquit"}
	istioT := []rescue.Target{quitT("istio-proxy", "istio")}
	one := []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}
	stuck := func(name string, pod *corev1.Pod) decideCase {
		return decideCase{name: name, pod: pod, verdict: rescue.Stuck, reason: "istio-proxy still runs", targets: istioT, quits: istioQuit, add: one, attempt: 1}
	}
	left := func(name string, pod *corev1.Pod, r rescue.Refusal, reason string) decideCase {
		return decideCase{name: name, pod: pod, verdict: rescue.Left, refusal: r, reason: reason}
	}
	orphan := func(p *corev1.Pod) { p.OwnerReferences = nil }
	phase := func(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	podPolicy := func(rp corev1.RestartPolicy) podOpt { return func(p *corev1.Pod) { p.Spec.RestartPolicy = rp } }
	owner := func(ref metav1.OwnerReference) podOpt {
		return func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{ref} }
	}
	// KEP-5307: a rule restarts the container in place on exit 42 (a retriable failure).
	rules := func(code int32) podOpt {
		return ctr("main", appImage, exited(code), func(c *corev1.Container) {
			c.RestartPolicy = ptr(corev1.ContainerRestartPolicyNever)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		})
	}
	withNamed := func(tt decideCase) decideCase { tt.o.Named = true; return tt }
	grace := func(tt decideCase, g time.Duration) decideCase { tt.o.Grace = g; return tt }
	graceCase := func(name string, endedAt time.Time, waited time.Duration, apps ...podOpt) decideCase {
		apps = append(apps, ctr("main", appImage, exitedAt(0, endedAt)), istio(running()))
		return decideCase{name: name, pod: newPod(apps...), o: rescue.Options{Grace: 5 * time.Minute},
			verdict: rescue.Grace, reason: "still runs", targets: istioT, waited: waited}
	}
	deleting := func(p *corev1.Pod) {
		p.DeletionTimestamp = ptr(metav1.NewTime(now))
		p.DeletionGracePeriodSeconds = ptr(int64(30))
	}
	return []decideCase{
		left("not-job: no owner", newPod(orphan, app(0), istio(running())), rescue.NotJob, "not owned by a Job"),
		withNamed(stuck("not-job but named", newPod(orphan, app(0), istio(running())))),
		left("a Job that is an owner but not the controller", newPod(owner(metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "nightly", UID: "u", Controller: ptr(false)}),
			app(0), istio(running())), rescue.NotJob, "not owned by a Job"),
		left("owned by a ReplicaSet", newPod(owner(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "u", Controller: ptr(true)}),
			app(0), istio(running())), rescue.NotJob, "not owned by a Job"),
		left("owned by another group's Job", newPod(owner(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Job", Name: "nightly", UID: "u", Controller: ptr(true)}),
			app(0), istio(running())), rescue.NotJob, "not owned by a Job"),
		withNamed(left("named, with restartPolicy Always: the app restarts", newPod(podPolicy(corev1.RestartPolicyAlways), orphan, app(0), istio(running())),
			rescue.RestartPending, "restartPolicy Always")),
		left("Pending", newPod(phase(corev1.PodPending), ctr("main", appImage, waiting("ContainerCreating")), istio(waiting("PodInitializing"))), rescue.NotRunning, "phase Pending"),
		left("Succeeded", newPod(phase(corev1.PodSucceeded), app(0), istio(exited(0))), rescue.NotRunning, "phase Succeeded"),
		left("Failed", newPod(phase(corev1.PodFailed), app(1), istio(exited(137))), rescue.NotRunning, "phase Failed"),
		left("no phase yet", newPod(phase(""), app(0), istio(running())), rescue.NotRunning, "phase unknown"),
		left("being deleted", newPod(deleting, app(0), istio(running())), rescue.Deleting, "being deleted"),
		left("the app still runs", newPod(ctr("main", appImage, running()), istio(running())), rescue.AppRunning, "app main is running"),
		left("the app has not started", newPod(ctr("main", appImage, waiting("ContainerCreating")), istio(running())), rescue.AppRunning, "main is waiting (ContainerCreating)"),
		left("no container statuses at all", newPod(app(0), istio(running()), noStatus("")), rescue.AppRunning, "main has no status yet"),
		left("no app: only a sidecar", newPod(istio(running())), rescue.NoApp, "no app container"),
		stuck("OnFailure, the app exited 0: no restart", newPod(podPolicy(corev1.RestartPolicyOnFailure), app(0), istio(running()))),
		left("OnFailure, the app exited 1: restart", newPod(podPolicy(corev1.RestartPolicyOnFailure), app(1), istio(running())),
			rescue.RestartPending, "app main exited 1 and the kubelet restarts it (restartPolicy OnFailure)"),
		stuck("Never, the app exited 1", newPod(app(1), istio(running()))),
		left("restartPolicyRules: a rule restarts on exit 42", newPod(rules(42), istio(running())), rescue.RestartPending, "restartPolicyRules[0]"),
		stuck("restartPolicyRules: no rule matches exit 3", newPod(rules(3), istio(running()))),
		left("OnFailure, the app waits in CrashLoopBackOff", newPod(podPolicy(corev1.RestartPolicyOnFailure),
			ctr("main", appImage, waiting("CrashLoopBackOff")), lastExit("main", 1), istio(running())),
			rescue.RestartPending, "app main is waiting (CrashLoopBackOff)"),
		left("two apps, one ended for good, one in CrashLoopBackOff", newPod(podPolicy(corev1.RestartPolicyOnFailure),
			ctr("export", appImage, exited(0)), ctr("main", appImage, waiting("CrashLoopBackOff")), lastExit("main", 2), istio(running())),
			rescue.RestartPending, "app main is waiting (CrashLoopBackOff)"),
		left("a sidecar waits", newPod(app(0), istio(waiting("CrashLoopBackOff"))), rescue.SidecarWaiting, "istio-proxy is waiting (CrashLoopBackOff)"),
		left("a sidecar has no status", newPod(app(0), istio(running()), noStatus("istio-proxy")), rescue.SidecarWaiting, "istio-proxy has no status yet"),
		left("OnFailure, a sidecar exited 1 and restarts", newPod(podPolicy(corev1.RestartPolicyOnFailure), app(0), istio(running()), vault(exited(1)),
			ann("vault.hashicorp.com/agent-enable-quit", "true")),
			rescue.SidecarWaiting, "vault-agent exited 1 and the kubelet restarts it"),
		// KEP-5307: a regular container's own restartPolicy; the sidecars keep the pod's.
		withNamed(left("named, restartPolicy Always, the app's own Never: the sidecar would come back",
			newPod(podPolicy(corev1.RestartPolicyAlways), orphan, ctr("main", appImage, exited(0), func(c *corev1.Container) {
				c.RestartPolicy = ptr(corev1.ContainerRestartPolicyNever)
			}), istio(running())),
			rescue.RestartPending, "istio-proxy would be restarted once ended, even after exit 0 (restartPolicy Always)")),
		left("a sidecar with its own restartPolicy Always", newPod(app(0), istio(running()), func(p *corev1.Pod) {
			p.Spec.Containers[1].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}), rescue.RestartPending, "istio-proxy would be restarted once ended"),
		func() decideCase {
			tt := left("a container named for a signal with its own restartPolicy Always", newPod(app(0), ctr("fluent-bit", fluentImage, running(), always())),
				rescue.RestartPending, "fluent-bit would be restarted once ended")
			tt.o.Signal = []string{"fluent-bit"}
			return tt
		}(),
		stuck("Argo: main and wait both ended", newPod(app(0),
			ctr("wait", "quay.io/argoproj/argoexec:v3.5.8", exited(0), command("argoexec", "wait")), istio(running()))),
		func() decideCase {
			tt := left("Argo: main ended, wait still runs", newPod(app(0),
				ctr("wait", "quay.io/argoproj/argoexec:v3.5.8", running(), command("argoexec", "wait")), istio(running())),
				rescue.Unknown, "wait is running; it is not a sidecar sidesync knows")
			tt.hint = "--signal NAME"
			return tt
		}(),
		graceCase("Grace: the app ended 2m ago, 5m of grace", now.Add(-2*time.Minute), 3*time.Minute),
		grace(stuck("Grace: the app ended 10m ago, 5m of grace", newPod(app(0), istio(running()))), 5*time.Minute),
		grace(stuck("Grace: exactly Grace ago", newPod(ctr("main", appImage, exitedAt(0, now.Add(-5*time.Minute))), istio(running()))), 5*time.Minute),
		graceCase("Grace: the last of two apps counts", now.Add(-time.Minute), 4*time.Minute, ctr("export", appImage, exitedAt(0, now.Add(-time.Hour)))),
		graceCase("Grace: the last of two apps counts, whichever comes first", now.Add(-time.Hour), 4*time.Minute, ctr("export", appImage, exitedAt(0, now.Add(-time.Minute)))),
		// The node's clock is ahead of the rescuer's: the app ended "after" now. The wait is
		// never longer than Grace.
		graceCase("Grace: the app's end is ahead of the clock", now.Add(time.Hour), 5*time.Minute),
		// An earlier rescue that ended a minute ago: its sidecars may be ending; the grace
		// runs again from its end before attempt 2.
		graceCase("Grace: from an earlier rescue's end", now.Add(-time.Hour), 4*time.Minute,
			rescuer("sidesync-rescue-1", ptr(exitedAt(0, now.Add(-time.Minute))))),
	}
}

// orchestratorCases: pods whose containers an orchestrator stops, and pods of workflow engines.
func orchestratorCases() []decideCase {
	tekton := all(label("tekton.dev/taskRun", "build-1"), label("tekton.dev/task", "build"), label("app.kubernetes.io/managed-by", "tekton-pipelines"),
		initCtr("prepare", "ghcr.io/tektoncd/pipeline/entrypoint:v0.62.0", exited(0)),
		ctr("step-build", "golang:1.26", exited(0), command("/tekton/bin/entrypoint")),
		ctr("step-push", "gcr.io/go-containerregistry/crane:v0.20", exited(0), command("/tekton/bin/entrypoint")))
	return []decideCase{
		{name: "Tekton: a Task's sidecar still runs", pod: newPod(tekton, ctr("sidecar-docker-daemon", "docker:27-dind", running())),
			verdict: rescue.Left, refusal: rescue.Orchestrator, reason: "sidecar-docker-daemon is stopped by Tekton"},
		{name: "Tekton: the Task's sidecar stopped, Istio's runs", pod: newPod(tekton, ctr("sidecar-docker-daemon", "docker:27-dind", exited(0)), istio(running())),
			verdict: rescue.Stuck, reason: "app step-build exited 0, step-push exited 0; istio-proxy still runs",
			targets: []rescue.Target{quitT("istio-proxy", "istio")}, quits: []string{"istio http://127.0.0.1:15020/quitquitquit"},
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}, attempt: 1},
		{name: "a sidecar- container without Tekton's label is an app", pod: newPod(app(0), ctr("sidecar-docker-daemon", "docker:27-dind", running())),
			verdict: rescue.Left, refusal: rescue.Unknown, reason: "sidecar-docker-daemon is running", hint: "--signal NAME"},
		{name: "Airflow: the XCom sidecar still runs", pod: newPod(ctr("base", "apache/airflow:2.10.3", exited(0)),
			ctr("airflow-xcom-sidecar", "alpine", running(), command("sh", "-c", `trap "exit 0" INT; while true; do sleep 1; done;`))),
			verdict: rescue.Left, refusal: rescue.Orchestrator, reason: "airflow-xcom-sidecar is stopped by Airflow's KubernetesPodOperator"},
		{name: "Airflow: the XCom sidecar named for a signal", o: rescue.Options{Signal: []string{"airflow-xcom-sidecar"}},
			pod:     newPod(ctr("base", "apache/airflow:2.10.3", exited(0)), ctr("airflow-xcom-sidecar", "alpine", running())),
			verdict: rescue.Stuck, reason: "airflow-xcom-sidecar still runs", targets: []rescue.Target{signalT("airflow-xcom-sidecar", "airflow-xcom")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-airflow-xcom-sidecar", "airflow-xcom-sidecar", nil, nil)}, attempt: 1},
	}
}

// attemptCases: the earlier rescues a pod holds.
func attemptCases() []decideCase {
	istioQuit := []string{"istio http://127.0.0.1:15020/quitquitquit"}
	istioT := []rescue.Target{quitT("istio-proxy", "istio")}
	ran := func(code int32) *corev1.ContainerState { st := exited(code); return &st }
	pod := func(opts ...podOpt) *corev1.Pod {
		return newPod(append([]podOpt{app(0), istio(running())}, opts...)...)
	}
	stuck := func(name string, p *corev1.Pod, n int) decideCase {
		return decideCase{name: name, pod: p, verdict: rescue.Stuck, reason: "still runs", targets: istioT, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-" + string(rune('0'+n)))}, attempt: n}
	}
	inFlight := func(name string, p *corev1.Pod, reason string) decideCase {
		return decideCase{name: name, pod: p, verdict: rescue.InFlight, reason: reason, targets: istioT}
	}
	return []decideCase{
		inFlight("attempt 1 in flight", pod(rescuer("sidesync-rescue-1", ptr(running()))), "sidesync-rescue-1 has not ended"),
		inFlight("attempt 1 added, not reported on yet", pod(rescuer("sidesync-rescue-1", nil)), "sidesync-rescue-1 has not ended"),
		inFlight("attempt 1 is being created", pod(rescuer("sidesync-rescue-1", ptr(waiting("ContainerCreating")))), "sidesync-rescue-1 has not ended"),
		// An ephemeral container whose image cannot be pulled never starts, and cannot be
		// changed: it is an attempt that ended, not one in flight for ever.
		stuck("attempt 1 never starts (ImagePullBackOff): attempt 2", pod(rescuer("sidesync-rescue-1", ptr(waiting("ImagePullBackOff")))), 2),
		stuck("attempt 1 never starts (CreateContainerConfigError): attempt 2", pod(rescuer("sidesync-rescue-1", ptr(waiting("CreateContainerConfigError")))), 2),
		func() decideCase {
			tt := inFlight("attempt 1's quit ended, its signal container runs", newPod(app(0), istio(running()), fluentBit(running()),
				rescuer("sidesync-rescue-1", ran(0)), rescuer("sidesync-rescue-1-signal-fluent-bit", ptr(running()))),
				"sidesync-rescue-1-signal-fluent-bit has not ended")
			tt.o.Signal, tt.targets = []string{"fluent-bit"}, append(istioT, signalT("fluent-bit", ""))
			return tt
		}(),
		stuck("attempt 1 ended: attempt 2", pod(rescuer("sidesync-rescue-1", ran(1))), 2),
		stuck("attempts 1 and 2 ended: attempt 3", pod(rescuer("sidesync-rescue-1", ran(1)), rescuer("sidesync-rescue-2", ran(1))), 3),
		{name: "attempts exhausted", pod: pod(rescuer("sidesync-rescue-1", ran(1)), rescuer("sidesync-rescue-2", ran(1)), rescuer("sidesync-rescue-3", ran(0))),
			verdict: rescue.Left, refusal: rescue.Exhausted, reason: "3 rescues did not end it"},
		stuck("someone's debug container is no attempt", pod(rescuer("debugger-x8k2l", ptr(running()))), 1),
		stuck("attempt 1 was called sidesync-rescue-1-2: attempt 2", pod(rescuer("sidesync-rescue-1-2", ran(1))), 2),
		{name: "a container of the pod is called sidesync-rescue-1", pod: newPod(app(0), ctr("sidesync-rescue-1", appImage, exited(0)), istio(running())),
			verdict: rescue.Stuck, reason: "still runs", targets: istioT, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1-2")}, attempt: 1},
	}
}

// signalCases: containers named in Options.Signal.
func signalCases() []decideCase {
	istioQuit := []string{"istio http://127.0.0.1:15020/quitquitquit"}
	sig := func(names ...string) rescue.Options { return rescue.Options{Signal: names} }
	shared := func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }
	podUser := func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1001)), RunAsGroup: ptr(int64(3000)), FSGroup: ptr(int64(3000))}
	}
	return []decideCase{
		{name: "an unknown container runs", pod: newPod(app(0), fluentBit(running())),
			verdict: rescue.Left, refusal: rescue.Unknown, reason: "fluent-bit is running", hint: "--signal NAME ends it with SIGTERM"},
		{name: "an unknown container named for a signal", o: sig("fluent-bit"), pod: newPod(app(0), fluentBit(running())),
			verdict: rescue.Stuck, reason: "app main exited 0; fluent-bit still runs", targets: []rescue.Target{signalT("fluent-bit", "")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-fluent-bit", "fluent-bit", ptr(int64(1000)), ptr(int64(2000)))}, attempt: 1},
		{name: "a quit and a signal, in the pod's order", o: sig("fluent-bit"), pod: newPod(app(0), istio(running()), fluentBit(running())),
			verdict: rescue.Stuck, reason: "istio-proxy, fluent-bit still run",
			targets: []rescue.Target{quitT("istio-proxy", "istio"), signalT("fluent-bit", "")}, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1"),
				signalC("sidesync-rescue-1-signal-fluent-bit", "fluent-bit", ptr(int64(1000)), ptr(int64(2000)))}, attempt: 1},
		{name: "the orchestrator's container signalled, in the pod's order", o: sig("airflow-xcom-sidecar"),
			pod:     newPod(ctr("base", "apache/airflow:2.10.3", exited(0)), ctr("airflow-xcom-sidecar", "alpine", running()), istio(running())),
			verdict: rescue.Stuck, reason: "airflow-xcom-sidecar, istio-proxy still run",
			targets: []rescue.Target{signalT("airflow-xcom-sidecar", "airflow-xcom"), quitT("istio-proxy", "istio")}, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1"),
				signalC("sidesync-rescue-1-signal-airflow-xcom-sidecar", "airflow-xcom-sidecar", nil, nil)}, attempt: 1},
		{name: "shareProcessNamespace with a signal", o: sig("fluent-bit"), pod: newPod(shared, app(0), istio(running()), fluentBit(running())),
			verdict: rescue.Left, refusal: rescue.SharedPID, reason: "shareProcessNamespace"},
		{name: "shareProcessNamespace with quits only", pod: newPod(shared, app(0), istio(running())),
			verdict: rescue.Stuck, reason: "still runs", targets: []rescue.Target{quitT("istio-proxy", "istio")}, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}, attempt: 1},
		{name: "vault with its quit API off, named for a signal", o: sig("vault-agent"), pod: newPod(app(0), vault(running())),
			verdict: rescue.Stuck, reason: "vault-agent still runs", targets: []rescue.Target{signalT("vault-agent", "vault")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-vault-agent", "vault-agent", nil, nil)}, attempt: 1},
		{name: "cloudsql v1 named for a signal", o: sig("cloudsql-proxy"), pod: newPod(app(0), ctr("cloudsql-proxy", csqlV1Image, running(), runAs(2, 2))),
			verdict: rescue.Stuck, reason: "cloudsql-proxy still runs", targets: []rescue.Target{signalT("cloudsql-proxy", "cloudsql")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-cloudsql-proxy", "cloudsql-proxy", ptr(int64(2)), ptr(int64(2)))}, attempt: 1},
		{name: "a known sidecar with a quit endpoint named for a signal is quit", o: sig("istio-proxy"), pod: newPod(app(0), istio(running())),
			verdict: rescue.Stuck, reason: "still runs", targets: []rescue.Target{quitT("istio-proxy", "istio")}, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}, attempt: 1},
		// The pod does not say whether /shutdown is on; the user, who names it, knows it is off.
		{name: "linkerd whose /shutdown may be off, named for a signal", o: sig("linkerd-proxy"), pod: newPod(app(0), linkerd(running(), runAs(2102, 2102))),
			verdict: rescue.Stuck, reason: "linkerd-proxy still runs", targets: []rescue.Target{signalT("linkerd-proxy", "linkerd")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-linkerd-proxy", "linkerd-proxy", ptr(int64(2102)), ptr(int64(2102)))}, attempt: 1},
		{name: "a signalled container running as root", o: sig("log-agent"), pod: newPod(app(0), ctr("log-agent", fluentImage, running(), runAs(0, 0))),
			verdict: rescue.Stuck, reason: "log-agent still runs", targets: []rescue.Target{signalT("log-agent", "")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-log-agent", "log-agent", ptr(int64(0)), ptr(int64(0)))}, attempt: 1},
		{name: "a signalled container runs as the pod's user", o: sig("log-agent"), pod: newPod(podUser, app(0), ctr("log-agent", fluentImage, running())),
			verdict: rescue.Stuck, reason: "log-agent still runs", targets: []rescue.Target{signalT("log-agent", "")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-log-agent", "log-agent", ptr(int64(1001)), ptr(int64(3000)))}, attempt: 1},
		{name: "a signalled container's own user beats the pod's", o: sig("log-agent"), pod: newPod(podUser, app(0),
			ctr("log-agent", fluentImage, running(), func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(65534))} })),
			verdict: rescue.Stuck, reason: "log-agent still runs", targets: []rescue.Target{signalT("log-agent", "")},
			add: []corev1.EphemeralContainer{signalC("sidesync-rescue-1-signal-log-agent", "log-agent", ptr(int64(65534)), ptr(int64(3000)))}, attempt: 1},
		{name: "a container named for a signal waits to restart", o: sig("fluent-bit"),
			pod:     newPod(app(0), istio(running()), fluentBit(waiting("CrashLoopBackOff")), lastExit("fluent-bit", 1)),
			verdict: rescue.Left, refusal: rescue.SidecarWaiting, reason: "fluent-bit is waiting (CrashLoopBackOff)"},
		{name: "a container named for a signal has ended", o: sig("fluent-bit"), pod: newPod(app(0), istio(running()), fluentBit(exited(0))),
			verdict: rescue.Stuck, reason: "istio-proxy still runs", targets: []rescue.Target{quitT("istio-proxy", "istio")}, quits: istioQuit,
			add: []corev1.EphemeralContainer{quitC("sidesync-rescue-1")}, attempt: 1},
		{name: "naming the only app for a signal leaves no app", o: sig("main"), pod: newPod(app(0), istio(running())),
			verdict: rescue.Left, refusal: rescue.NoApp, reason: "no app container"},
	}
}

// TestDecideSignalNames: the signal containers of targets with long names are DNS labels of at
// most 63 characters, distinct although the targets' names start alike, the same on every
// call (two rescuers send the same patch), and distinct from every container of the pod.
func TestDecideSignalNames(t *testing.T) {
	long := "nightly-export-log-shipper-for-the-warehouse-of-report" // 54 characters: 63 with "-us-west2"
	names := []string{long + "-eu", long + "-us", long + "-us-west2", "x"}
	pod := newPod(app(0))
	for _, n := range names {
		all(ctr(n, fluentImage, running()))(pod)
	}
	// A container already holds the name the short target's signal container would get.
	all(ctr("sidesync-rescue-1-signal-x", appImage, exited(0)))(pod)
	o := rescue.Options{Image: image, Now: now, Signal: names}
	d := rescue.Decide(pod, o)
	if d.Verdict != rescue.Stuck || len(d.Add) != len(names) {
		t.Fatalf("Decide: %s %s (%s), %d containers to add", d.Verdict, d.Refusal, d.Reason, len(d.Add))
	}
	taken := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		taken[c.Name] = true
	}
	for i, c := range d.Add {
		if err := manifest.CheckContainerName(c.Name); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if !strings.HasPrefix(c.Name, "sidesync-rescue-1-signal-") {
			t.Errorf("%s: not a signal container of attempt 1", c.Name)
		}
		if taken[c.Name] {
			t.Errorf("%s: a second container of that name", c.Name)
		}
		taken[c.Name] = true
		if c.TargetContainerName != names[i] {
			t.Errorf("%s targets %q, want %q", c.Name, c.TargetContainerName, names[i])
		}
	}
	if diff := cmp.Diff(d, rescue.Decide(pod, o)); diff != "" {
		t.Errorf("a second Decide differs (-first +second):\n%s", diff)
	}
}

func TestPlan(t *testing.T) {
	stuck := newPod(app(0), istio(running()), fluentBit(running()))
	tests := []struct {
		name string
		pod  *corev1.Pod
		o    rescue.Options
		want string
	}{
		{"stuck, quit and signal", stuck, rescue.Options{Signal: []string{"fluent-bit"}},
			"quit istio-proxy (istio); SIGTERM fluent-bit (attempt 1)"},
		{"grace", stuck, rescue.Options{Signal: []string{"fluent-bit"}, Grace: time.Hour},
			"quit istio-proxy (istio); SIGTERM fluent-bit"},
		{"signal only", newPod(app(0), fluentBit(running())), rescue.Options{Signal: []string{"fluent-bit"}},
			"SIGTERM fluent-bit (attempt 1)"},
		{"left", stuck, rescue.Options{}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Image, tt.o.Now = image, now
			if got := rescue.Decide(tt.pod, tt.o).Plan(); got != tt.want {
				t.Errorf("Plan() = %q, want %q", got, tt.want)
			}
		})
	}
}
