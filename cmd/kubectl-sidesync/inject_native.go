package main

import (
	"fmt"

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
