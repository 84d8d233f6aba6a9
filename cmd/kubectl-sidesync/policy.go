package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

const policyUsage = `Usage: kubectl sidesync policy [flags]

Prints sidesync's webhook-less injector and its backstop as YAML, for kubectl apply:

  kubectl sidesync policy | kubectl apply -f -

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

Flags:
  --image REF        the sidesync image (default: this release's, ` + buildinfo.ImageRepository + `:VERSION;
                     required for a development build)
  --delivery MODE    init-copy (default) or image-volume (Kubernetes >= 1.35)
  --native MODE      auto (default), always or never. The policy cannot yet turn a classic
                     sidecar into a native one (a JSON Patch that moves it into initContainers
                     with inject's probe and placement): auto wraps the apps as never does, so
                     that no pod is left to hang, and says so; always is refused (use kubectl
                     sidesync inject --native, or the webhook's native: always) (docs/POLICY.md)
  --namespace NS     a namespace never selected, besides kube-system, kube-public and
                     kube-node-lease (the webhook's own, if one runs too)
  --backstop-only    print only the ValidatingAdmissionPolicy and its bindings, for beside the
                     webhook (its warning then speaks of the injector, as the chart's does)
  --kube-version V   the cluster's Kubernetes (1.33, v1.34.2): refused when older than the output
                     needs (its first line and stderr say which)

Exit codes: 0 printed, 2 bad flags (nothing written), 1 the output could not be written.
`

// runPolicy is "kubectl sidesync policy".
func runPolicy(args []string, build buildinfo.Info, stdout, stderr io.Writer) int {
	o, backstopOnly, err := parsePolicyFlags(args, build)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, policyUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync policy: %v\n\nRun 'kubectl sidesync policy --help' for the flags.\n", err)
		return 2
	}
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
			fmt.Fprintf(stderr, "kubectl sidesync policy: %v\n", err)
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
	out, err := policyYAML(objs)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync policy: %v\n", err)
		return 2
	}
	needs := policyNeeds(o, backstopOnly)
	if !backstopOnly {
		fmt.Fprintln(stderr, "kubectl sidesync policy: "+policyNativeNote)
	}
	fmt.Fprintf(stderr, "kubectl sidesync policy: the output needs %s\n", needs)
	out = append([]byte("# kubectl sidesync policy "+build.Version+": needs "+needs+"\n"), out...)
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync policy: writing: %v\n", err)
		return 1
	}
	return 0
}

// parsePolicyFlags reads the command line; the options are checked by inject's own rules.
func parsePolicyFlags(args []string, build buildinfo.Info) (admission.PolicyOptions, bool, error) {
	var o admission.PolicyOptions
	var delivery string
	var backstopOnly bool
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Image, "image", "", "")
	fs.StringVar(&delivery, "delivery", string(inject.InitCopy), "")
	native := fs.String("native", string(inject.NativeAuto), "")
	fs.StringVar(&o.Namespace, "namespace", "", "")
	fs.BoolVar(&backstopOnly, "backstop-only", false, "")
	kubeVersion := fs.String("kube-version", "", "")
	if err := fs.Parse(args); err != nil {
		return o, false, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if o.Image == "" {
		img, ok := build.Image()
		if !ok {
			errs = append(errs, errors.New("--image is required: this development build has no release image"))
		}
		o.Image = img
	}
	o.Delivery, o.Version = inject.Delivery(delivery), build.Version
	if v, err := kubeversion.Parse(*kubeVersion); *kubeVersion != "" && err != nil {
		errs = append(errs, fmt.Errorf("--kube-version: %w", err))
	} else if *kubeVersion != "" && !v.AtLeast(kubeversion.Needs(policyFeatures(o, backstopOnly)...)) {
		errs = append(errs, fmt.Errorf("--kube-version %s: the output needs %s", *kubeVersion, policyNeeds(o, backstopOnly)))
	}
	if o.Image != "" {
		if err := (inject.Options{Version: o.Version, Image: o.Image, Delivery: o.Delivery}).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if mode, err := inject.ParseNativeMode(*native); err != nil {
		errs = append(errs, err)
	} else {
		if err := policyNative(mode); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Namespace != "" && !dnsLabel(o.Namespace) {
		errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name", o.Namespace))
	}
	return o, backstopOnly, errors.Join(errs...)
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

// policyYAML writes the objects as YAML documents, without the empty fields the API types carry
// (creationTimestamp: null, status: {}).
func policyYAML(objs []any) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
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
