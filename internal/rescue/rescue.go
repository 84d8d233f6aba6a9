// Package rescue decides whether a running pod is stuck on its sidecars, and how to free it:
// every app container has ended for good, and what still runs is sidecars that the catalog knows
// (a mesh's proxy, Vault Agent, the Cloud SQL Auth Proxy, ...), which nothing tells to quit. The
// cure is an ephemeral container, in the pod's network namespace, that runs the sidesync image's
// `sidesync quit` with each sidecar's endpoints as the pod's spec sets them: every sidecar then
// exits through its own quit protocol, as it would at the end of a wrapped command, and the pod
// completes. `kubectl sidesync rescue` and the sidesync-rescuer controller both ask Decide, so
// that they agree on which pods are stuck; neither touches a pod Decide leaves alone.
//
// It is pure: a pod in, a decision out, no I/O. docs/RESCUE.md gives the rules, with the
// Kubernetes facts they rest on.
package rescue

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidesync/sidesync/internal/catalog"
	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/contract"
	"github.com/sidesync/sidesync/internal/manifest"
	"github.com/sidesync/sidesync/internal/restart"
)

// ContainerPrefix starts the name of every ephemeral container a rescue adds:
// "sidesync-rescue-1" quits the sidecars, "sidesync-rescue-1-signal-NAME" signals NAME. The
// number counts the attempts on the pod.
const ContainerPrefix = "sidesync-rescue-"

// NamespaceLabel, set to Enabled on a namespace, lets the sidesync-rescuer controller rescue
// the pods there; it touches no other namespace.
const (
	NamespaceLabel = "sidesync.io/rescue"
	Enabled        = "enabled"
)

// MaxAttempts is how many rescues a pod gets: an ephemeral container can be neither removed nor
// run again, so each attempt adds one; after this many the pod is left, and why is reported.
const MaxAttempts = 3

// QuitCommand is the command of a quit container, before its --sidecar flags.
func QuitCommand() []string { return []string{contract.ImageBinary, "quit"} }

// SignalCommand is the command of a signal container, before the signal's name.
func SignalCommand() []string { return []string{contract.ImageBinary, "signal"} }

// Verdict is what Decide says of a pod.
type Verdict string

const (
	// Stuck: every app has ended for good, and only sidecars that can be ended run. Rescue adds
	// the decision's containers.
	Stuck Verdict = "stuck"
	// InFlight: a rescue's container is in the pod and has not ended: nothing is added.
	InFlight Verdict = "in-flight"
	// Grace: stuck, but its last app ended less than Options.Grace ago.
	Grace Verdict = "grace"
	// Left: not stuck, or stuck on something rescue must not end; Refusal says which.
	Left Verdict = "left"
)

// Refusal is why a pod is left alone: a short, stable word, for the controller's metrics and
// for scripts.
type Refusal string

// Refusals.
const (
	NotRunning     Refusal = "not-running"      // Pending, Succeeded or Failed
	Deleting       Refusal = "deleting"         // being deleted: the kubelet is stopping it
	NotJob         Refusal = "not-job"          // no Job owns it, and it was not named
	NoApp          Refusal = "no-app"           // no container is an app
	AppRunning     Refusal = "app-running"      // an app has not ended
	RestartPending Refusal = "restart-pending"  // an app ended and the kubelet restarts it
	Unknown        Refusal = "unknown-running"  // a container the catalog does not know runs
	Orchestrator   Refusal = "orchestrator"     // a container its orchestrator stops runs
	SidecarWaiting Refusal = "sidecar-waiting"  // a sidecar is neither running nor ended
	NoQuit         Refusal = "no-quit-endpoint" // a sidecar runs that has no quit endpoint on
	NativeOnly     Refusal = "native-only"      // only native sidecars run: the kubelet stops them
	SharedPID      Refusal = "shared-pid"       // a signal is asked for in a pod with one PID namespace
	Exhausted      Refusal = "attempts"         // MaxAttempts rescues did not end it
)

// Options are what Decide needs besides the pod.
type Options struct {
	// Image is the sidesync image the ephemeral containers run.
	Image string
	// Named: the user named the pod, which is then a candidate whoever owns it; otherwise only
	// a pod a Job owns is.
	Named bool
	// Signal names the running containers that may be ended by a signal (SIGTERM) when they have
	// no quit endpoint: a log shipper, a sidecar whose quit API is off. Only with them is a
	// signal sent, through an ephemeral container in the container's own PID namespace.
	Signal []string
	// Now and Grace: a pod whose last app ended less than Grace before Now is Grace, not Stuck
	// (the controller gives the sidecars' own shutdown a chance). Zero Grace: no wait.
	Now   time.Time
	Grace time.Duration
}

// App is an app container of the pod and how it ended.
type App struct {
	Name     string
	ExitCode int32 // when it ended
	Ended    time.Time
}

// Target is a running sidecar that the rescue ends.
type Target struct {
	Container string
	// Profile is the catalog's name for it ("istio"); "" for a container named in
	// Options.Signal that the catalog does not know.
	Profile string
	// Spec is its --sidecar value for `sidesync quit`, with the ports the pod sets
	// ("vault:quit-port=8201"); "" for a signalled container.
	Spec string
	// Signal: ended by SIGTERM, not through a quit endpoint.
	Signal bool
}

// Decision is what Decide says of one pod.
type Decision struct {
	Namespace, Name string
	Verdict         Verdict
	// Refusal is why it is Left; "" otherwise.
	Refusal Refusal
	// Reason is one line for a human: why it is stuck, or why it is left.
	Reason string
	// Hint, when not empty, says what would end it (a flag of rescue, a setting of the sidecar).
	Hint string
	// Apps are the pod's app containers.
	Apps []App
	// Targets are the sidecars that the rescue ends, in the pod's order.
	Targets []Target
	// Attempt is the number of this rescue (1 for the first); 0 when nothing is added.
	Attempt int
	// Add are the ephemeral containers to add, for Stuck: one that quits every sidecar with a
	// quit endpoint, and one per signalled container.
	Add []corev1.EphemeralContainer
	// Waited is, for Grace, how long until the pod is Stuck.
	Waited time.Duration
}

// Key is "namespace/name".
func (d Decision) Key() string { return d.Namespace + "/" + d.Name }

// Plan is the decision's plan in one line: "quit istio-proxy (istio) with sidesync-rescue-1".
func (d Decision) Plan() string {
	if d.Verdict != Stuck && d.Verdict != Grace {
		return "-"
	}
	var quit, signal []string
	for _, t := range d.Targets {
		if t.Signal {
			signal = append(signal, t.Container)
		} else {
			quit = append(quit, t.Container+" ("+t.Profile+")")
		}
	}
	var parts []string
	if len(quit) > 0 {
		parts = append(parts, "quit "+strings.Join(quit, ", "))
	}
	if len(signal) > 0 {
		parts = append(parts, "SIGTERM "+strings.Join(signal, ", "))
	}
	plan := strings.Join(parts, "; ")
	if d.Verdict == Stuck {
		plan += " (attempt " + strconv.Itoa(d.Attempt) + ")"
	}
	return plan
}

// left is a Left decision.
func (d Decision) left(r Refusal, format string, a ...any) Decision {
	d.Verdict, d.Refusal, d.Reason = Left, r, fmt.Sprintf(format, a...)
	d.Targets, d.Add, d.Attempt = nil, nil, 0
	return d
}

// Decide says whether pod is stuck on its sidecars and, if so, which ephemeral containers end
// them. It reads the pod's spec with the catalog (catalog.Sort, as detection, inject and lint
// do) and its status: the containers' states, and the restart rules (internal/restart) that
// say whether an ended app restarts in place.
func Decide(pod *corev1.Pod, o Options) Decision {
	d := Decision{Namespace: pod.Namespace, Name: pod.Name}
	switch {
	case pod.DeletionTimestamp != nil:
		return d.left(Deleting, "being deleted")
	case pod.Status.Phase != corev1.PodRunning:
		return d.left(NotRunning, "phase %s", cmp.Or(string(pod.Status.Phase), "unknown"))
	case !o.Named && jobOf(pod) == "":
		return d.left(NotJob, "not owned by a Job (name it to rescue it)")
	}
	view, err := podView(pod)
	if err != nil {
		return d.left(Unknown, "cannot read its spec: %v", err)
	}
	sorted := catalog.Sort(view, catalog.Options{})
	statuses := map[string]*corev1.ContainerStatus{}
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}

	// The apps: every one ended, for good. A container that the catalog does not know is an
	// app to it, unless the user named it for a signal: then it is a sidecar the user knows.
	var apps, named []*manifest.Container
	for _, c := range sorted.Apps {
		if slices.Contains(o.Signal, c.Name) {
			named = append(named, c)
		} else {
			apps = append(apps, c)
		}
	}
	if len(apps) == 0 {
		return d.left(NoApp, "no app container: every container is a sidecar")
	}
	var lastEnd time.Time
	var runningApps []string
	for _, c := range apps {
		st := statuses[c.Name]
		if st == nil || st.State.Terminated == nil {
			runningApps = append(runningApps, c.Name+" "+stateText(st))
			continue
		}
		term := st.State.Terminated
		spec, err := restart.Effective(c.RestartPolicy, view.RestartPolicy, c.RestartPolicyRules)
		if err != nil {
			return d.left(RestartPending, "app %s: cannot tell whether it restarts: %v", c.Name, err)
		}
		if restarts, why := spec.Restarts(int(term.ExitCode)); restarts {
			return d.left(RestartPending, "app %s exited %d and the kubelet restarts it (%s)", c.Name, term.ExitCode, why)
		}
		d.Apps = append(d.Apps, App{Name: c.Name, ExitCode: term.ExitCode, Ended: term.FinishedAt.Time})
		lastEnd = later(lastEnd, term.FinishedAt.Time)
	}
	switch {
	case len(runningApps) > 0 && len(d.Apps) == 0:
		return d.left(AppRunning, "app %s", strings.Join(runningApps, ", "))
	case len(runningApps) > 0:
		// Some app has ended and a container no row knows has not: an app, or a sidecar the
		// catalog does not know. Either way it is not rescue's to end unless the user says so.
		d = d.left(Unknown, "%s; it is not a sidecar sidesync knows (an app still at work, or an unknown sidecar)", strings.Join(runningApps, ", "))
		d.Hint = "if it is a sidecar, --signal NAME ends it with SIGTERM"
		return d
	}
	for _, c := range named {
		if st := statuses[c.Name]; st != nil && st.State.Running != nil {
			d.Targets = append(d.Targets, Target{Container: c.Name, Signal: true})
		}
	}

	// What still runs: classic sidecars the catalog knows, or containers named for a signal.
	var hint []string
	natives := 0
	for _, s := range sorted.Sidecars {
		if s.Container == nil {
			continue
		}
		if s.Native {
			natives++
			continue
		}
		st := statuses[s.Container.Name]
		switch {
		case st != nil && st.State.Terminated != nil:
			continue
		case st == nil || st.State.Running == nil:
			return d.left(SidecarWaiting, "sidecar %s %s", s.Container.Name, stateText(st))
		}
		switch {
		case s.Profile.Quit != nil:
			t := Target{Container: s.Container.Name, Profile: s.Entry.Name, Spec: config.FormatSidecar(s.Entry.Name, s.Profile)}
			d.Targets = append(d.Targets, t)
		case slices.Contains(o.Signal, s.Container.Name):
			d.Targets = append(d.Targets, Target{Container: s.Container.Name, Profile: s.Entry.Name, Signal: true})
		default:
			why := "it has no quit endpoint"
			if s.QuitOff != nil {
				why = "its " + s.QuitOff.What + " is off"
			}
			hint = append(hint, fmt.Sprintf("%s (%s): %s; --signal %s sends it SIGTERM", s.Container.Name, s.Entry.Title, why, s.Container.Name))
		}
	}
	for _, st := range sorted.Stopped {
		if s := statuses[st.Container.Name]; s != nil && s.State.Terminated == nil {
			if slices.Contains(o.Signal, st.Container.Name) {
				d.Targets = append(d.Targets, Target{Container: st.Container.Name, Profile: st.Entry.Name, Signal: true})
				continue
			}
			return d.left(Orchestrator, "container %s is stopped by %s", st.Container.Name, st.Entry.StoppedBy)
		}
	}
	if len(hint) > 0 {
		d = d.left(NoQuit, "%s", strings.Join(hint, "; "))
		d.Hint = "--signal NAME (the container's own SIGTERM handling decides its exit code)"
		return d
	}
	if len(d.Targets) == 0 {
		if natives > 0 {
			return d.left(NativeOnly, "every app has ended and only native sidecars run: the kubelet stops them")
		}
		return d.left(NotRunning, "every container has ended")
	}
	if slices.ContainsFunc(d.Targets, func(t Target) bool { return t.Signal }) && shareProcessNamespace(pod) {
		return d.left(SharedPID, "the pod shares one PID namespace (shareProcessNamespace), so a signal cannot reach one container's PID 1")
	}

	// Earlier rescues.
	attempts, running := earlier(pod)
	switch {
	case running != "":
		d.Verdict, d.Reason = InFlight, "rescue container "+running+" has not ended yet"
		return d
	case attempts >= MaxAttempts:
		return d.left(Exhausted, "%d rescues did not end it: see the logs of its %s containers", attempts, ContainerPrefix+"N")
	}
	d.Reason = stuckReason(d.Apps, d.Targets)
	if o.Grace > 0 && !lastEnd.IsZero() && o.Now.Sub(lastEnd) < o.Grace {
		d.Verdict, d.Waited = Grace, o.Grace-o.Now.Sub(lastEnd)
		return d
	}
	d.Verdict, d.Attempt = Stuck, attempts+1
	d.Add = containers(pod, d.Targets, d.Attempt, o.Image)
	return d
}

// stuckReason says why a pod is stuck: "app main exited 0 1m ago; istio-proxy still runs".
func stuckReason(apps []App, targets []Target) string {
	var ended []string
	for _, a := range apps {
		ended = append(ended, fmt.Sprintf("%s exited %d", a.Name, a.ExitCode))
	}
	var runs []string
	for _, t := range targets {
		runs = append(runs, t.Container)
	}
	verb := "runs"
	if len(runs) > 1 {
		verb = "run"
	}
	return "app " + strings.Join(ended, ", ") + "; " + strings.Join(runs, ", ") + " still " + verb
}

// containers are the ephemeral containers of attempt n: one quit container for every target
// with a quit endpoint, and one signal container per signalled target.
func containers(pod *corev1.Pod, targets []Target, n int, image string) []corev1.EphemeralContainer {
	var out []corev1.EphemeralContainer
	var specs []string
	var env []corev1.EnvVar
	for _, t := range targets {
		if t.Signal {
			continue
		}
		specs = append(specs, "--"+contract.FlagSidecar, t.Spec)
		env = append(env, credential(pod, t)...)
	}
	name := ContainerPrefix + strconv.Itoa(n)
	if len(specs) > 0 {
		out = append(out, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name:            name,
			Image:           image,
			Command:         append(QuitCommand(), specs...),
			Env:             env,
			SecurityContext: restricted(nil),
		}})
	}
	for _, t := range targets {
		if !t.Signal {
			continue
		}
		out = append(out, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name:            signalName(name, t.Container),
				Image:           image,
				Command:         append(SignalCommand(), "TERM"),
				SecurityContext: restricted(userOf(pod, t.Container)),
			},
			TargetContainerName: t.Container,
		})
	}
	return out
}

// signalName is the name of the container that signals target in attempt base: a DNS label of
// at most 63 characters, unique in the pod.
func signalName(base, target string) string {
	n := base + "-signal-" + target
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// credential is the variable a sidecar's quit call needs (Dapr's API token), copied from the
// sidecar's own container, whose injector set it (from a Secret, usually).
func credential(pod *corev1.Pod, t Target) []corev1.EnvVar {
	e, ok := catalog.Lookup(t.Profile)
	if !ok || e.Credential == nil {
		return nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != t.Container {
			continue
		}
		for _, v := range c.Env {
			if v.Name == e.Credential.Env {
				return []corev1.EnvVar{v}
			}
		}
	}
	return nil
}

// user is a numeric user and group for a signal container.
type user struct {
	uid, gid *int64
}

// userOf is the user that target runs as, as its spec says (its own securityContext, else the
// pod's): a signal needs the same user, as the container drops every capability.
func userOf(pod *corev1.Pod, target string) *user {
	u := &user{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		u.uid, u.gid = psc.RunAsUser, psc.RunAsGroup
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == target && c.SecurityContext != nil {
			u.uid = cmp.Or(c.SecurityContext.RunAsUser, u.uid)
			u.gid = cmp.Or(c.SecurityContext.RunAsGroup, u.gid)
		}
	}
	return u
}

// restricted is the securityContext of a rescue container: it passes Pod Security
// "restricted" and needs nothing, as the install container of inject. u, for a signal
// container, is the user of the container it signals: a user of 0 (root) cannot pass
// "restricted", and the API server's Pod Security admission then refuses the container, which
// rescue reports.
func restricted(u *user) *corev1.SecurityContext {
	no, yes := false, true
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if u != nil {
		sc.RunAsUser, sc.RunAsGroup = u.uid, u.gid
		if u.uid != nil && *u.uid == 0 {
			sc.RunAsNonRoot = nil
		}
	}
	return sc
}

// earlier counts the rescue attempts the pod holds and names one whose container has not ended.
func earlier(pod *corev1.Pod) (attempts int, running string) {
	status := map[string]*corev1.ContainerStatus{}
	for i := range pod.Status.EphemeralContainerStatuses {
		status[pod.Status.EphemeralContainerStatuses[i].Name] = &pod.Status.EphemeralContainerStatuses[i]
	}
	for _, c := range pod.Spec.EphemeralContainers {
		n, ok := attemptOf(c.Name)
		if !ok {
			continue
		}
		attempts = max(attempts, n)
		if st := status[c.Name]; st == nil || st.State.Terminated == nil {
			running = c.Name
		}
	}
	return attempts, running
}

// attemptOf reads the attempt from a rescue container's name.
func attemptOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, ContainerPrefix)
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, "-")
	n, err := strconv.Atoi(num)
	return n, err == nil && n > 0
}

// jobOf is the name of the Job that controls the pod, or "".
func jobOf(pod *corev1.Pod) string {
	ref, _ := JobOf(pod)
	return ref.Name
}

// JobOf is the owner reference of the Job that controls the pod, if one does.
func JobOf(pod *corev1.Pod) (ref corev1.ObjectReference, ok bool) {
	for _, r := range pod.OwnerReferences {
		if r.Kind == "Job" && strings.HasPrefix(r.APIVersion, "batch/") && r.Controller != nil && *r.Controller {
			return corev1.ObjectReference{Kind: r.Kind, APIVersion: r.APIVersion, Name: r.Name, UID: r.UID, Namespace: pod.Namespace}, true
		}
	}
	return corev1.ObjectReference{}, false
}

func shareProcessNamespace(pod *corev1.Pod) bool {
	return pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace
}

// podView reads the pod's spec as every reader of a pod in sidesync does.
func podView(pod *corev1.Pod) (*manifest.PodView, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, err
	}
	return manifest.ReadPod(obj, "")
}

// stateText says what a container that has not ended is doing.
func stateText(st *corev1.ContainerStatus) string {
	switch {
	case st == nil:
		return "has no status yet"
	case st.State.Running != nil:
		return "is running"
	case st.State.Waiting != nil && st.State.Waiting.Reason != "":
		return "is waiting (" + st.State.Waiting.Reason + ")"
	}
	return "is waiting"
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
