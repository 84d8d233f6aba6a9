package catalog

import (
	"fmt"
	"strconv"
	"strings"

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

// NativeOnly reports whether the pod has sidecars and every one is native with a startup probe:
// Kubernetes then starts the apps only once the sidecars have started and stops the sidecars
// after the apps, which is what sidesync would do. Inject leaves such a pod unwrapped (unless
// forced), and the admission policy too (SortCEL.NativeOnly).
func (p *Pod) NativeOnly() bool {
	if len(p.Sidecars) == 0 {
		return false
	}
	for _, s := range p.Sidecars {
		if !s.Native || !s.StartupProbe {
			return false
		}
	}
	return true
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

// SortCEL is Sort in CEL, with Options{Requests: true} as inject reads a manifest, for an
// admission policy: the pod's annotations and labels as p names them, each container as the
// CEL expression its caller gives. It decides per container, without the state of the rows
// claimed before, which gives claim's answer as long as no two rows' injectors add containers
// of the same name and a row's Containers match only its own container's name (and the pod's
// container names are distinct, as the API server makes them): NewSortCEL refuses a table that
// breaks this, rather than let a policy disagree with inject.
type SortCEL struct {
	pod CELPod
}

// CELVariable is a variable of an admission policy: the policy reads it as variables.NAME.
type CELVariable struct {
	Name, Expression string
}

// NewSortCEL checks that the table is one SortCEL follows.
func NewSortCEL(p CELPod) (*SortCEL, error) {
	seen := map[string]string{}
	for _, e := range table {
		if e.Container == "" {
			continue
		}
		if other, dup := seen[e.Container]; dup {
			return nil, fmt.Errorf("catalog rows %s and %s name the same container %s: the policy's CEL cannot tell which claims it", other, e.Name, e.Container)
		}
		seen[e.Container] = e.Name
		for _, m := range e.Containers {
			if m.Name != e.Container || m.NamePrefix != "" || m.Image != "" || m.When != nil {
				return nil, fmt.Errorf("catalog row %s: a container match other than its container's name %s: the policy's CEL does not follow claim's order for it", e.Name, e.Container)
			}
		}
	}
	return &SortCEL{pod: p}, nil
}

// announcing reports whether anything on a pod can announce e (announce).
func (e *Entry) announcing() bool { return len(e.Marks)+len(e.Requests) > 0 }

// announcedVar is the name of the variable that says whether row i is announced.
func announcedVar(i int) string { return fmt.Sprintf("announced%d", i) }

// Variables are the variables that Claim and AnnouncedClaimed read, in order: whether each row
// that marks or requests can announce is announced (announce, with marked).
func (k *SortCEL) Variables() []CELVariable {
	var out []CELVariable
	for i := range table {
		e := &table[i]
		if !e.announcing() {
			continue
		}
		expr := celOr([]string{anyOnCEL(e.Marks, k.pod), anyOnCEL(e.Requests, k.pod)})
		if len(e.Unless) > 0 {
			expr = "(!" + anyOnCEL(e.Unless, k.pod) + " && " + expr + ")"
		}
		out = append(out, CELVariable{Name: announcedVar(i), Expression: expr})
	}
	return out
}

// Claim is claim in CEL: the index in Entries of the row that claims the container c (an int),
// or -1 for an app. A row that is announced claims its container by name; else the first row
// whose Containers match it does.
func (k *SortCEL) Claim(c string) string {
	var arms []string
	for i := range table {
		if e := &table[i]; e.Container != "" && e.announcing() {
			arms = append(arms, fmt.Sprintf("(variables.%s && %s.name == %s) ? %d", announcedVar(i), c, CELString(e.Container), i))
		}
	}
	for i := range table {
		e := &table[i]
		if len(e.Containers) == 0 {
			continue
		}
		var ms []string
		for _, m := range e.Containers {
			ms = append(ms, m.CEL(k.pod, c))
		}
		arms = append(arms, fmt.Sprintf("%s ? %d", celOr(ms), i))
	}
	return "(" + strings.Join(append(arms, "-1"), " : ") + ")"
}

// Sidecar is, in CEL, whether the row index ent (as Claim gives it) makes a regular container
// one of Pod.Sidecars: the row is a profile (the other rows' containers are Stopped).
func (k *SortCEL) Sidecar(ent string) string {
	var rows []string
	for i := range table {
		if table[i].IsProfile() {
			rows = append(rows, strconv.Itoa(i))
		}
	}
	return ent + " in [" + strings.Join(rows, ", ") + "]"
}

// AnnouncedClaimed is, in CEL, whether every row announced claims a container of the pod, so that
// Pod.Sidecars has none without its container: claims are CEL lists of Claim's answers for the
// pod's containers (regular, native).
func (k *SortCEL) AnnouncedClaimed(claims ...string) string {
	var conds []string
	for i := range table {
		if !table[i].announcing() {
			continue
		}
		terms := []string{"!variables." + announcedVar(i)}
		for _, l := range claims {
			terms = append(terms, fmt.Sprintf("%d in %s", i, l))
		}
		conds = append(conds, "("+strings.Join(terms, " || ")+")")
	}
	return celAnd(conds)
}

// Unclaimed is, in CEL, whether a row for which which(e) holds is announced and claims no
// container of the pod: a sidecar of Pod.Sidecars without its container (the negation, row by
// row, of AnnouncedClaimed); claims as there.
func (k *SortCEL) Unclaimed(which func(e *Entry) bool, claims ...string) string {
	var conds []string
	for i := range table {
		if !table[i].announcing() || !which(&table[i]) {
			continue
		}
		terms := []string{"variables." + announcedVar(i)}
		for _, l := range claims {
			terms = append(terms, fmt.Sprintf("!(%d in %s)", i, l))
		}
		conds = append(conds, celAnd(terms))
	}
	return celOr(conds)
}

// SidecarRows is a CEL value chosen by the row index ent (as Claim gives it) of a sidecar's
// container: value(e) for each row e that is a profile and claims containers, otherwise for
// any other.
func (k *SortCEL) SidecarRows(ent string, value func(e *Entry) string, otherwise string) string {
	var arms []string
	for i := range table {
		e := &table[i]
		if !e.IsProfile() || (len(e.Containers) == 0 && e.Container == "") {
			continue
		}
		arms = append(arms, fmt.Sprintf("%s == %d ? %s", ent, i, value(e)))
	}
	return "(" + strings.Join(append(arms, otherwise), " : ") + ")"
}

// NativeOnly is Pod.NativeOnly in CEL. natives is the CEL list of the pod's native sidecars (the
// init containers manifest.NativeCEL chooses), ent and nativeEnt the lists of Claim's answers for
// its regular containers and for natives. The pod's sidecars are its natives, the regular
// containers a profile's row claims (Sidecar) and the rows announced that claim no container
// (AnnouncedClaimed); of these only the natives are native, and have a startup probe when their
// container has one.
func (k *SortCEL) NativeOnly(natives, ent, nativeEnt string) string {
	return celAnd([]string{
		"size(" + natives + ") > 0",
		natives + ".all(c, " + hasStartupProbeCEL("c") + ")",
		"!" + ent + ".exists(e, " + k.Sidecar("e") + ")",
		k.AnnouncedClaimed(ent, nativeEnt),
	})
}

// hasStartupProbeCEL is manifest.Container.StartupProbe in CEL, for the container that the CEL
// expression c names.
func hasStartupProbeCEL(c string) string { return "has(" + c + ".startupProbe)" }
