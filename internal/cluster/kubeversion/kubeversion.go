// Package kubeversion is the one home of the Kubernetes versions sidesync's output needs: each
// feature a pod or a configuration of sidesync may use, with the first minor version that has it
// on by default (docs/KUBERNETES.md gives each with its upstream source), the oldest version the
// project supports, and a version read from a flag or an API server. inject, the webhook, the
// policy, lint and the charts compare against it, and say the version in their messages.
package kubeversion

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Kubernetes release, major 1: only the minor version decides what a cluster can
// do.
type Version struct{ Minor int }

// String writes the version as users write it: "1.35".
func (v Version) String() string { return "1." + strconv.Itoa(v.Minor) }

// AtLeast reports whether v is w or newer.
func (v Version) AtLeast(w Version) bool { return v.Minor >= w.Minor }

// Oldest is the oldest Kubernetes sidesync supports: the injector's chart refuses older
// clusters (its kubeVersion is derived from it), since native sidecars are GA from it on.
var Oldest = Version{33}

// Parse reads a version as kubectl, a flag or an API server writes it: "1.33", "v1.33.13",
// "1.33.2-gke.1200", "v1.34.0+k3s1". Only major 1 is accepted.
func Parse(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(t, "-+"); i >= 0 {
		t = t[:i]
	}
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "1" {
		return Version{}, fmt.Errorf("not a Kubernetes version, %q: want 1.MINOR, such as 1.33 or v1.33.2", s)
	}
	for _, p := range parts[1:] {
		if p == "" || strings.Trim(p, "0123456789") != "" || len(p) > 4 {
			return Version{}, fmt.Errorf("not a Kubernetes version, %q: want 1.MINOR, such as 1.33 or v1.33.2", s)
		}
	}
	minor, _ := strconv.Atoi(parts[1])
	return Version{minor}, nil
}

// FromServer reads the version an API server reports (its /version's major and minor, where
// providers add "+" to the minor: EKS's "33+").
func FromServer(major, minor string) (Version, error) {
	m := strings.TrimSuffix(minor, "+")
	if major != "1" || m == "" || strings.Trim(m, "0123456789") != "" || len(m) > 4 {
		return Version{}, fmt.Errorf("API server version %s.%s: want 1.MINOR", major, minor)
	}
	n, _ := strconv.Atoi(m)
	return Version{n}, nil
}

// Feature is something a pod or a configuration of sidesync uses that a Kubernetes version may
// lack.
type Feature struct {
	// Name is what messages call it: "image volumes".
	Name string
	// Since is the first version that has it on by default.
	Since Version
	// Section is where docs/KUBERNETES.md gives the facts and their sources.
	Section string
}

// The features sidesync's output may use.
var (
	// NativeSidecars: init containers with restartPolicy: Always; beta and on by default since
	// 1.29, GA in 1.33 (KEP-753).
	NativeSidecars = Feature{Name: "native sidecars (init containers with restartPolicy: Always)", Since: Version{29}, Section: "1"}
	// RestartRules: a container's restartPolicy and restartPolicyRules; beta and on by default
	// since 1.35 (KEP-5307).
	RestartRules = Feature{Name: "container restart rules (restartPolicyRules)", Since: Version{35}, Section: "2"}
	// ImageVolume: a volume that mounts an OCI image; beta and on by default since 1.35, GA in
	// 1.36 (KEP-4639). A 1.33 or 1.34 API server stores a pod without the volume, and says
	// nothing.
	ImageVolume = Feature{Name: "image volumes", Since: Version{35}, Section: "4"}
	// MutatingAdmissionPolicy: admissionregistration.k8s.io/v1, GA in 1.36 (KEP-3962).
	MutatingAdmissionPolicy = Feature{Name: "MutatingAdmissionPolicy (admissionregistration.k8s.io/v1)", Since: Version{36}, Section: "10"}
)

// NativeKubelet is the oldest kubelet that runs native sidecars by default: `--native auto`
// (inject, the webhook, the policy) converts sidecars into native ones only where every node
// that can run the pod runs this version or a newer one, and lint suggests it likewise.
var NativeKubelet = NativeSidecars.Since

// In reports whether version v has f on by default.
func (f Feature) In(v Version) bool { return v.AtLeast(f.Since) }

// Check is nil when v has f, and otherwise an error that names both versions.
func (f Feature) Check(v Version) error {
	if f.In(v) {
		return nil
	}
	return fmt.Errorf("%s need Kubernetes %s or newer; this is for %s", f.Name, f.Since, v)
}

// Needs is the oldest version that has every one of fs, and Oldest at least.
func Needs(fs ...Feature) Version {
	v := Oldest
	for _, f := range fs {
		if !v.AtLeast(f.Since) {
			v = f.Since
		}
	}
	return v
}

// Constraint is v as a Helm chart's kubeVersion writes it, pre-releases included: ">=1.33.0-0".
func (v Version) Constraint() string { return ">=" + v.String() + ".0-0" }
