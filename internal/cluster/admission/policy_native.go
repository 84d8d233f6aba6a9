package admission

import (
	"slices"
	"strconv"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// This file holds what the MutatingAdmissionPolicy does with PolicyOptions.Native (issue
// "Native first"): the pods for which inject.Apply with Options.Native may make something other
// than without it, in Go (nativeMay) and, beside it, in the policy's CEL (nativeMayCEL). The
// policy does not convert sidecars yet: such a pod is left alone with ReasonPolicyCannot
// (nativeCannot), never converted in part, so that the policy never makes a pod that differs
// from inject's; every other pod it makes as inject.Apply with Native does, which for it is the
// pod Apply makes without (TestNativeMayCoversInject).

// nativeMay reports whether inject.Apply with Options.Native may change the sorted pod p
// (catalog.Sort with Requests) otherwise than without it. It holds when p has a regular
// container other than its sidecars (inject.Conversions converts nothing in a pod without) and
// either a sidecar among its regular containers whose catalog row converts it (Entry.Convert)
// and that neither the user keeps classic (inject.KeptClassic) nor sets a restartPolicy,
// or that runs a shell and mounts a volume that another regular container mounts too (it may end
// by a hand-written shutdown handshake, catalog.HandshakeQuit, which Native leaves alone), or a
// sidecar that the pod announces and does not hold, whose mesh's injector takes an annotation
// for a native sidecar (which Native adds), or a native sidecar of the catalog without a startup
// probe (Native may find nothing to wait for in it, and the pod needs no wrapper). It is a superset of what inject.Conversions acts on,
// in terms the policy's CEL can say.
func nativeMay(p *catalog.Pod) bool {
	if len(p.Apps)+len(p.Stopped) == 0 {
		return false
	}
	for _, s := range p.Sidecars {
		switch {
		case s.Entry == nil || !s.Entry.IsProfile():
		case s.Native:
			if !s.StartupProbe {
				return true
			}
		case s.Container == nil:
			if len(s.Entry.Native.Marks) > 0 {
				return true
			}
		case slices.Contains(p.View.Containers, s.Container):
			converts := s.Entry.Convert != nil && !inject.KeptClassic(p.View, s.Container.Name) && s.Container.RestartPolicy == ""
			if converts || catalog.RunsShell(s.Container.Argv()) && sharesMount(s.Container, p.View.Containers) {
				return true
			}
		}
	}
	return false
}

// sharesMount reports whether c mounts a volume (by the name of its mount) that another of cs
// mounts too.
func sharesMount(c *manifest.Container, cs []*manifest.Container) bool {
	mine := mountNames(c)
	for _, o := range cs {
		if o != c && slices.ContainsFunc(mountNames(o), func(n string) bool { return slices.Contains(mine, n) }) {
			return true
		}
	}
	return false
}

// mountNames are the names of c's volumeMounts that have one.
func mountNames(c *manifest.Container) []string {
	l, _ := c.M["volumeMounts"].([]any)
	var out []string
	for _, e := range l {
		m, _ := e.(map[string]any)
		if n, ok := m["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

// nativeMayCEL is nativeMay in CEL, over the policy's variables ent and nativeEnt (the catalog's
// claims of the regular and the native containers).
func nativeMayCEL(k *catalog.SortCEL) string {
	converts := "(" + k.SidecarRows("variables.ent[i]", func(e *catalog.Entry) string { return strconv.FormatBool(e.Convert != nil) }, "false") +
		" && !" + inject.KeptClassicCEL("variables.ann", "c.name") + " && !has(c.restartPolicy))"
	shares := catalog.RunsShellCEL("c") + " && has(c.volumeMounts) && size(object.spec.containers.transformList(j, o, j != i && has(o.volumeMounts) && " +
		"o.volumeMounts.exists(om, has(om.name) && c.volumeMounts.exists(m, has(m.name) && m.name == om.name)), j)) > 0"
	held := "size(object.spec.containers.transformList(i, c, " + k.Sidecar("variables.ent[i]") + " && (" + converts + " || " + shares + "), i)) > 0"
	asked := k.Unclaimed(func(e *catalog.Entry) bool { return e.IsProfile() && len(e.Native.Marks) > 0 }, "variables.ent", "variables.nativeEnt")
	unprobed := "size(variables.natives.transformList(i, c, !has(c.startupProbe) && " + k.Sidecar("variables.nativeEnt[i]") + ", i)) > 0"
	others := "variables.ent.exists(e, !(" + k.Sidecar("e") + "))"
	return "(" + others + " && (" + held + " || " + asked + " || " + unprobed + "))"
}

// nativeCannot is what the policy says of a pod that nativeMay holds for (ReasonPolicyCannot).
const nativeCannot = "the pod has a classic sidecar that sidesync's native conversion may make a native sidecar (or end by a hand-written shutdown handshake), " +
	"or asks a mesh's injector for a sidecar that it would ask for a native one, which the admission policy cannot do yet; " +
	"`kubectl sidesync inject` or the webhook does, or install the policy with `kubectl sidesync policy --native never` to wrap such pods with their sidecars classic"
