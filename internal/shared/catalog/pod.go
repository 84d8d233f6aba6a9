package catalog

import (
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Pod is a pod sorted by the catalog: its sidecars, the containers an orchestrator stops, and its
// apps. Detection, inject and lint all sort a pod with Sort, so that they agree on which
// containers are sidecars.
type Pod struct {
	View *manifest.PodView
	// Sidecars are the pod's sidecars: native sidecars (init containers with restartPolicy
	// Always, known or not), the regular containers the catalog knows, then those that marks
	// (and, with Options.Requests, injection requests) announce and the pod does not hold yet.
	Sidecars []*Sidecar
	// Stopped are the regular containers an orchestrator adds and stops itself.
	Stopped []Stopped
	// Apps are the regular containers that are neither: what sidesync wraps.
	Apps []*manifest.Container
	// Inits are the init containers that are not native sidecars.
	Inits []*manifest.Container
}

// Stopped is a container an orchestrator adds and stops itself.
type Stopped struct {
	Container *manifest.Container
	Entry     *Entry // its row, shared: read only
}

// Options says what Sort reads.
type Options struct {
	// Requests reads injection requests (sidecar.istio.io/inject: "true", ...) as announcing a
	// sidecar: right for a manifest before admission, wrong in a running pod, whose injector has
	// had its say (its marks tell).
	Requests bool
}

// announced is a sidecar that a mark or a request on the pod names.
type announced struct {
	entry     *Entry
	via       string
	requested bool
	claimed   bool
}

// Sort sorts a pod's containers. A sidecar's endpoints are read from its settings (ports, the
// switches of its endpoints) as described on Sidecar.
func Sort(v *manifest.PodView, o Options) *Pod {
	p := &Pod{View: v}
	ann := announce(v, o)
	for _, c := range v.InitContainers {
		if !c.Native() {
			p.Inits = append(p.Inits, c)
			continue
		}
		e, via := claim(ann, v, c)
		s := &Sidecar{Container: c, Via: via}
		if e != nil && e.IsProfile() { // a native sidecar is the kubelet's to stop, whoever added it
			s.Entry = e
		}
		p.Sidecars = append(p.Sidecars, s)
	}
	for _, c := range v.Containers {
		e, via := claim(ann, v, c)
		switch {
		case e == nil:
			p.Apps = append(p.Apps, c)
		case !e.IsProfile():
			p.Stopped = append(p.Stopped, Stopped{Container: c, Entry: e})
		default:
			p.Sidecars = append(p.Sidecars, &Sidecar{Entry: e, Container: c, Via: via})
		}
	}
	for _, a := range ann {
		if !a.claimed {
			p.Sidecars = append(p.Sidecars, &Sidecar{Entry: a.entry, Via: a.via, Requested: a.requested})
		}
	}
	for _, s := range p.Sidecars {
		s.read(v)
	}
	return p
}

// announce lists the sidecars that the pod's marks, then (with o.Requests) its requests, name:
// one per row, in the catalog's order.
func announce(v *manifest.PodView, o Options) []*announced {
	var out []*announced
	seen := map[string]bool{}
	add := func(e *Entry, m Mark, requested bool) {
		if !seen[e.Name] {
			seen[e.Name] = true
			out = append(out, &announced{entry: e, via: m.String(), requested: requested})
		}
	}
	for i := range table {
		if m, ok := table[i].marked(v, table[i].Marks); ok {
			add(&table[i], m, false)
		}
	}
	if o.Requests {
		for i := range table {
			if m, ok := table[i].marked(v, table[i].Requests); ok {
				add(&table[i], m, true)
			}
		}
	}
	return out
}

// claim finds what container c is: the sidecar an announcement names by its container's name,
// else the first row whose Containers match it, or nil. via says what gave it away.
func claim(ann []*announced, v *manifest.PodView, c *manifest.Container) (*Entry, string) {
	for _, a := range ann {
		if !a.claimed && a.entry.Container != "" && a.entry.Container == c.Name {
			a.claimed = true
			return a.entry, a.via + ", container " + c.Name
		}
	}
	for i := range table {
		e := &table[i]
		if !e.matches(v, c) {
			continue
		}
		via := "container " + c.Name
		for _, a := range ann {
			if !a.claimed && a.entry.Name == e.Name {
				a.claimed, via = true, a.via+", "+via
			}
		}
		return e, via
	}
	return nil, ""
}

// marked returns the first of marks that the pod carries, unless one of e.Unless is there too.
func (e *Entry) marked(v *manifest.PodView, marks []Mark) (Mark, bool) {
	for _, u := range e.Unless {
		if u.On(v.Annotations, v.Labels) {
			return Mark{}, false
		}
	}
	for _, m := range marks {
		if m.On(v.Annotations, v.Labels) {
			return m, true
		}
	}
	return Mark{}, false
}

// matches reports whether c is a container that reveals e without a mark.
func (e *Entry) matches(v *manifest.PodView, c *manifest.Container) bool {
	for _, m := range e.Containers {
		if m.Matches(v, c) {
			return true
		}
	}
	return false
}

// On reports whether the pod's annotations or labels carry the mark.
func (m Mark) On(ann, labels map[string]string) bool {
	from := ann
	if m.Label {
		from = labels
	}
	v, ok := from[m.Key]
	return ok && (m.Value == "" || v == m.Value)
}

// String is the mark as messages show it: `annotation linkerd.io/inject: "enabled"`, `label
// osm-proxy-uuid`.
func (m Mark) String() string {
	what := "annotation "
	if m.Label {
		what = "label "
	}
	if m.Value == "" {
		return what + m.Key
	}
	return what + m.YAML()
}

// YAML is the mark as a line of YAML, its value quoted: `sidecar.istio.io/nativeSidecar: "true"`.
func (m Mark) YAML() string { return m.Key + ": " + quote(m.Value) }

// Matches reports whether container c of pod v matches m.
func (m Match) Matches(v *manifest.PodView, c *manifest.Container) bool {
	switch {
	case m.When != nil && !m.When.On(v.Annotations, v.Labels):
		return false
	case m.Name != "" && m.Name != c.Name:
		return false
	case m.NamePrefix != "" && (len(c.Name) <= len(m.NamePrefix) || c.Name[:len(m.NamePrefix)] != m.NamePrefix):
		return false
	}
	return m.Image == "" || containsFold(c.Image, m.Image)
}
