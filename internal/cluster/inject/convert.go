package inject

import (
	"encoding/json"
	"slices"
	"strconv"
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
// says native or classic already, or the injected pod would not record which it got (an older
// injector ignores the request, and the wrapper would take the request for the answer).
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
		switch {
		case s.Container == nil:
			out = append(out, ask(p.View, s))
		case len(p.Apps)+len(p.Stopped) == 0:
			out = append(out, Conversion{Container: s.Container.Name, Profile: s.Entry.Name,
				Why: "the pod has no other regular container, which a native sidecar needs beside it"})
		default:
			out = append(out, convert(p.View, s))
		}
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
	case KeptClassic(v, s.Container.Name):
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
	case n.FromMarks == nil:
		c.Why = "not asked with " + n.Marks[0].YAML() + " (honoured by " + n.Honoured + "): an older injector adds a classic sidecar, and the pod would not show which it got, so sidesync would take it for native and never tell it to quit"
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

// KeptClassic reports whether the user's contract.ClassicAnnotation keeps the container name of
// pod v classic: Options.Native does not convert it.
func KeptClassic(v *manifest.PodView, name string) bool {
	return slices.Contains(classicNames(v), name)
}

// KeptClassicCEL is KeptClassic in CEL: ann is the CEL map of the pod's annotations (always
// there), name the CEL string of the container's name.
func KeptClassicCEL(ann, name string) string {
	key := catalog.CELString(contract.ClassicAnnotation)
	return "(" + key + " in " + ann + " && " + ann + "[" + key + "].split(\",\").exists(n, n.trim() != \"\" && n.trim() == " + name + "))"
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

// The startup probe's timing: once a second, for as long as sidesync waits by default (two
// minutes), after which the kubelet restarts the sidecar.
const (
	probePeriod   = "1"
	probeFailures = "120"
)

// nativize carries out Conversions on the pod of w (read as pod): each classic sidecar it
// converts is moved from containers into initContainers (placeInits) with restartPolicy Always,
// the variables its probe needs and, unless it has one, a startup probe; each mesh asked gets
// its annotation. It returns the conversions, and whether it changed the pod.
func nativize(w *manifest.Workload, pod *manifest.PodView) ([]Conversion, bool, error) {
	conv := conversions(catalog.Sort(pod, catalog.Options{Requests: true}))
	moved := map[string]bool{}
	var asks []catalog.Mark
	for _, c := range conv {
		switch {
		case c.Native:
			if err := makeNative(pod.Container(c.Container), c.Change); err != nil {
				return nil, false, err
			}
			moved[c.Container] = true
		case c.Ask != nil:
			asks = append(asks, *c.Ask)
		}
	}
	if len(moved) > 0 {
		if err := placeInits(pod, moved); err != nil {
			return nil, false, err
		}
	}
	if len(asks) > 0 {
		ann := ensureMap(ensureMap(w.Template, "metadata"), "annotations")
		for _, m := range asks {
			ann[m.Key] = m.Value
		}
	}
	return conv, len(moved)+len(asks) > 0, nil
}

// makeNative turns the container into a native sidecar, keeping every field the user set: its
// restartPolicy (which conversions left unset), the variables ch adds after the user's, and a
// startup probe unless it has one of its own.
func makeNative(c *manifest.Container, ch catalog.NativeChange) error {
	env, err := manifest.ListAt(c.M, "env", c.Path)
	if err != nil {
		return err
	}
	for _, e := range ch.Env {
		env = append(env, envVar(e.Name, e.Value))
	}
	if len(env) > 0 {
		c.M["env"] = env
	}
	c.M["restartPolicy"] = string(restart.Always)
	if ch.Probe && !c.StartupProbe {
		c.M["startupProbe"] = map[string]any{
			"httpGet":          map[string]any{"path": ch.Path, "port": json.Number(strconv.Itoa(ch.Port))},
			"periodSeconds":    json.Number(probePeriod),
			"failureThreshold": json.Number(probeFailures),
		}
	}
	return nil
}

// placeInits moves the containers named in moved from the pod's containers into its
// initContainers, in their order. Kubernetes starts init containers one after another, and a
// native sidecar when its turn comes, so an init container before it cannot use it: each goes
// first, unless an init container mounts a volume it mounts too (one that writes its
// configuration or credentials), after the last of which it goes.
func placeInits(pod *manifest.PodView, moved map[string]bool) error {
	spec := manifest.Join(pod.Path, "spec")
	inits, err := manifest.ListAt(pod.Spec, "initContainers", spec)
	if err != nil {
		return err
	}
	at := map[int][]any{} // before which init container each goes; len(inits) is last
	var kept []any
	for _, c := range pod.Containers {
		if !moved[c.Name] {
			kept = append(kept, c.M)
			continue
		}
		pos := 0
		for i, ic := range pod.InitContainers {
			if sharesVolume(c, ic) {
				pos = i + 1
			}
		}
		at[pos] = append(at[pos], c.M)
	}
	var out []any
	for i := 0; i <= len(inits); i++ {
		out = append(out, at[i]...)
		if i < len(inits) {
			out = append(out, inits[i])
		}
	}
	pod.Spec["containers"] = kept
	pod.Spec["initContainers"] = out
	return nil
}

// sharesVolume reports whether two containers mount a volume of the same name.
func sharesVolume(a, b *manifest.Container) bool {
	names := func(c *manifest.Container) []string {
		l, _ := c.M["volumeMounts"].([]any)
		var out []string
		for _, e := range l {
			m, _ := e.(map[string]any)
			if n := manifest.Str(m, "name"); n != "" {
				out = append(out, n)
			}
		}
		return out
	}
	bn := names(b)
	return slices.ContainsFunc(names(a), func(n string) bool { return slices.Contains(bn, n) })
}

// nativePod carries out the conversions on the pod of w and reads the pod again.
func nativePod(w *manifest.Workload, pod *manifest.PodView) ([]Conversion, *manifest.PodView, error) {
	conv, changed, err := nativize(w, pod)
	if err != nil || !changed {
		return conv, pod, err
	}
	pod, err = manifest.ReadWorkload(w)
	return conv, pod, err
}

// notNeeded is why a pod that Options.Native left with no classic sidecar is not wrapped.
const notNeeded = "every sidecar is native with a startup probe (or nothing to wait for) or ends by itself: Kubernetes orders and stops them, so sidesync is not needed (--force wraps anyway)"

// handshake is, with Options.Native, why the sidecar container name is left as it is because it
// ends by a handshake of its own; "" otherwise.
func (p *plan) handshake(name string) string {
	for _, c := range p.conv {
		if c.Handshake && c.Container == name {
			return c.Why
		}
	}
	return ""
}

// nativeDone reports whether, with Options.Native, the pod needs no wrapper: it has sidecars,
// each of them native with a startup probe or with nothing a wrapper could wait for, or ending
// by a handshake of its own, and no app wrapped before (a pod wrapped before stays wrapped).
// A sidecar that a mesh's injector is asked for keeps the wrapper: an injector too old to
// honour the annotation adds a classic sidecar, and the wrapper, which never tells a native
// sidecar to quit, reads which it got from the pod's marks at run time.
func (p *plan) nativeDone() bool {
	if !p.native || len(p.sorted.Sidecars) == 0 || slices.ContainsFunc(p.decisions, func(d decision) bool { return d.act == keep }) {
		return false
	}
	for _, s := range p.sorted.Sidecars {
		switch {
		case s.Container == nil:
			return false
		case s.Native && (s.StartupProbe || s.Entry != nil && s.Profile.Ready == nil):
		case !s.Native && p.handshake(s.Container.Name) != "":
		default:
			return false
		}
	}
	return true
}
