package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
)

// checkNativeFlags reads --native and --kube-version into cfg: the mode, the version (else the
// oldest sidesync supports) and, from both, Options.Native. A feature the delivery or the mode
// needs that the version lacks is refused here, before anything is read; one the manifests use
// is refused after injection (checkNeeds).
func checkNativeFlags(cfg *injectConfig, native, kube string) []error {
	var errs []error
	mode, err := inject.ParseNativeMode(native)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.native, cfg.kube = mode, kubeversion.Oldest
	if kube != "" {
		v, err := kubeversion.Parse(kube)
		if err != nil {
			return append(errs, fmt.Errorf("--kube-version: %w", err))
		}
		cfg.kube, cfg.kubeGiven = v, true
	}
	cfg.opts.Native = mode.Native(cfg.kube)
	if !cfg.kubeGiven {
		return errs
	}
	if cfg.opts.Delivery == inject.ImageVolume {
		if err := kubeversion.ImageVolume.Check(cfg.kube); err != nil {
			errs = append(errs, fmt.Errorf("--delivery %s: %w", inject.ImageVolume, err))
		}
	}
	if mode == inject.NativeAlways {
		if err := kubeversion.NativeSidecars.Check(cfg.kube); err != nil {
			errs = append(errs, fmt.Errorf("--native %s: %w", mode, err))
		}
	}
	return errs
}

// injectSummary writes the reports to stderr, then the Kubernetes the output needs, and returns
// the exit code: 3 when a Job's pod still never completes.
func injectSummary(stderr io.Writer, reports []inject.Report) int {
	code, injected := 0, false
	var fs []kubeversion.Feature
	for _, r := range reports {
		fmt.Fprintln(stderr, r)
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", r.Object, w)
		}
		for _, u := range r.Unfixed {
			fmt.Fprintf(stderr, "%s: nothing fixed: %s\n", r.Object, u)
			code = 3
		}
		injected = injected || r.Injected
		for _, f := range r.Needs {
			if !slices.Contains(fs, f) {
				fs = append(fs, f)
			}
		}
	}
	if injected {
		fmt.Fprintln(stderr, "kubectl sidesync inject: "+needsLine(fs))
	}
	return code
}

// needsLine says which Kubernetes the output needs, and for what.
func needsLine(fs []kubeversion.Feature) string {
	v := kubeversion.Needs(fs...)
	var why []string
	for _, f := range fs {
		why = append(why, f.Name+" "+f.Since.String())
	}
	if len(why) == 0 {
		return "the output needs Kubernetes " + v.String() + " or newer (the oldest sidesync supports)"
	}
	return "the output needs Kubernetes " + v.String() + " or newer (the oldest sidesync supports; " + strings.Join(why, ", ") + ")"
}

// checkNeeds refuses, with --kube-version, output that uses a feature that version lacks.
func checkNeeds(cfg injectConfig, reports []inject.Report) error {
	if !cfg.kubeGiven {
		return nil
	}
	var errs []error
	for _, r := range reports {
		for _, f := range r.Needs {
			if err := f.Check(cfg.kube); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Object, err))
			}
		}
	}
	return errors.Join(errs...)
}
