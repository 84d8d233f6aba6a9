package inject

import (
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Conversion is what Options.Native does, or would do, with one sidecar of a pod that is not a
// native sidecar yet: a classic container the pod holds, or one a mesh's injector is asked for.
type Conversion struct {
	// Container is the sidecar's container: the pod's, or the one the mesh's injector adds.
	Container string
	// Profile is its catalog row ("cloudsql").
	Profile string
	// Native: the container is moved into initContainers as a native sidecar, as Change says.
	Native bool
	Change catalog.NativeChange
	// Ask, when not nil, is the annotation that asks the mesh's injector for a native sidecar,
	// which inject adds to the pod; Honoured says which of the mesh's releases honour it.
	Ask      *catalog.Mark
	Honoured string
	// Handshake: the container ends by a shutdown of its own (catalog.HandshakeQuit), and needs
	// neither conversion nor a wrapper.
	Handshake bool
	// Why says what the conversion gives ("startup probe GET :9090/startup"), or why the
	// sidecar stays as it is.
	Why string
}

// Conversions says, for a pod as a manifest writes it, what Options.Native does with each of
// its sidecars that is not native yet, in the order of the pod's containers, without changing
// anything: lint suggests the exact change from it. A classic container becomes a native
// sidecar when its catalog row says how (catalog.Sidecar.NativeChange), unless the user keeps
// it classic (contract.ClassicAnnotation), it ends by a hand-written handshake
// (catalog.HandshakeQuit) or it sets a restartPolicy of its own; a sidecar that a mesh's
// injector is asked for gets the mesh's own annotation for a native sidecar, unless the pod
// says native or classic already.
func Conversions(pod *manifest.PodView) []Conversion {
	return conversions(catalog.Sort(pod, catalog.Options{Requests: true}))
}

// conversions is Conversions of a sorted pod.
func conversions(p *catalog.Pod) []Conversion {
	var out []Conversion
	for _, s := range p.Sidecars {
		if s.Native || s.Entry == nil {
			continue
		}
		if s.Container == nil {
			out = append(out, ask(p.View, s))
			continue
		}
		out = append(out, convert(p.View, s))
	}
	return out
}

// convert decides for a classic sidecar that the pod holds.
func convert(v *manifest.PodView, s *catalog.Sidecar) Conversion {
	c := Conversion{Container: s.Container.Name, Profile: s.Entry.Name}
	if why, ok := catalog.HandshakeQuit(s.Container, v); ok {
		c.Handshake, c.Why = true, why
		return c
	}
	switch {
	case slices.Contains(classicNames(v), s.Container.Name):
		c.Why = "kept classic by the annotation " + contract.ClassicAnnotation
		return c
	case s.Container.RestartPolicy != "":
		c.Why = "it sets its own restartPolicy, " + s.Container.RestartPolicy + ", which a native sidecar must have as " + string(restart.Always)
		return c
	}
	ch, why, ok := s.NativeChange(v)
	if !ok {
		c.Why = why
		return c
	}
	c.Native, c.Change, c.Why = true, ch, ch.Why
	return c
}

// ask decides for a sidecar that a mesh's injector is asked for.
func ask(v *manifest.PodView, s *catalog.Sidecar) Conversion {
	e := s.Entry
	c := Conversion{Container: e.Container, Profile: e.Name}
	n := e.Native
	switch {
	case len(n.Marks) == 0:
		c.Why = e.Title + "'s injector has no annotation that asks for a native sidecar"
	case anyMark(n.ClassicMarks, v):
		c.Why = "the pod asks " + e.Title + "'s injector for a classic sidecar"
	case anyMark(n.Marks, v):
		c.Why = "the pod asks " + e.Title + "'s injector for a native sidecar already"
	default:
		c.Ask, c.Honoured = &n.Marks[0], n.Honoured
		c.Why = "asked for a native sidecar with " + n.Marks[0].YAML() + ", which " + n.Honoured + " honours"
	}
	return c
}

// anyMark reports whether the pod carries one of marks.
func anyMark(marks []catalog.Mark, v *manifest.PodView) bool {
	return slices.ContainsFunc(marks, func(m catalog.Mark) bool { return m.On(v.Annotations, v.Labels) })
}

// classicNames are the containers that the user's contract.ClassicAnnotation keeps classic.
func classicNames(v *manifest.PodView) []string {
	var names []string
	for _, n := range strings.Split(v.Annotations[contract.ClassicAnnotation], ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}
