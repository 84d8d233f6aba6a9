package inject

import (
	"fmt"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// fillNative writes into the report what Options.Native did (Converted, Asked, and why each
// classic sidecar it left stays classic), and the classic sidecars that the pod still cannot
// end (Unfixed), with Options.Native or without.
func (p *plan) fillNative(r *Report) {
	for _, c := range p.conv {
		switch {
		case c.Native:
			r.Converted = append(r.Converted, Left{c.Container, c.Why})
		case c.Ask != nil:
			r.Asked = append(r.Asked, c.Ask.YAML()+" ("+c.Honoured+")")
		case !c.Handshake && p.pod.Container(c.Container) != nil:
			for i := range r.Left {
				if r.Left[i].Container == c.Container {
					r.Left[i].Why += "; not made native: " + c.Why
				}
			}
		}
	}
	if len(r.Converted) > 0 {
		converted := map[string]bool{}
		for _, c := range r.Converted {
			converted[c.Container] = true
		}
		var left []Left
		for _, l := range r.Left {
			if !converted[l.Container] {
				left = append(left, l)
			}
		}
		r.Left = left
	}
	r.Unfixed = p.unfixed()
}

// unfixed says, for a pod that runs to completion, which classic sidecars it holds that nothing
// can tell to quit (their quit endpoint is certainly off, or they have none) and that do not end
// by themselves: with them, the pod never completes, wrapped or not.
func (p *plan) unfixed() []string {
	if pol := p.pod.RestartPolicy; pol == string(restart.Always) || pol == "" && p.w.Kind == manifest.Pod {
		return nil // a pod that never completes anyway
	}
	var out []string
	for _, s := range p.sorted.Sidecars {
		switch {
		case s.Container == nil || s.Entry == nil || s.Native || s.Profile.Quit != nil || s.Entry.QuitsInJobs:
			continue
		case p.handshake(s.Container.Name) != "":
			continue
		}
		why := "it has no quit endpoint"
		if s.QuitOff != nil {
			why = "its " + s.QuitOff.What + " is off (" + s.QuitOff.Fix + ")"
		}
		fix := "inject with --native to make it a native sidecar, which the kubelet stops after the apps"
		if p.native {
			fix = "it stays classic: " + p.whyClassic(s.Container.Name)
		}
		out = append(out, fmt.Sprintf("container %s: nothing can tell %s to quit, %s, so the pod never completes, wrapped or not; %s", s.Container.Name, s.Entry.Title, why, fix))
	}
	return out
}

// whyClassic is why Options.Native left the container classic.
func (p *plan) whyClassic(name string) string {
	for _, c := range p.conv {
		if c.Container == name {
			return c.Why
		}
	}
	return "not converted"
}

// needs lists the Kubernetes features the pod uses, as inject leaves it: native sidecars (one
// of its init containers), container restart rules (a regular container's own restartPolicy
// or restartPolicyRules) and, delivered so, an image volume.
func needs(pod *manifest.PodView, d Delivery) []kubeversion.Feature {
	var fs []kubeversion.Feature
	for _, c := range pod.InitContainers {
		if c.Native() {
			fs = append(fs, kubeversion.NativeSidecars)
			break
		}
	}
	for _, c := range pod.Containers {
		if c.RestartPolicy != "" || c.RestartPolicyRules != nil {
			fs = append(fs, kubeversion.RestartRules)
			break
		}
	}
	if d == ImageVolume {
		fs = append(fs, kubeversion.ImageVolume)
	}
	return fs
}
