package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// policyLong is policy's description, for --help.
const policyLong = `Prints sidesync's webhook-less injector and its backstop as YAML (or, with -o json, a List),
for kubectl apply:

  - two MutatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes >= 1.36) with
    their bindings, which inject a pod at its creation as 'kubectl sidesync inject' would, in
    CEL, without a webhook: pods labelled ` + admission.InjectLabel + `=` + admission.Enabled + ` (failing closed),
    and the pods of namespaces labelled so (failing open);
  - a ValidatingAdmissionPolicy with its bindings that warns (and records in the audit log) when
    a selected pod is created without sidesync, with the reason when the policy left it alone;
    it never denies.

A pod whose apps do not all have a command is left as it is (the policy cannot read an image's
ENTRYPOINT), with the annotation ` + admission.SkippedAnnotation + ` saying why; see docs/POLICY.md for
what the policy cannot do that the webhook does.

Exit codes: 0 printed, 2 bad flags (nothing written), 1 the output could not be written.`

// policyConfig is policy's command line.
type policyConfig struct {
	opts                   admission.PolicyOptions
	delivery, native, kube string
	backstopOnly           bool
	output                 output
	namespace              string // -n, refused: the old --namespace is --exclude-namespace
}

// newPolicyCmd is "kubectl sidesync policy".
func newPolicyCmd(e env) *cobra.Command {
	var cfg policyConfig
	cmd := &cobra.Command{
		Use:     "policy [flags]",
		Short:   "Print the webhook-less injector (admission policies)",
		Long:    policyLong,
		Example: "  kubectl sidesync policy | kubectl apply -f -\n  kubectl sidesync policy --backstop-only --exclude-namespace monitoring",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(noArgs(args, "policy takes only flags"), cfg.complete(cmd, e.build)); err != nil {
				return usageErrorf(cmd, err)
			}
			return exitOf(runPolicy(cfg, e))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.opts.Image, "image", "", "the sidesync image (default: this release's, "+buildinfo.ImageRepository+":VERSION;\nrequired for a development build)")
	f.StringVar(&cfg.delivery, "delivery", string(inject.InitCopy), "init-copy or image-volume (Kubernetes >= 1.35)")
	f.StringVar(&cfg.native, "native", string(inject.NativeAuto), `auto, always or never. The policy cannot yet turn a classic sidecar into
a native one (a JSON Patch that moves it into initContainers with inject's probe and
placement): auto wraps the apps as never does, so that no pod is left to hang, and says so;
always is refused (use kubectl sidesync inject --native, or the webhook's native: always)
(docs/POLICY.md)`)
	f.StringVar(&cfg.opts.Namespace, "exclude-namespace", "", `a namespace never selected, besides kube-system, kube-public and
kube-node-lease (the webhook's own, if one runs too)`)
	f.BoolVar(&cfg.backstopOnly, "backstop-only", false, `print only the ValidatingAdmissionPolicy and its bindings, for beside the
webhook (its warning then speaks of the injector, as the chart's does)`)
	f.StringVar(&cfg.kube, "kube-version", "", `the cluster's Kubernetes (1.33, v1.34.2): refused when older than the output
needs (its first line and stderr say which)`)
	addOutputFlag(cmd, &cfg.output, "yaml", "yaml", "json")
	// -n/--namespace meant "never selected" here once; in kubectl it is the namespace worked in.
	// Refused with the flag to use rather than taken in either meaning.
	f.StringVarP(&cfg.namespace, "namespace", "n", "", "")
	_ = f.MarkHidden("namespace")
	completeValues(cmd, "native", string(inject.NativeAuto), string(inject.NativeAlways), string(inject.NativeNever))
	completeValues(cmd, "delivery", string(inject.InitCopy), string(inject.ImageVolume))
	return cmd
}

// runPolicy prints the policies and returns the exit code.
func runPolicy(cfg policyConfig, e env) int {
	o, backstopOnly := cfg.opts, cfg.backstopOnly
	var objs []any
	// The backstop's warning is the truth of the install: beside the webhook (--backstop-only)
	// an injector may be down; without it, the policy wraps and no injector exists.
	by := admission.ByPolicy
	if backstopOnly {
		by = admission.ByWebhook
	}
	if !backstopOnly {
		policies, bindings, err := admission.Policy(o)
		if err != nil {
			fmt.Fprintf(e.stderr, "kubectl sidesync policy: %v\n", err)
			return 2
		}
		for i := range policies {
			objs = append(objs, policies[i], bindings[i])
		}
	}
	vap, vapBindings := admission.Backstop(admission.Options{Namespace: o.Namespace}, by)
	objs = append(objs, vap)
	for _, b := range vapBindings {
		objs = append(objs, b)
	}
	needs := policyNeeds(o, backstopOnly)
	out, err := policyOutput(objs, cfg.output.value, "# kubectl sidesync policy "+e.build.Version+": needs "+needs+"\n")
	if err != nil {
		fmt.Fprintf(e.stderr, "kubectl sidesync policy: %v\n", err)
		return 2
	}
	if !backstopOnly {
		fmt.Fprintln(e.stderr, "kubectl sidesync policy: "+policyNativeNote)
	}
	fmt.Fprintf(e.stderr, "kubectl sidesync policy: the output needs %s\n", needs)
	if _, err := e.stdout.Write(out); err != nil {
		fmt.Fprintf(e.stderr, "kubectl sidesync policy: writing: %v\n", err)
		return 1
	}
	return 0
}

// complete checks the command line; the options are checked by inject's own rules.
func (cfg *policyConfig) complete(cmd *cobra.Command, build buildinfo.Info) error {
	o := &cfg.opts
	var errs []error
	if cmd.Flags().Changed("namespace") {
		errs = append(errs, fmt.Errorf("policy has no --namespace (-n): a namespace the policy never selects is --exclude-namespace %s", cfg.namespace))
	}
	if err := cfg.output.check(); err != nil {
		errs = append(errs, err)
	}
	if o.Image == "" {
		img, ok := build.Image()
		if !ok {
			errs = append(errs, errors.New("--image is required: this development build has no release image"))
		}
		o.Image = img
	}
	o.Delivery, o.Version = inject.Delivery(cfg.delivery), build.Version
	if v, err := kubeversion.Parse(cfg.kube); cfg.kube != "" && err != nil {
		errs = append(errs, fmt.Errorf("--kube-version: %w", err))
	} else if cfg.kube != "" && !v.AtLeast(kubeversion.Needs(policyFeatures(*o, cfg.backstopOnly)...)) {
		errs = append(errs, fmt.Errorf("--kube-version %s: the output needs %s", cfg.kube, policyNeeds(*o, cfg.backstopOnly)))
	}
	if o.Image != "" {
		if err := (inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery}).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if mode, err := inject.ParseNativeMode(cfg.native); err != nil {
		errs = append(errs, err)
	} else if err := policyNative(mode); err != nil {
		errs = append(errs, err)
	}
	if o.Namespace != "" && !dnsLabel(o.Namespace) {
		errs = append(errs, fmt.Errorf("--exclude-namespace %q: not a namespace name", o.Namespace))
	}
	return errors.Join(errs...)
}

// policyNativeNote is what --native auto tells on stderr.
const policyNativeNote = "--native auto wraps the apps, sidecars classic: the policy cannot turn sidecars into native ones yet (kubectl sidesync inject --native and the webhook can)"

// policyFeatures are the features of Kubernetes the output uses beyond kubeversion.Oldest's.
func policyFeatures(o admission.PolicyOptions, backstopOnly bool) []kubeversion.Feature {
	if backstopOnly {
		return nil // a ValidatingAdmissionPolicy: every supported release has it
	}
	if o.Delivery == inject.ImageVolume {
		return []kubeversion.Feature{kubeversion.MutatingAdmissionPolicy, kubeversion.ImageVolume}
	}
	return []kubeversion.Feature{kubeversion.MutatingAdmissionPolicy}
}

// policyNeeds says which Kubernetes the output needs, and for what: "Kubernetes 1.36 or newer
// (MutatingAdmissionPolicy (admissionregistration.k8s.io/v1))".
func policyNeeds(o admission.PolicyOptions, backstopOnly bool) string {
	fs := policyFeatures(o, backstopOnly)
	why := "the oldest sidesync supports"
	if len(fs) > 0 {
		why = fs[0].Name
		for _, f := range fs[1:] {
			why += ", " + f.Name
		}
	}
	return "Kubernetes " + kubeversion.Needs(fs...).String() + " or newer (" + why + ")"
}

// policyNative resolves --native for the policy, which cannot convert sidecars yet: auto wraps
// as never does (a pod the policy left alone, unconverted and unwrapped, would hang), and always
// is refused. admission.PolicyOptions.Native, the exact part of the conversion (every pod made
// as inject --native makes it, or left alone with policy-cannot), is not offered until the
// conversion itself is in CEL (docs/POLICY.md).
func policyNative(m inject.NativeMode) error {
	// Every mode but always wraps (o.Native stays false): auto says so on stderr (policyNativeNote).
	if m == inject.NativeAlways {
		return fmt.Errorf("--native always: the policy cannot turn sidecars into native ones yet; use kubectl sidesync inject --native, or the webhook (the chart's native: always)")
	}
	return nil
}

// dnsLabel reports whether s is an RFC 1123 label, as namespace names are.
func dnsLabel(s string) bool {
	if len(s) > 63 || s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// policyOutput writes the objects as YAML documents after the comment head, or as one JSON
// List (as kubectl get -o json prints several objects; JSON has no comments), without the
// empty fields the API types carry (creationTimestamp: null, status: {}).
func policyOutput(objs []any, format, head string) ([]byte, error) {
	var items []any
	for _, o := range objs {
		m, err := policyObject(o)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	var b bytes.Buffer
	if format == "json" {
		err := printDoc(&b, "json", map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items})
		return b.Bytes(), err
	}
	b.WriteString(head)
	for i, m := range items {
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// policyObject is o as a JSON object without its empty fields.
func policyObject(o any) (map[string]any, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return m, nil
}
