package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

var rescueUsage = `Usage: kubectl sidesync rescue [-n NS | -A] [POD...] [flags]

Frees the pods of Jobs that never complete because a classic sidecar (Istio's or Linkerd's
proxy, Vault Agent, Dapr, the Cloud SQL Auth Proxy, ...) runs on after the app has ended. To each
stuck pod it adds an ephemeral container that runs the sidesync image's 'sidesync quit' with the
pod's sidecars: in the pod's network, it calls each sidecar's loopback-only quit endpoint, each
sidecar exits through its own protocol, and the pod and its Job complete. Then it waits for the
rescued pods and says how each ended.

A pod is stuck when every app container has ended for good (the kubelet does not restart it)
and only sidecars that can be ended still run. Without POD names every pod of the namespace is
read (of every namespace with -A), only pods a Job owns are rescued, and the pods that are simply
running or finished are counted on stderr; a named pod is rescued whoever owns it. A pod whose
rescue container has not ended yet is left as it is (in-flight): rescue can be run again. An
ephemeral container can be neither removed nor run again, so a pod gets at most ` + strconv.Itoa(rescue.MaxAttempts) + ` rescues.

  kubectl sidesync rescue -A --dry-run     which pods are stuck, and how each would be freed
  kubectl sidesync rescue -n batch report-28791120-x7kqp

Flags:
  -n, --namespace NS      the namespace (default: the kubeconfig context's, else default)
  -A, --all-namespaces    every namespace (not with POD names)
  --dry-run               print the decisions and change nothing
  --signal NAMES          containers that may be ended by SIGTERM when they have no quit
                          endpoint (a log shipper, a sidecar whose quit API is off), through an
                          ephemeral container in the container's own PID namespace; repeatable
                          or comma-separated
  --image REF             the sidesync image (default: this release's, ` + buildinfo.ImageRepository + `:VERSION;
                          required for a development build)
  --wait D                how long to wait for the rescued pods to complete (default 2m; 0: do
                          not wait)
  -o, --output FORMAT     text (a table of the decisions, then one of the outcomes) or json (one
                          document with both, for scripts)
  --kubeconfig FILE       the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
  --context NAME          the kubeconfig's context (default: its current one)

It needs get and list on pods and patch on pods/ephemeralcontainers: deploy/rescue/role.yaml.

Exit codes: 0 every stuck pod rescued and complete (or nothing to rescue, or --dry-run; with
--wait 0, every rescue container added), 2 bad flags (nothing read or written), 1 anything else:
a pod not complete within --wait, a rescue that failed (the API server refused the container,
the rescue containers ended and a sidecar still runs, the pod failed with every app exited 0),
a named pod not found, an API error such as forbidden.
`

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

// rescueConfig is rescue's command line, checked.
type rescueConfig struct {
	namespace  string
	all        bool
	pods       []string
	dryRun     bool
	opts       rescue.Options // Image and Signal
	wait       time.Duration
	output     string
	kubeconfig string
	context    string
}

// target is one pod that rescue reports on: its decision and, once rescued, its outcome.
type target struct {
	d       rescue.Decision
	pod     *corev1.Pod // as last read
	missing error       // a named pod that does not exist
	err     error       // the patch's, when it failed
	patched bool
	result  rescue.Result
	gone    bool  // deleted (or replaced) while it was waited for
	readErr error // the last poll's, while it was waited for
}

// runRescue is "kubectl sidesync rescue": read the candidates, decide, add the rescue
// containers, wait, report.
func runRescue(args []string, build buildinfo.Info, stdout, stderr io.Writer) int {
	cfg, err := parseRescueFlags(args, build)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, rescueUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync rescue: %v\n\nRun 'kubectl sidesync rescue --help' for the flags.\n", err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "kubectl sidesync rescue: %v\n", err); return 1 }
	client, err := rescueClient(&cfg, build, stderr)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	shown, others, err := decide(ctx, client, cfg)
	if err != nil {
		return fail(err)
	}
	if cfg.output == "text" {
		printDecisions(stdout, shown)
	}
	summarise(stderr, cfg, shown, others)
	var rescued []*target
	if !cfg.dryRun {
		rescued = rescueAll(ctx, client, cfg, shown, stderr)
	}
	if cfg.output == "json" {
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

// parseRescueFlags parses and checks the command line, naming every bad flag at once. Flags
// may follow the pod names, as with kubectl.
func parseRescueFlags(args []string, build buildinfo.Info) (rescueConfig, error) {
	cfg := rescueConfig{wait: 2 * time.Minute, output: "text"}
	fs := flag.NewFlagSet("rescue", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.namespace, "n", "", "")
	fs.StringVar(&cfg.namespace, "namespace", "", "")
	fs.BoolVar(&cfg.all, "A", false, "")
	fs.BoolVar(&cfg.all, "all-namespaces", false, "")
	fs.BoolVar(&cfg.dryRun, "dry-run", false, "")
	fs.Func("signal", "", func(v string) error { cfg.opts.Signal = append(cfg.opts.Signal, strings.Split(v, ",")...); return nil })
	fs.StringVar(&cfg.opts.Image, "image", "", "")
	fs.DurationVar(&cfg.wait, "wait", cfg.wait, "")
	fs.StringVar(&cfg.output, "o", cfg.output, "")
	fs.StringVar(&cfg.output, "output", cfg.output, "")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&cfg.context, "context", "", "")
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return cfg, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		name := strings.TrimPrefix(strings.TrimPrefix(rest[0], "pods/"), "pod/")
		if !slices.Contains(cfg.pods, name) {
			cfg.pods = append(cfg.pods, name)
		}
		rest = rest[1:]
	}
	var errs []error
	for _, p := range cfg.pods {
		if validation.IsDNS1123Subdomain(p) != nil {
			errs = append(errs, fmt.Errorf("%q: not a pod name", p))
		}
	}
	switch {
	case cfg.all && len(cfg.pods) > 0:
		errs = append(errs, errors.New("--all-namespaces (-A) takes no pod names: name pods with --namespace"))
	case cfg.all && cfg.namespace != "":
		errs = append(errs, errors.New("--all-namespaces (-A) and --namespace (-n): give one"))
	case cfg.namespace != "" && !dnsLabel(cfg.namespace):
		errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name", cfg.namespace))
	}
	for _, s := range cfg.opts.Signal {
		if !dnsLabel(s) {
			errs = append(errs, fmt.Errorf("--signal %q: not a container name", s))
		}
	}
	if cfg.wait < 0 {
		errs = append(errs, fmt.Errorf("--wait %v: must not be negative", cfg.wait))
	}
	if cfg.output != "text" && cfg.output != "json" {
		errs = append(errs, fmt.Errorf("--output %q: must be text or json", cfg.output))
	}
	image, err := imageFlag(cfg.opts.Image, build)
	cfg.opts.Image = image
	return cfg, errors.Join(append(errs, err)...)
}

// rescueClient connects as kubectl does (--kubeconfig, else $KUBECONFIG, else ~/.kube/config;
// --context, else the current one) and sets the namespace, when none is given, to the
// context's. The API server's warnings (Pod Security's, say) go to stderr, as kubectl shows
// them.
func rescueClient(cfg *rescueConfig, build buildinfo.Info, stderr io.Writer) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if cfg.namespace == "" && !cfg.all {
		if cfg.namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the kubeconfig: %w", err)
		}
	}
	rc.UserAgent = "kubectl-sidesync/" + build.Version
	rc.Timeout = 30 * time.Second // per request: a stalled connection must not hold rescue
	rc.QPS, rc.Burst = 50, 100    // kubectl's own limits; client-go's 5/s would slow -A
	rc.WarningHandler = rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true})
	return kubernetes.NewForConfig(rc)
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
		g.Go(func() error { t.patch(ctx, client); return nil })
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
	if added > 0 && cfg.wait > 0 {
		fmt.Fprintf(stderr, "rescue containers added to %s; waiting up to %v for the outcome\n", plural(added, "pod"), cfg.wait)
		await(ctx, client, stuck, cfg.wait)
	}
	return stuck
}

// patch adds the decision's containers through the pods/ephemeralcontainers subresource, as
// `kubectl debug` does.
func (t *target) patch(ctx context.Context, client kubernetes.Interface) {
	data, err := rescue.Patch(t.d.Add)
	if err != nil {
		t.err = fmt.Errorf("pod %s: %w", t.d.Key(), err)
		return
	}
	pod, err := client.CoreV1().Pods(t.d.Namespace).Patch(ctx, t.d.Name, types.StrategicMergePatchType, data,
		metav1.PatchOptions{FieldManager: "kubectl-sidesync"}, "ephemeralcontainers")
	if err != nil {
		t.err = patchError(t.d, err)
		return
	}
	t.patched, t.pod, t.result = true, pod, rescue.Outcome(pod, t.d)
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
	case !t.patched, wait == 0:
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
		if t.patched {
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

// rescueJSON is -o json's document.
type rescueJSON struct {
	DryRun bool      `json:"dryRun"`
	Pods   []podJSON `json:"pods"`
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

// printJSON writes the decisions and outcomes as one JSON document.
func printJSON(w io.Writer, cfg rescueConfig, shown []*target, others map[rescue.Refusal]int) error {
	doc := rescueJSON{DryRun: cfg.dryRun, Pods: []podJSON{}, Others: others}
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
