package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// The limits of rescue's work on the API server.
const (
	maxInFlight = 8           // patches, or namespaces' polls, in flight at once
	pollEvery   = time.Second // how often the rescued pods are read while they are waited for
	// listFrom is the number of a namespace's rescued pods from which one LIST replaces their
	// GETs while they are waited for.
	listFrom = 4
)

// rbacNeeds ends every forbidden message: what to grant.
const rbacNeeds = "rescue needs get and list on pods and patch on pods/ephemeralcontainers (deploy/rescue/role.yaml)"

// target is one pod that rescue reports on: its decision and, once rescued, its outcome.
type target struct {
	d       rescue.Decision
	pod     *corev1.Pod // as last read
	missing error       // a named pod that does not exist
	err     error       // the patch's, when it failed
	patched bool
	dryRun  bool // patched with dryRun=All: the API server accepted it and stored nothing
	result  rescue.Result
	gone    bool  // deleted (or replaced) while it was waited for
	readErr error // the last poll's, while it was waited for
}

// runRescue reads the candidates, decides, adds the rescue containers, waits, reports, and
// returns the exit code.
func runRescue(cfg rescueConfig, e env) int {
	stdout, stderr := e.stdout, e.stderr
	fail := func(err error) int { fmt.Fprintf(stderr, "kubectl sidesync rescue: %v\n", err); return 1 }
	if cfg.devImage {
		fmt.Fprintf(stderr, "kubectl sidesync rescue: a development build without --image: the dry run names %s, which is not published; a rescue needs --image\n", cfg.opts.Image)
	}
	client, namespace, err := kubeClient(cfg.kube, e.build, stderr)
	if err != nil {
		return fail(err)
	}
	if cfg.namespace == "" && !cfg.all {
		cfg.namespace = namespace
	}
	ctx := context.Background()
	shown, others, err := decide(ctx, client, cfg)
	if err != nil {
		return fail(err)
	}
	if cfg.output.value == "text" {
		printDecisions(stdout, shown)
	}
	summarise(stderr, cfg, shown, others)
	var rescued []*target
	if cfg.dryRun != dryRunClient {
		rescued = rescueAll(ctx, client, cfg, shown, stderr)
	}
	if cfg.output.value != "text" {
		if err := printJSON(stdout, cfg, shown, others); err != nil {
			return fail(err)
		}
	} else if len(rescued) > 0 {
		fmt.Fprintln(stdout)
		printOutcomes(stdout, cfg.wait, rescued)
	}
	code := 0
	for _, t := range shown {
		code = max(code, t.exitCode(cfg.wait))
	}
	return code
}

// decide reads the candidate pods and asks rescue.Decide of each. shown are those the user
// sees a row for: every named pod, and else the pods that are stuck, rescued, or left for a
// reason worth reading; others counts the rest by refusal.
func decide(ctx context.Context, client kubernetes.Interface, cfg rescueConfig) (shown []*target, others map[rescue.Refusal]int, err error) {
	others = map[rescue.Refusal]int{}
	opts := cfg.opts
	opts.Named, opts.Now = len(cfg.pods) > 0, time.Now()
	if opts.Named {
		for _, name := range cfg.pods {
			pod, err := client.CoreV1().Pods(cfg.namespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				shown = append(shown, &target{d: rescue.Decision{Namespace: cfg.namespace, Name: name}, missing: err})
			case err != nil:
				return nil, nil, readError("get", fmt.Sprintf("pod %q in namespace %q", name, cfg.namespace), err)
			default:
				shown = append(shown, &target{d: rescue.Decide(pod, opts), pod: pod})
			}
		}
		return shown, others, nil
	}
	pods, err := listPods(ctx, client, cfg.namespace)
	if err != nil {
		where := fmt.Sprintf("pods in namespace %q", cfg.namespace)
		if cfg.all {
			where = "pods in all namespaces"
		}
		return nil, nil, readError("list", where, err)
	}
	for i := range pods {
		d := rescue.Decide(&pods[i], opts)
		if d.Verdict == rescue.Left && slices.Contains([]rescue.Refusal{rescue.NotRunning, rescue.NotJob, rescue.AppRunning}, d.Refusal) {
			others[d.Refusal]++
			continue
		}
		shown = append(shown, &target{d: d, pod: &pods[i]})
	}
	return shown, others, nil
}

// listPods lists a namespace's pods ("": every namespace's) 500 at a time, as kubectl does:
// -A on a big cluster is not one huge answer.
func listPods(ctx context.Context, client kubernetes.Interface, namespace string) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		pods = append(pods, list.Items...)
		if list.Continue == "" {
			return pods, nil
		}
		opts.Continue = list.Continue
	}
}

// readError says what could not be read; a refusal of RBAC says what rescue needs.
func readError(verb, what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("cannot %s %s: forbidden; %s", verb, what, rbacNeeds)
	}
	return fmt.Errorf("cannot %s %s: %w", verb, what, err)
}

// rescueAll adds the rescue containers to the stuck pods, at most maxInFlight at once, waits for
// the rescued pods, and returns the pods it tried to rescue.
func rescueAll(ctx context.Context, client kubernetes.Interface, cfg rescueConfig, shown []*target, stderr io.Writer) []*target {
	var stuck []*target
	for _, t := range shown {
		if t.d.Verdict == rescue.Stuck {
			stuck = append(stuck, t)
		}
	}
	var g errgroup.Group
	g.SetLimit(maxInFlight)
	for _, t := range stuck {
		g.Go(func() error { t.patch(ctx, client, cfg.dryRun == dryRunServer); return nil })
	}
	_ = g.Wait() // the errors are the targets'
	added := 0
	for _, t := range stuck {
		if t.err != nil {
			fmt.Fprintf(stderr, "kubectl sidesync rescue: %v\n", t.err)
		} else {
			added++
		}
	}
	if added > 0 && cfg.dryRun == dryRunServer {
		fmt.Fprintf(stderr, "rescue containers accepted by the API server for %s (server dry run: nothing stored)\n", plural(added, "pod"))
	} else if added > 0 && cfg.wait > 0 {
		fmt.Fprintf(stderr, "rescue containers added to %s; waiting up to %v for the outcome\n", plural(added, "pod"), cfg.wait)
		await(ctx, client, stuck, cfg.wait)
	}
	return stuck
}

// patch adds the decision's containers through the pods/ephemeralcontainers subresource, as
// `kubectl debug` does; with dryRun, as kubectl's --dry-run=server, with dryRun=All: the API
// server runs its admission and stores nothing.
func (t *target) patch(ctx context.Context, client kubernetes.Interface, dryRun bool) {
	data, err := rescue.Patch(t.d.Add)
	if err != nil {
		t.err = fmt.Errorf("pod %s: %w", t.d.Key(), err)
		return
	}
	opts := metav1.PatchOptions{FieldManager: "kubectl-sidesync"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	pod, err := client.CoreV1().Pods(t.d.Namespace).Patch(ctx, t.d.Name, types.StrategicMergePatchType, data, opts, "ephemeralcontainers")
	if err != nil {
		t.err = patchError(t.d, err)
		return
	}
	t.patched, t.dryRun = true, dryRun
	if !dryRun {
		t.pod, t.result = pod, rescue.Outcome(pod, t.d)
	}
}

// patchError says why a pod's patch failed, in the terms the user acts on.
func patchError(d rescue.Decision, err error) error {
	var status *apierrors.StatusError
	errors.As(err, &status)
	switch {
	// A missing subresource is a 404 without the details a missing pod's 404 names it in
	// (what `kubectl debug` checks too).
	case apierrors.IsNotFound(err) && (status == nil || status.ErrStatus.Details == nil || status.ErrStatus.Details.Name == ""):
		return fmt.Errorf("pod %s: ephemeral containers are not enabled in this cluster (Kubernetes 1.25+ has them on): %w", d.Key(), err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("pod %s: deleted since it was read", d.Key())
	// RBAC's refusal, from the API server's authorizer, reads `User "u" cannot patch resource
	// "pods/ephemeralcontainers" ...`; an admission plugin's is a 403 too (Pod Security's) but
	// says why, and is passed on.
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), " cannot patch resource "):
		return fmt.Errorf("cannot patch pods/ephemeralcontainers of pod %q in namespace %q: forbidden; %s", d.Name, d.Namespace, rbacNeeds)
	case status != nil && status.ErrStatus.Code/100 == 4:
		return fmt.Errorf("pod %s: the API server refused the rescue container: %w", d.Key(), err)
	}
	return fmt.Errorf("pod %s: adding the rescue container: %w", d.Key(), err)
}

// await reads the rescued pods every pollEvery until each is done, its rescue failed, or wait
// has passed. It polls: rescue's Role grants no watch. The reads are not cut short at the end
// of the wait (each is bounded by the client's timeout): the last one is the freshest news.
func await(ctx context.Context, client kubernetes.Interface, rescued []*target, wait time.Duration) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		pending := map[string][]*target{}
		for _, t := range rescued {
			if t.waiting() {
				pending[t.d.Namespace] = append(pending[t.d.Namespace], t)
			}
		}
		if len(pending) == 0 {
			return
		}
		select {
		case <-deadline.C:
			return
		case <-tick.C:
		}
		var g errgroup.Group
		g.SetLimit(maxInFlight)
		for ns, ts := range pending {
			g.Go(func() error { poll(ctx, client, ns, ts); return nil })
		}
		_ = g.Wait() // the errors are the targets'
	}
}

// waiting reports whether the rescued pod is still to be waited for.
func (t *target) waiting() bool {
	return t.patched && !t.gone && !t.result.Done && t.result.Failed == ""
}

// poll reads the pods of one namespace that are waited for: one GET each, or one LIST when
// there are listFrom of them or more. A LIST that fails (a Role without list, for pods named)
// falls back to the GETs.
func poll(ctx context.Context, client kubernetes.Interface, namespace string, ts []*target) {
	var listed map[string]*corev1.Pod
	if len(ts) >= listFrom {
		if pods, err := listPods(ctx, client, namespace); err == nil {
			listed = map[string]*corev1.Pod{}
			for i := range pods {
				listed[pods[i].Name] = &pods[i]
			}
		}
	}
	for _, t := range ts {
		pod, err := listed[t.d.Name], error(nil)
		if listed == nil {
			pod, err = client.CoreV1().Pods(namespace).Get(ctx, t.d.Name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err), err == nil && (pod == nil || pod.UID != t.pod.UID):
			t.gone = true
		case err != nil:
			t.readErr = err
		default:
			t.pod, t.result, t.readErr = pod, rescue.Outcome(pod, t.d), nil
		}
	}
}

// outcome is how a rescue ended, in a few words.
func (t *target) outcome(wait time.Duration) string {
	switch {
	case t.err != nil:
		return "rescue failed: " + t.err.Error()
	case t.dryRun:
		return "rescue container accepted (server dry run: nothing stored)"
	case t.gone:
		return "deleted before it was seen complete"
	case t.result.Failed != "":
		return "rescue failed: " + t.result.Failed
	case t.result.Done:
		return string(t.result.Phase)
	case wait == 0:
		return "rescue container added (not waited for)"
	case t.readErr != nil:
		return fmt.Sprintf("still running after %v (the last read failed: %v)", wait, t.readErr)
	}
	return fmt.Sprintf("still running after %v", wait)
}

// exitCode is 0 for a pod rescued as asked: complete (Succeeded, or Failed by an app's own
// exit code: the rescue freed it, the app decided), or its container added when not waited
// for; and for a pod nothing was asked of (left, in flight, a dry run).
func (t *target) exitCode(wait time.Duration) int {
	appFailed := slices.ContainsFunc(t.d.Apps, func(a rescue.App) bool { return a.ExitCode != 0 })
	switch {
	case t.missing != nil, t.err != nil, t.gone, t.result.Failed != "":
		return 1
	case !t.patched, wait == 0, t.dryRun:
		return 0
	case t.result.Phase == corev1.PodSucceeded, t.result.Phase == corev1.PodFailed && appFailed:
		return 0
	}
	return 1
}

// verdict is the decision's word: stuck, in-flight, left: REFUSAL.
func (t *target) verdict() string {
	switch {
	case t.missing != nil:
		return "not found"
	case t.d.Verdict == rescue.Left:
		return "left: " + string(t.d.Refusal)
	}
	return string(t.d.Verdict)
}

// reason is why, with the hint.
func (t *target) reason() string {
	switch {
	case t.missing != nil:
		return t.missing.Error()
	case t.d.Hint != "":
		return t.d.Reason + "; " + t.d.Hint
	}
	return t.d.Reason
}

// printDecisions writes the table of decisions.
func printDecisions(w io.Writer, shown []*target) {
	if len(shown) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tVERDICT\tREASON\tPLAN")
	for _, t := range shown {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.d.Namespace, t.d.Name, t.verdict(), t.reason(), t.d.Plan())
	}
	tw.Flush()
}

// printOutcomes writes the table of outcomes: each target sidecar's exit and each rescue
// container's state.
func printOutcomes(w io.Writer, wait time.Duration, rescued []*target) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tOUTCOME\tSIDECARS\tRESCUE")
	for _, t := range rescued {
		sidecars, rescuers := "-", "-"
		if t.patched && !t.dryRun {
			var s, r []string
			for _, tg := range t.d.Targets {
				if code, ok := t.result.Sidecars[tg.Container]; ok {
					s = append(s, fmt.Sprintf("%s exited %d", tg.Container, code))
				} else {
					s = append(s, tg.Container+" running")
				}
			}
			for _, c := range t.d.Add {
				r = append(r, c.Name+" "+t.result.Rescuers[c.Name])
			}
			sidecars, rescuers = strings.Join(s, ", "), strings.Join(r, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.d.Namespace, t.d.Name, t.outcome(wait), sidecars, rescuers)
	}
	tw.Flush()
}

// summarise says on stderr what the tables leave out: the pods that are simply running apps
// or finished, counted, so that -A on a big cluster stays readable.
func summarise(w io.Writer, cfg rescueConfig, shown []*target, others map[rescue.Refusal]int) {
	n := 0
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(others)) {
		n += others[r]
		parts = append(parts, fmt.Sprintf("%d %s", others[r], r))
	}
	switch {
	case n > 0 && len(shown) > 0:
		fmt.Fprintf(w, "%s: not stuck (%s)\n", plural(n, "other pod"), strings.Join(parts, ", "))
	case n > 0:
		fmt.Fprintf(w, "no stuck pods: %s not stuck (%s)\n", plural(n, "pod"), strings.Join(parts, ", "))
	case len(shown) == 0 && cfg.all:
		fmt.Fprintln(w, "no pods in any namespace")
	case len(shown) == 0:
		fmt.Fprintf(w, "no pods in namespace %q\n", cfg.namespace)
	}
}

// plural is "1 pod", "2 pods".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rescueJSON is -o json's (and yaml's) document.
type rescueJSON struct {
	DryRun bool `json:"dryRun"` // client or server: nothing stored
	// DryRunStrategy is --dry-run's value: none, client or server.
	DryRunStrategy string    `json:"dryRunStrategy"`
	Pods           []podJSON `json:"pods"`
	// Others counts the pods left out of Pods, by refusal.
	Others map[rescue.Refusal]int `json:"others"`
}

type podJSON struct {
	Namespace string                      `json:"namespace"`
	Name      string                      `json:"name"`
	Verdict   string                      `json:"verdict"` // stuck, in-flight, grace, left, not-found
	Refusal   rescue.Refusal              `json:"refusal,omitempty"`
	Reason    string                      `json:"reason"`
	Hint      string                      `json:"hint,omitempty"`
	Plan      string                      `json:"plan"`
	Targets   []targetJSON                `json:"targets,omitempty"`
	Add       []corev1.EphemeralContainer `json:"add,omitempty"`
	Outcome   *outcomeJSON                `json:"outcome,omitempty"` // when a rescue was tried
}

type targetJSON struct {
	Container string `json:"container"`
	Profile   string `json:"profile,omitempty"`
	Spec      string `json:"spec,omitempty"`
	Signal    bool   `json:"signal,omitempty"`
}

type outcomeJSON struct {
	Outcome  string            `json:"outcome"`
	OK       bool              `json:"ok"`
	Phase    corev1.PodPhase   `json:"phase,omitempty"`
	Sidecars map[string]int32  `json:"sidecars,omitempty"` // exit codes of the ended targets
	Rescuers map[string]string `json:"rescuers,omitempty"` // the rescue containers' states
}

// printJSON writes the decisions and outcomes as one JSON or YAML document.
func printJSON(w io.Writer, cfg rescueConfig, shown []*target, others map[rescue.Refusal]int) error {
	doc := rescueJSON{DryRun: cfg.dryRun != dryRunNone, DryRunStrategy: string(cfg.dryRun), Pods: []podJSON{}, Others: others}
	for _, t := range shown {
		p := podJSON{Namespace: t.d.Namespace, Name: t.d.Name, Verdict: string(t.d.Verdict), Refusal: t.d.Refusal,
			Reason: t.d.Reason, Hint: t.d.Hint, Plan: t.d.Plan(), Add: t.d.Add}
		if t.missing != nil {
			p.Verdict, p.Reason = "not-found", t.missing.Error()
		}
		for _, tg := range t.d.Targets {
			p.Targets = append(p.Targets, targetJSON{tg.Container, tg.Profile, tg.Spec, tg.Signal})
		}
		if t.patched || t.err != nil {
			p.Outcome = &outcomeJSON{Outcome: t.outcome(cfg.wait), OK: t.exitCode(cfg.wait) == 0,
				Phase: t.result.Phase, Sidecars: t.result.Sidecars, Rescuers: t.result.Rescuers}
		}
		doc.Pods = append(doc.Pods, p)
	}
	return printDoc(w, cfg.output.value, doc)
}
