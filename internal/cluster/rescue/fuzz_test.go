package rescue_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// A fuzzed pod is read from bytes, one byte per choice, in the order of fuzzSpec's fields; a
// missing byte is 0. Each choice indexes a list of realistic values (fuzzNames, fuzzImages,
// ...) modulo its length, so that the fuzzer spends its time on combinations that Kubernetes
// can hold, and encode writes a readable fuzzSpec back as the seed corpus.

// fuzzSpec is a pod and the options of Decide.
type fuzzSpec struct {
	owner  byte // fuzzOwners
	flags  byte // 1 named, 2 shareProcessNamespace, 4 deleting, 8 a ghost in Signal; >>4: phase (fuzzPhases)
	policy byte // the pod's restartPolicy (fuzzPolicies)
	marks  [2]byte
	grace  byte // fuzzGraces
	now    byte // minutes after the first app could end
	inits  []fuzzContainer
	conts  []fuzzContainer
	ephs   []fuzzEphemeral
}

// fuzzContainer is a container: each field indexes its list; state is fuzzState's.
type fuzzContainer struct {
	name, image, args, env, policy, rules, sec, state, arg, signal byte
}

type fuzzEphemeral struct{ name, state, arg byte }

var (
	fuzzOwners = []func(*corev1.Pod){
		func(*corev1.Pod) {}, // newPod's: a Job, as controller
		func(p *corev1.Pod) { p.OwnerReferences[0].Controller = ptr(false) },
		func(p *corev1.Pod) { p.OwnerReferences = nil },
		func(p *corev1.Pod) {
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind = "apps/v1", "ReplicaSet"
		},
	}
	fuzzPhases   = []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, ""}
	fuzzPolicies = []string{"Never", "OnFailure", "Always", ""}
	fuzzMarks    = []struct {
		key, value string
		label      bool
	}{
		{"sidecar.istio.io/status", istioStatus, false},
		{"linkerd.io/proxy-version", "edge-26.5.2", false},
		{"config.linkerd.io/proxy-admin-shutdown", "enabled", false},
		{"vault.hashicorp.com/agent-inject-status", "injected", false},
		{"vault.hashicorp.com/agent-enable-quit", "true", false},
		{"vault.hashicorp.com/agent-cache-listener-port", "8300", false},
		{"dapr.io/enabled", "true", false},
		{"dapr.io/http-port", "3600", false},
		{"consul.hashicorp.com/connect-inject-status", "injected", false},
		{"kuma.io/sidecar-injected", "true", false},
		{"osm-proxy-uuid", "5f3e", true},
		{"tekton.dev/taskRun", "build-1", true},
		{"status.sidecar.istio.io/port", "15030", false},
		{"config.linkerd.io/proxy-enable-native-sidecar", "true", false},
		{"kuma.io/envoy-admin-port", "not-a-port", false},
		{"sidecar.istio.io/nativeSidecar", "true", false},
	}
	fuzzGraces = []time.Duration{0, time.Minute, 10 * time.Minute}
	fuzzNames  = []string{"main", "wait", "istio-proxy", "linkerd-proxy", "vault-agent", "daprd", "consul-dataplane", "kuma-sidecar",
		"envoy", "cloud-sql-proxy", "airflow-xcom-sidecar", "sidecar-docker", "step-build", "fluent-bit", "gke-gcsfuse-sidecar",
		"sidesync-rescue-1", "sidesync-rescue-1-2", "sidesync-rescue-1-signal-fluent-bit",
		"nightly-export-log-shipper-for-the-warehouse-of-report-eu-west1", "nightly-export-log-shipper-for-the-warehouse-of-report-us-east1",
		"istio-init", "Bad_Name", "export"}
	fuzzImages = []string{appImage, istioImage, linkerdImage, vaultImage, daprImage, csqlImage, csqlV1Image,
		"840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29.6.0-prod", fluentImage, "docker:27-dind", "hashicorp/consul-dataplane:1.6.1"}
	fuzzArgs = [][]string{nil, {"--quitquitquit"}, {"--quitquitquit", "--admin-port=9192"}, {"--quitquitquit", "--admin-port", "9193"},
		{"--quitquitquit=false"}, {"--admin-port=notaport", "--quitquitquit"}, {"--health-check", "--http-port", "9190"}}
	fuzzEnvs = [][]corev1.EnvVar{nil,
		{{Name: "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", Value: "true"}},
		{{Name: "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", Value: "false"}},
		{{Name: "DAPR_API_TOKEN", Value: "s3cret"}},
		{{Name: "DAPR_API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "dapr"}, Key: "token"}}}},
		{{Name: "CSQL_PROXY_QUITQUITQUIT", Value: "true"}, {Name: "CSQL_PROXY_ADMIN_PORT", Value: "9300"}},
		{{Name: "CSQL_PROXY_QUITQUITQUIT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}, Key: "quit"}}}},
	}
	fuzzContainerPolicies = []*corev1.ContainerRestartPolicy{nil, ptr(corev1.ContainerRestartPolicyNever),
		ptr(corev1.ContainerRestartPolicyOnFailure), ptr(corev1.ContainerRestartPolicyAlways)}
	fuzzRules = [][]corev1.ContainerRestartRule{nil,
		{{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}},
		{{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}},
		{{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}},
		{{Action: "Explode", ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{1}}}},
		{{Action: corev1.ContainerRestartRuleActionRestart}},
	}
	fuzzSecurity = []*corev1.SecurityContext{nil, {RunAsUser: ptr(int64(0))}, {RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000))}, {RunAsGroup: ptr(int64(3000))}}
	fuzzCodes    = []int32{0, 1, 2, 42, 137, 143}
	fuzzWaits    = []string{"ContainerCreating", "CrashLoopBackOff", "ImagePullBackOff", ""}
	fuzzEphNames = []string{"sidesync-rescue-1", "sidesync-rescue-2", "sidesync-rescue-3", "sidesync-rescue-1-signal-fluent-bit",
		"debugger-x8k2l", "sidesync-rescue-x", "sidesync-rescue-0", "sidesync-rescue-1-2", "sidesync-rescue-4"}
)

// The states of a container: its status, or none.
const (
	fuzzRunning = iota
	fuzzEnded   // exited fuzzCodes[arg], arg/6 minutes after the first app could end
	fuzzWaiting // waiting for fuzzWaits[arg]
	fuzzRestart // waiting (fuzzWaits[arg]) after exiting fuzzCodes[arg]
	fuzzNoStatus
	fuzzStates
)

func pick[T any](list []T, b byte) T { return list[int(b)%len(list)] }

// decodeFuzz reads a fuzzSpec from bytes.
func decodeFuzz(data []byte) fuzzSpec {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	s := fuzzSpec{owner: next(), flags: next(), policy: next(), marks: [2]byte{next(), next()}, grace: next(), now: next()}
	container := func() fuzzContainer {
		return fuzzContainer{next(), next(), next(), next(), next(), next(), next(), next(), next(), next()}
	}
	for n := next() % 3; n > 0; n-- {
		s.inits = append(s.inits, container())
	}
	for n := 1 + next()%6; n > 0; n-- {
		s.conts = append(s.conts, container())
	}
	for n := next() % 4; n > 0; n-- {
		s.ephs = append(s.ephs, fuzzEphemeral{next(), next(), next()})
	}
	return s
}

// encode writes s as decodeFuzz reads it.
func (s fuzzSpec) encode() []byte {
	b := []byte{s.owner, s.flags, s.policy, s.marks[0], s.marks[1], s.grace, s.now, byte(len(s.inits))}
	for _, c := range s.inits {
		b = append(b, c.name, c.image, c.args, c.env, c.policy, c.rules, c.sec, c.state, c.arg, c.signal)
	}
	b = append(b, byte(len(s.conts)-1))
	for _, c := range s.conts {
		b = append(b, c.name, c.image, c.args, c.env, c.policy, c.rules, c.sec, c.state, c.arg, c.signal)
	}
	b = append(b, byte(len(s.ephs)))
	for _, e := range s.ephs {
		b = append(b, e.name, e.state, e.arg)
	}
	return b
}

// pod builds the pod and the options that s describes. Names already taken are skipped, as the
// API server refuses them.
func (s fuzzSpec) pod() (*corev1.Pod, rescue.Options) {
	p := newPod(pick(fuzzOwners, s.owner))
	o := rescue.Options{Image: image, Named: s.flags&1 != 0, Grace: pick(fuzzGraces, s.grace), Now: ended.Add(time.Duration(s.now) * time.Minute)}
	p.Spec.RestartPolicy = corev1.RestartPolicy(pick(fuzzPolicies, s.policy))
	p.Status.Phase = pick(fuzzPhases, s.flags>>4)
	if s.flags&2 != 0 {
		p.Spec.ShareProcessNamespace = ptr(true)
	}
	if s.flags&4 != 0 {
		p.DeletionTimestamp = ptr(metav1.NewTime(now))
	}
	if s.flags&8 != 0 {
		o.Signal = append(o.Signal, "ghost")
	}
	marks := int(s.marks[0]) | int(s.marks[1])<<8
	for i, m := range fuzzMarks {
		switch {
		case marks&(1<<i) == 0:
		case m.label:
			label(m.key, m.value)(p)
		default:
			ann(m.key, m.value)(p)
		}
	}
	taken := map[string]bool{}
	for i, list := range [][]fuzzContainer{s.inits, s.conts} {
		for _, c := range list {
			name := pick(fuzzNames, c.name)
			if taken[name] {
				continue
			}
			taken[name] = true
			add := ctr
			if i == 0 {
				add = initCtr
			}
			add(name, pick(fuzzImages, c.image), c.status(), c.opts()...)(p)
			if c.state%fuzzStates == fuzzRestart {
				lastExit(name, pick(fuzzCodes, c.arg))(p)
			}
			if c.state%fuzzStates == fuzzNoStatus {
				noStatus(name)(p)
				p.Status.InitContainerStatuses = slices.DeleteFunc(p.Status.InitContainerStatuses, func(st corev1.ContainerStatus) bool { return st.Name == name })
			}
			if c.signal&1 != 0 {
				o.Signal = append(o.Signal, name)
			}
		}
	}
	for _, e := range s.ephs {
		name := pick(fuzzEphNames, e.name)
		if taken[name] {
			continue
		}
		taken[name] = true
		st := fuzzContainer{state: e.state, arg: e.arg}.status()
		if e.state%fuzzStates == fuzzNoStatus {
			rescuer(name, nil)(p)
		} else {
			rescuer(name, &st)(p)
		}
	}
	return p, o
}

func (c fuzzContainer) opts() []cOpt {
	return []cOpt{func(k *corev1.Container) {
		k.Args = pick(fuzzArgs, c.args)
		k.Env = pick(fuzzEnvs, c.env)
		k.RestartPolicy = pick(fuzzContainerPolicies, c.policy)
		k.RestartPolicyRules = pick(fuzzRules, c.rules)
		k.SecurityContext = pick(fuzzSecurity, c.sec)
	}}
}

func (c fuzzContainer) status() corev1.ContainerState {
	switch c.state % fuzzStates {
	case fuzzRunning:
		return running()
	case fuzzEnded:
		return exitedAt(pick(fuzzCodes, c.arg), ended.Add(time.Duration(c.arg/6)*time.Minute))
	}
	return waiting(pick(fuzzWaits, c.arg))
}

// fuzzSeeds are pods of every verdict, and of the refusals that need several containers.
func fuzzSeeds() map[string]fuzzSpec {
	const (
		main, istioProxy, linkerdProxy, vaultAgent, daprd = 0, 2, 3, 4, 5
		csqlProxy, xcom, fluent, rescue1, long1, long2    = 9, 10, 13, 15, 18, 19
		isIstio, isLinkerd, isCSQL, isFluent, isDapr      = 1, 2, 5, 8, 4
	)
	app := fuzzContainer{name: main, state: fuzzEnded}
	sidecar := func(name, image byte) fuzzContainer {
		return fuzzContainer{name: name, image: image, state: fuzzRunning}
	}
	signalled := func(c fuzzContainer) fuzzContainer { c.signal = 1; return c }
	istio := sidecar(istioProxy, isIstio)
	return map[string]fuzzSpec{
		"istio stuck":                     {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}},
		"several sidecars":                {marks: [2]byte{1<<0 | 1<<3 | 1<<4 | 1<<6, 0}, conts: []fuzzContainer{app, istio, sidecar(vaultAgent, 3), {name: daprd, image: isDapr, env: 3}, {name: csqlProxy, image: isCSQL, args: 2}}},
		"signal and quit":                 {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio, signalled(sidecar(fluent, isFluent))}},
		"long signal names":               {conts: []fuzzContainer{app, signalled(sidecar(long1, isFluent)), signalled(sidecar(long2, isFluent))}},
		"a container named like a rescue": {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, {name: rescue1, state: fuzzEnded}, istio}},
		"in flight":                       {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}, ephs: []fuzzEphemeral{{name: 0, state: fuzzRunning}}},
		"attempt 2":                       {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}, ephs: []fuzzEphemeral{{name: 0, state: fuzzEnded, arg: 1}}},
		"exhausted":                       {marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}, ephs: []fuzzEphemeral{{0, fuzzEnded, 1}, {1, fuzzEnded, 1}, {2, fuzzEnded, 1}}},
		"grace":                           {grace: 2, now: 1, marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}},
		"crash loop":                      {policy: 1, marks: [2]byte{1, 0}, conts: []fuzzContainer{{name: main, state: fuzzRestart, arg: 1}, istio}},
		"restart rule":                    {marks: [2]byte{1, 0}, conts: []fuzzContainer{{name: main, state: fuzzEnded, arg: 3, policy: 1, rules: 1}, istio}},
		"linkerd may be off":              {marks: [2]byte{1 << 1, 0}, conts: []fuzzContainer{app, signalled(sidecar(linkerdProxy, isLinkerd))}},
		"airflow":                         {conts: []fuzzContainer{app, sidecar(xcom, 0)}},
		"native only":                     {marks: [2]byte{1 << 1, 1 << 5}, inits: []fuzzContainer{{name: linkerdProxy, image: isLinkerd, policy: 3}}, conts: []fuzzContainer{app}},
		"shared PID":                      {flags: 2, conts: []fuzzContainer{app, signalled(sidecar(fluent, isFluent))}},
		"not a job, named":                {owner: 2, flags: 1, marks: [2]byte{1, 0}, conts: []fuzzContainer{app, istio}},
		"no status":                       {marks: [2]byte{1, 0}, conts: []fuzzContainer{{name: main, state: fuzzNoStatus}, istio}},
	}
}

func FuzzDecide(f *testing.F) {
	seeds := fuzzSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		f.Add(seeds[name].encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, o := decodeFuzz(data).pod()
		checkInvariants(t, pod, o)
	})
}

// TestFuzzSeeds: the seeds reach the verdicts they are named for, so that plain go test checks
// the invariants of FuzzDecide on each.
func TestFuzzSeeds(t *testing.T) {
	want := map[string]string{
		"istio stuck": "stuck", "several sidecars": "stuck", "signal and quit": "stuck", "long signal names": "stuck",
		"a container named like a rescue": "stuck", "in flight": "in-flight", "attempt 2": "stuck", "exhausted": "left attempts",
		"grace": "grace", "crash loop": "left restart-pending", "restart rule": "left restart-pending", "linkerd may be off": "stuck",
		"airflow": "left orchestrator", "native only": "left native-only", "shared PID": "left shared-pid", "not a job, named": "stuck",
		"no status": "left app-running",
	}
	for name, s := range fuzzSeeds() {
		t.Run(name, func(t *testing.T) {
			pod, o := decodeFuzz(s.encode()).pod()
			d := checkInvariants(t, pod, o)
			if got := strings.TrimSpace(string(d.Verdict) + " " + string(d.Refusal)); got != want[name] {
				t.Errorf("%s %s (%s), want %s", d.Verdict, d.Refusal, d.Reason, want[name])
			}
		})
	}
}

// checkInvariants decides pod and checks what holds of every decision.
func checkInvariants(t *testing.T, pod *corev1.Pod, o rescue.Options) rescue.Decision {
	t.Helper()
	before := pod.DeepCopy()
	d := rescue.Decide(pod, o)
	if !reflect.DeepEqual(before, pod) {
		t.Fatal("Decide changed the pod")
	}
	if again := rescue.Decide(pod, o); !reflect.DeepEqual(d, again) {
		t.Fatalf("Decide is not deterministic:\n%+v\n%+v", d, again)
	}
	switch d.Verdict {
	case rescue.Left:
		if d.Refusal == "" || len(d.Add) > 0 || d.Attempt != 0 || len(d.Targets) > 0 {
			t.Fatalf("Left with refusal %q, %d containers to add, attempt %d, %d targets", d.Refusal, len(d.Add), d.Attempt, len(d.Targets))
		}
	case rescue.InFlight, rescue.Grace:
		if d.Refusal != "" || len(d.Add) > 0 || d.Attempt != 0 || len(d.Targets) == 0 {
			t.Fatalf("%s with refusal %q, %d containers to add, attempt %d, %d targets", d.Verdict, d.Refusal, len(d.Add), d.Attempt, len(d.Targets))
		}
		if d.Verdict == rescue.Grace && (d.Waited <= 0 || d.Waited > o.Grace) {
			t.Fatalf("Grace: waits %v of %v", d.Waited, o.Grace)
		}
	case rescue.Stuck:
		checkStuck(t, pod, o, d)
	default:
		t.Fatalf("verdict %q", d.Verdict)
	}
	if r := rescue.Outcome(pod, d); r.Failed != "" {
		t.Fatalf("Outcome on the pod decided: failed (%s)", r.Failed)
	}
	return d
}

// checkStuck checks a Stuck decision against the pod, read on its own: apps, targets, and the
// containers to add.
func checkStuck(t *testing.T, pod *corev1.Pod, o rescue.Options, d rescue.Decision) {
	t.Helper()
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		t.Fatalf("Stuck in phase %q, deleting %v", pod.Status.Phase, pod.DeletionTimestamp != nil)
	}
	if _, job := rescue.JobOf(pod); !job && !o.Named {
		t.Fatal("Stuck, neither a Job's nor named")
	}
	if d.Refusal != "" || d.Attempt < 1 || d.Attempt > rescue.MaxAttempts || len(d.Add) == 0 || len(d.Targets) == 0 {
		t.Fatalf("Stuck with refusal %q, attempt %d, %d containers to add, %d targets", d.Refusal, d.Attempt, len(d.Add), len(d.Targets))
	}
	view, sorted := sortPod(t, pod)
	statuses := map[string]corev1.ContainerStatus{}
	for _, st := range pod.Status.ContainerStatuses {
		statuses[st.Name] = st
	}
	apps := 0
	for _, c := range sorted.Apps {
		if slices.Contains(o.Signal, c.Name) {
			continue
		}
		apps++
		st, ok := statuses[c.Name]
		if !ok || st.State.Terminated == nil {
			t.Fatalf("Stuck, and app %s has not ended", c.Name)
		}
		spec, err := restart.Effective(c.RestartPolicy, view.RestartPolicy, c.RestartPolicyRules)
		if err != nil {
			t.Fatalf("Stuck, and app %s's restart cannot be read: %v", c.Name, err)
		}
		if restarts, why := spec.Restarts(int(st.State.Terminated.ExitCode)); restarts {
			t.Fatalf("Stuck, and app %s restarts (%s)", c.Name, why)
		}
	}
	if apps == 0 || len(d.Apps) != apps {
		t.Fatalf("Stuck with %d apps, %d ended", apps, len(d.Apps))
	}

	// Every regular container that runs is a target, in the pod's order; no target is anything
	// else.
	var runs, targets, quits, signals []string
	for _, c := range pod.Spec.Containers {
		if st := statuses[c.Name]; st.State.Running != nil {
			runs = append(runs, c.Name)
		}
	}
	for _, tg := range d.Targets {
		targets = append(targets, tg.Container)
		c := view.Container(tg.Container)
		if spec, err := restart.Effective(c.RestartPolicy, view.RestartPolicy, c.RestartPolicyRules); err != nil {
			t.Fatalf("target %s's restart cannot be read: %v", tg.Container, err)
		} else if restarts, why := spec.Restarts(0); restarts {
			t.Fatalf("target %s comes back after exit 0 (%s)", tg.Container, why)
		}
		if tg.Signal {
			signals = append(signals, tg.Container)
			if !slices.Contains(o.Signal, tg.Container) {
				t.Fatalf("target %s is signalled without being named", tg.Container)
			}
		} else {
			quits = append(quits, tg.Spec)
		}
	}
	if !slices.Equal(runs, targets) {
		t.Fatalf("Stuck: running %q, targets %q", runs, targets)
	}
	if shared := pod.Spec.ShareProcessNamespace; len(signals) > 0 && shared != nil && *shared {
		t.Fatal("Stuck with a signal in a pod with one PID namespace")
	}
	checkAdd(t, pod, d, quits, signals)
}

// neverStarts reports whether a waiting container's reason says the kubelet cannot start it
// without a change to the pod, which an ephemeral container never gets.
func neverStarts(st *corev1.ContainerStatus) bool {
	w := st.State.Waiting
	return w != nil && (strings.Contains(w.Reason, "Image") || strings.HasSuffix(w.Reason, "Error"))
}

// checkAdd checks the containers of a Stuck decision: names, commands, security.
func checkAdd(t *testing.T, pod *corev1.Pod, d rescue.Decision, quits, signals []string) {
	t.Helper()
	taken := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			taken[c.Name] = true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		taken[c.Name] = true
		// A rescue container that never starts (its image cannot be pulled) counts as ended.
		if st := ephemeralStatus(pod, c.Name); attemptOf(c.Name) > 0 && (st == nil || st.State.Terminated == nil && !neverStarts(st)) {
			t.Fatalf("Stuck while %s has not ended", c.Name)
		}
	}
	var gotQuits, gotSignals []string
	for _, c := range d.Add {
		if err := manifest.CheckContainerName(c.Name); err != nil {
			t.Fatalf("container to add: %v", err)
		}
		if taken[c.Name] {
			t.Fatalf("container to add %s: the pod has one of that name", c.Name)
		}
		taken[c.Name] = true
		if !strings.HasPrefix(c.Name, rescue.ContainerPrefix) || attemptOf(c.Name) != d.Attempt {
			t.Fatalf("container to add %s: not of attempt %d", c.Name, d.Attempt)
		}
		checkRestricted(t, c)
		switch {
		case c.TargetContainerName != "":
			if !slices.Equal(c.Command, []string{"/sidesync", "signal", "TERM"}) {
				t.Fatalf("%s: command %q", c.Name, c.Command)
			}
			gotSignals = append(gotSignals, c.TargetContainerName)
		case len(c.Command) > 2 && slices.Equal(c.Command[:2], []string{"/sidesync", "quit"}):
			for i := 2; i < len(c.Command); i += 2 {
				if c.Command[i] != "--sidecar" || i+1 == len(c.Command) {
					t.Fatalf("%s: command %q", c.Name, c.Command)
				}
				if _, err := config.ParseSidecars(c.Command[i+1], func(string) (string, bool) { return "", false }); err != nil {
					t.Fatalf("%s: the pod binary refuses --sidecar %q: %v", c.Name, c.Command[i+1], err)
				}
				gotQuits = append(gotQuits, c.Command[i+1])
			}
		default:
			t.Fatalf("%s: command %q", c.Name, c.Command)
		}
	}
	if !slices.Equal(quits, gotQuits) || !slices.Equal(signals, gotSignals) {
		t.Fatalf("targets quit %q and signalled %q; the containers quit %q and signal %q", quits, signals, gotQuits, gotSignals)
	}
	patch, err := rescue.Patch(d.Add)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(patch) {
		t.Fatalf("Patch: %s", patch)
	}
}

// checkRestricted checks what Pod Security "restricted" asks of a container.
func checkRestricted(t *testing.T, c corev1.EphemeralContainer) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("%s: no securityContext", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0,
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault,
		sc.Privileged != nil && *sc.Privileged:
		t.Fatalf("%s: securityContext %s", c.Name, sc.String())
	case (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) && (sc.RunAsUser == nil || *sc.RunAsUser != 0):
		t.Fatalf("%s: may run as root without saying so: %s", c.Name, sc.String())
	}
}

func ephemeralStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i, st := range pod.Status.EphemeralContainerStatuses {
		if st.Name == name {
			return &pod.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// sortPod sorts the pod's containers with the catalog, as every reader of a pod does.
func sortPod(t *testing.T, pod *corev1.Pod) (*manifest.PodView, *catalog.Pod) {
	t.Helper()
	obj, err := manifest.ObjectOf(pod)
	if err != nil {
		t.Fatal(err)
	}
	view, err := manifest.ReadPod(obj, "")
	if err != nil {
		t.Fatalf("Stuck, and the pod cannot be read: %v", err)
	}
	return view, catalog.Sort(view, catalog.Options{})
}

// attemptOf is the attempt a rescue container's name carries ("sidesync-rescue-2-signal-x" is
// of attempt 2), or 0 for a name that carries none ("sidesync-rescue-x", someone else's).
func attemptOf(name string) int {
	rest, ok := strings.CutPrefix(name, rescue.ContainerPrefix)
	num, _, _ := strings.Cut(rest, "-")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		return 0
	}
	return n
}
