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

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
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
	RestartPending Refusal = "restart-pending"  // an app ended and the kubelet restarts it, or would restart a target
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
// do) and its status: the containers' states, and the restart rules (internal/shared/restart) that
// say whether an ended container restarts in place.
func Decide(pod *corev1.Pod, o Options) Decision {
	d := Decision{Namespace: pod.Namespace, Name: pod.Name}
	_, ofJob := JobOf(pod)
	switch {
	case pod.DeletionTimestamp != nil:
		return d.left(Deleting, "being deleted")
	case pod.Status.Phase != corev1.PodRunning:
		return d.left(NotRunning, "phase %s", cmp.Or(string(pod.Status.Phase), "unknown"))
	case !o.Named && !ofJob:
		return d.left(NotJob, "not owned by a Job (name it to rescue it)")
	}
	view, err := podView(pod)
	if err != nil {
		return d.left(Unknown, "cannot read its spec: %v", err)
	}
	r := &reading{pod: pod, view: view, o: o, d: d, statuses: statusesOf(pod.Status.ContainerStatuses)}
	sorted := catalog.Sort(view, catalog.Options{})
	if !r.apps(sorted) || !r.targets(sorted) {
		return r.d
	}
	return r.decide(sorted)
}

// reading is one pod that Decide reads, and its decision so far.
type reading struct {
	pod      *corev1.Pod
	view     *manifest.PodView
	o        Options
	statuses map[string]*corev1.ContainerStatus // the regular containers', by name
	d        Decision
	lastEnd  time.Time // when the last app ended
	noQuit   []string  // running sidecars without a quit endpoint, and what ends them
	maybeOff []string  // targets whose quit endpoint may be off
	fixes    []string  // what switches the quit endpoint on, for the pods created next
}

// apps checks that every app has ended for good; otherwise r.d is Left and it returns false. A
// container that the catalog does not know is an app to it, unless the user named it for a
// signal: then it is a sidecar the user knows.
func (r *reading) apps(sorted *catalog.Pod) bool {
	var unended []string
	apps := 0
	for _, c := range sorted.Apps {
		if slices.Contains(r.o.Signal, c.Name) {
			continue
		}
		apps++
		st := r.statuses[c.Name]
		switch {
		case st != nil && st.State.Terminated != nil:
			term := st.State.Terminated
			if restarts, why := r.restarts(c, term.ExitCode); restarts {
				r.d = r.d.left(RestartPending, "app %s exited %d and the kubelet restarts it (%s)", c.Name, term.ExitCode, why)
				return false
			}
			r.d.Apps = append(r.d.Apps, App{Name: c.Name, ExitCode: term.ExitCode, Ended: term.FinishedAt.Time})
			r.lastEnd = later(r.lastEnd, term.FinishedAt.Time)
		case st != nil && st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			// Only a restart makes a container that ran wait again (CrashLoopBackOff): it is
			// neither running nor an app at work that rescue knows nothing of.
			r.d = r.d.left(RestartPending, "app %s %s after it exited %d: the kubelet restarts it", c.Name, stateText(st), st.LastTerminationState.Terminated.ExitCode)
			return false
		default:
			unended = append(unended, c.Name+" "+stateText(st))
		}
	}
	switch {
	case apps == 0:
		r.d = r.d.left(NoApp, "no app container: every container is a sidecar")
	case len(unended) > 0 && len(r.d.Apps) == 0:
		r.d = r.d.left(AppRunning, "app %s", strings.Join(unended, ", "))
	case len(unended) > 0:
		// Some app has ended and a container no row knows has not: an app, or a sidecar the
		// catalog does not know. Either way it is not rescue's to end unless the user says so.
		r.d = r.d.left(Unknown, "%s; it is not a sidecar sidesync knows (an app still at work, or an unknown sidecar)", strings.Join(unended, ", "))
		r.d.Hint = "if it is a sidecar, --signal NAME ends it with SIGTERM"
	default:
		return true
	}
	return false
}

// targets finds what still runs besides the apps, each of which must be a classic sidecar the
// catalog knows with a quit endpoint, or a container named for a signal; otherwise r.d is Left
// and it returns false. Native sidecars are the kubelet's to stop, never targets.
func (r *reading) targets(sorted *catalog.Pod) bool {
	for _, c := range sorted.Apps {
		if slices.Contains(r.o.Signal, c.Name) && !r.signalled(c, "") {
			return false
		}
	}
	for _, s := range sorted.Sidecars {
		if s.Container != nil && !s.Native && !r.sidecar(s) {
			return false
		}
	}
	for _, st := range sorted.Stopped {
		running, ended, _ := r.standing(st.Container)
		switch {
		case ended:
		case slices.Contains(r.o.Signal, st.Container.Name):
			if !r.signalled(st.Container, st.Entry.Name) {
				return false
			}
		case running || r.statuses[st.Container.Name] != nil:
			r.d = r.d.left(Orchestrator, "container %s is stopped by %s", st.Container.Name, st.Entry.StoppedBy)
			return false
		}
	}
	return true
}

// signalled makes c, named for a signal, a target if it runs. One that waits (to start, or to
// start again) would outlive the rescue: it leaves the pod alone.
func (r *reading) signalled(c *manifest.Container, profile string) bool {
	running, ended, doing := r.standing(c)
	switch {
	case running && r.comesBack(c):
		return false
	case running:
		r.d.Targets = append(r.d.Targets, Target{Container: c.Name, Profile: profile, Signal: true})
	case !ended:
		r.d = r.d.left(SidecarWaiting, "container %s %s", c.Name, doing)
		return false
	}
	return true
}

// comesBack reports, and makes r.d Left, when the kubelet restarts c even after it exits 0 (its
// restartPolicy, or the pod's, is Always; or a rule restarts it): ending it cannot end the pod.
func (r *reading) comesBack(c *manifest.Container) bool {
	restarts, why := r.restarts(c, 0)
	if restarts {
		r.d = r.d.left(RestartPending, "%s would be restarted once ended, even after exit 0 (%s)", c.Name, why)
	}
	return restarts
}

// sidecar makes a running classic sidecar a target: through its quit endpoint, or by a signal
// when it has none and the user named it. A sidecar whose endpoint may be off (Linkerd's
// /shutdown, which the pod does not show) is quit, unless the user named it: the user knows.
func (r *reading) sidecar(s *catalog.Sidecar) bool {
	name := s.Container.Name
	running, ended, doing := r.standing(s.Container)
	switch {
	case ended:
		return true
	case !running:
		r.d = r.d.left(SidecarWaiting, "sidecar %s %s", name, doing)
		return false
	case r.comesBack(s.Container):
		return false
	}
	named := slices.Contains(r.o.Signal, name)
	switch {
	case s.Profile.Quit != nil && (s.QuitOff == nil || !named):
		r.d.Targets = append(r.d.Targets, Target{Container: name, Profile: s.Entry.Name, Spec: config.FormatSidecar(s.Entry.Name, s.Profile)})
		if s.QuitOff != nil {
			r.maybeOff = append(r.maybeOff, fmt.Sprintf("%s's %s may be off: if its quit fails, --signal %s sends it SIGTERM", name, s.QuitOff.What, name))
		}
	case named:
		r.d.Targets = append(r.d.Targets, Target{Container: name, Profile: s.Entry.Name, Signal: true})
	default:
		why := "it has no quit endpoint"
		if s.QuitOff != nil {
			why = "its " + s.QuitOff.What + " is off"
			r.fixes = append(r.fixes, "so that "+name+" can be told to quit in the pods created next: "+s.QuitOff.Fix)
		}
		r.noQuit = append(r.noQuit, fmt.Sprintf("%s (%s): %s; --signal %s sends it SIGTERM", name, s.Entry.Title, why, name))
	}
	return true
}

// standing says how a container that is no app stands: running, ended for good, or neither
// (waiting, without a status, or ended and about to be restarted), and then what it does.
func (r *reading) standing(c *manifest.Container) (running, ended bool, doing string) {
	st := r.statuses[c.Name]
	switch {
	case st != nil && st.State.Running != nil:
		return true, false, ""
	case st != nil && st.State.Terminated != nil:
		code := st.State.Terminated.ExitCode
		if restarts, why := r.restarts(c, code); restarts {
			return false, false, fmt.Sprintf("exited %d and the kubelet restarts it (%s)", code, why)
		}
		return false, true, ""
	}
	return false, false, stateText(st)
}

// restarts reports whether the kubelet restarts c in place after it exited with code, and why.
// Rules that cannot be read count as a restart, which leaves the pod alone.
func (r *reading) restarts(c *manifest.Container, code int32) (bool, string) {
	spec, err := restart.Effective(c.RestartPolicy, r.view.RestartPolicy, c.RestartPolicyRules)
	if err != nil {
		return true, fmt.Sprintf("its restart rules cannot be read, so a restart is assumed: %v", err)
	}
	return spec.Restarts(int(code))
}

// decide decides a pod whose apps have all ended and whose targets can all be ended: Stuck,
// unless nothing is left to end, an earlier rescue is at work or gave up, or the grace runs.
func (r *reading) decide(sorted *catalog.Pod) Decision {
	d := r.d
	switch {
	case len(r.noQuit) > 0:
		d = d.left(NoQuit, "%s", strings.Join(r.noQuit, "; "))
		d.Hint = strings.Join(append([]string{"--signal NAME (the container's own SIGTERM handling decides its exit code)"}, r.fixes...), "; ")
		return d
	case len(d.Targets) == 0 && r.nativesRun(sorted):
		return d.left(NativeOnly, "every app has ended and only native sidecars run: the kubelet stops them")
	case len(d.Targets) == 0:
		return d.left(NotRunning, "every container has ended")
	case slices.ContainsFunc(d.Targets, func(t Target) bool { return t.Signal }) && shareProcessNamespace(r.pod):
		return d.left(SharedPID, "the pod shares one PID namespace (shareProcessNamespace), so a signal cannot reach one container's PID 1")
	}
	d.Targets = inPodOrder(r.view, d.Targets)
	d.Hint = strings.Join(r.maybeOff, "; ")

	attempts, running := earlier(r.pod)
	switch {
	case running != "":
		d.Verdict, d.Reason = InFlight, "rescue container "+running+" has not ended yet"
		return d
	case attempts >= MaxAttempts:
		return d.left(Exhausted, "%d rescues did not end it: see the logs of its %s containers", attempts, ContainerPrefix+"N")
	}
	d.Reason = stuckReason(d.Apps, d.Targets)
	// The grace runs from the last app's end, and again from an earlier rescue's end: its
	// sidecars were told to quit, and the kubelet may not have reported their end yet; another
	// attempt at once would spend one of the pod's few for nothing.
	since := later(r.lastEnd, lastRescueEnd(r.pod))
	if elapsed := r.o.Now.Sub(since); r.o.Grace > 0 && !since.IsZero() && elapsed < r.o.Grace {
		// An end ahead of Now (the node's clock ahead of the rescuer's) waits Grace, no more.
		d.Verdict, d.Waited = Grace, r.o.Grace-max(elapsed, 0)
		return d
	}
	d.Verdict, d.Attempt = Stuck, attempts+1
	d.Add = containers(r.pod, d.Targets, d.Attempt, r.o.Image)
	return d
}

// nativesRun reports whether a native sidecar of the pod has not ended.
func (r *reading) nativesRun(sorted *catalog.Pod) bool {
	inits := statusesOf(r.pod.Status.InitContainerStatuses)
	for _, s := range sorted.Sidecars {
		if s.Container != nil && s.Native {
			if st := inits[s.Container.Name]; st == nil || st.State.Terminated == nil {
				return true
			}
		}
	}
	return false
}

// inPodOrder sorts targets as the pod's spec lists their containers.
func inPodOrder(v *manifest.PodView, targets []Target) []Target {
	index := map[string]int{}
	for i, c := range v.Containers {
		index[c.Name] = i
	}
	slices.SortStableFunc(targets, func(a, b Target) int { return cmp.Compare(index[a.Container], index[b.Container]) })
	return targets
}

// statusesOf indexes containers' statuses by name.
func statusesOf(sts []corev1.ContainerStatus) map[string]*corev1.ContainerStatus {
	m := make(map[string]*corev1.ContainerStatus, len(sts))
	for i := range sts {
		m[sts[i].Name] = &sts[i]
	}
	return m
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

// lastRescueEnd is when the pod's last rescue container ended, or zero.
func lastRescueEnd(pod *corev1.Pod) time.Time {
	var last time.Time
	for _, st := range pod.Status.EphemeralContainerStatuses {
		if t := st.State.Terminated; t != nil && strings.HasPrefix(st.Name, ContainerPrefix) {
			last = later(last, t.FinishedAt.Time)
		}
	}
	return last
}

// stalledReasons are the reasons of a waiting container that the kubelet will not start without
// a change to the pod (its image cannot be pulled, its variables cannot be resolved): an
// ephemeral container, which cannot be changed, never starts then.
var stalledReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// stalled is the reason a rescue container will never start, or "".
func stalled(st corev1.ContainerStatus) string {
	if w := st.State.Waiting; w != nil && slices.Contains(stalledReasons, w.Reason) {
		return w.Reason
	}
	return ""
}

// earlier counts the rescue attempts the pod holds and names one whose container has not ended
// and may yet start: one that never can (its image cannot be pulled) counts as an attempt that
// ended, so that the next rescue tries again, up to MaxAttempts.
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
		if st := status[c.Name]; st == nil || (st.State.Terminated == nil && stalled(*st) == "") {
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

// podView reads the pod's spec as every reader of a pod in sidesync does: decoded as a manifest
// is (manifest.ObjectOf), numbers and all.
func podView(pod *corev1.Pod) (*manifest.PodView, error) {
	obj, err := manifest.ObjectOf(pod)
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
