// Package profiles gives the sidecars sidesync knows (Istio, Linkerd, the Cloud SQL Auth Proxy,
// Vault Agent, ...) as sidecar.Sidecar values with their documented endpoints, for programs that
// use the sidecar package in-process:
//
//	istio, _ := profiles.Get("istio")
//	_, err := sidecar.WaitReady(ctx, *istio.Ready, sidecar.WaitOptions{Timeout: time.Minute})
//
// The values come from sidesync's one table of sidecars, the same that the sidesync binary and
// kubectl-sidesync read; the README lists them.
package profiles

import (
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// Get returns the profile called name with its documented defaults, and whether there is one.
// Each call returns a fresh value, whose URLs the caller may change (sidecar.Sidecar.WithPorts,
// WithHost).
func Get(name string) (sidecar.Sidecar, bool) { return catalog.Profile(name) }

// Names lists the profiles, in the README's order.
func Names() []string { return catalog.ProfileNames() }
