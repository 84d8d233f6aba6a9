package lint

import (
	"strings"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// pod is what the rules read: the object, with its containers sorted by the catalog (as
// detection and inject sort them) and what the sidesync in each app is told.
type pod struct {
	Object
	ann, labels map[string]string
	// completes: the pod runs to completion (a Job's, or a Pod with restartPolicy Never or
	// OnFailure), so a sidecar that never quits keeps it from completing.
	completes bool
	sorted    *catalog.Pod
	apps      []*appContainer // the app containers, in order
	// expected are the sidecars the pod expects from its namespace (catalog.Expected).
	expected []catalog.Expectation
	// conversions are what kubectl sidesync inject --native does with each sidecar that is not
	// native yet, by container name.
	conversions map[string]inject.Conversion
}

// appContainer is an app container, and the sidesync it runs if any.
type appContainer struct {
	c *manifest.Container
	w *wrapper // nil when the container does not run sidesync
}

// newPod sorts the object's containers: sidecars (native ones, those the catalog knows, and
// those that marks or injection requests announce), the containers their orchestrator stops, and
// the apps.
func newPod(o Object) *pod {
	p := &pod{Object: o, ann: o.Pod.Annotations, labels: o.Pod.Labels}
	policy := o.Pod.RestartPolicy
	p.completes = o.Kind != manifest.Pod || policy == string(restart.Never) || policy == string(restart.OnFailure)
	p.sorted = catalog.Sort(o.Pod, catalog.Options{Requests: true})
	p.expected = catalog.Expected(o.Pod)
	p.conversions = map[string]inject.Conversion{}
	for _, c := range inject.Conversions(o.Pod) {
		p.conversions[c.Container] = c
	}
	for _, c := range p.sorted.Apps {
		p.apps = append(p.apps, &appContainer{c: c, w: readWrapper(c)})
	}
	return p
}

// classic returns the sidecars that are not native: those in the pod, and those announced that
// the injector adds as classic ones, or may (NativeMaybe).
func (p *pod) classic() []*catalog.Sidecar {
	var out []*catalog.Sidecar
	for _, s := range p.sorted.Sidecars {
		if !s.Native {
			out = append(out, s)
		}
	}
	return out
}

// wrapped returns the apps that run sidesync.
func (p *pod) wrapped() []*appContainer {
	var out []*appContainer
	for _, a := range p.apps {
		if a.w != nil {
			out = append(out, a)
		}
	}
	return out
}

// unwrapped returns the apps that do not run sidesync.
func (p *pod) unwrapped() []*appContainer {
	var out []*appContainer
	for _, a := range p.apps {
		if a.w == nil {
			out = append(out, a)
		}
	}
	return out
}

// appNames names the apps for a fix: "job", or "job or report".
func (p *pod) appNames() string {
	var names []string
	for _, a := range p.apps {
		names = append(names, a.c.Name)
	}
	if len(names) == 0 {
		return "the app's"
	}
	return strings.Join(names, " or ")
}

// who names a sidecar in messages: "container cloud-sql-proxy (Cloud SQL Auth Proxy)", and for
// one an injector adds, what asks for it: the pod's request, or its namespace's.
func (p *pod) who(s *catalog.Sidecar) string {
	var what string
	if s.Entry != nil {
		what = s.Entry.Title
	}
	switch {
	case s.Container != nil:
	case s.Entry != nil && p.FromNamespace[s.Entry.Name] != "":
		what += ", from the namespace's " + p.FromNamespace[s.Entry.Name]
	case s.Via != "":
		what += ", from the " + s.Via
	}
	if what == "" {
		return "container " + s.ContainerName()
	}
	return "container " + s.ContainerName() + " (" + what + ")"
}

// names joins container names: "a", "a and b", "a, b and c".
func names(apps []*appContainer) string {
	var out []string
	for _, a := range apps {
		out = append(out, a.c.Name)
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// containersOf is "container a", or "containers a and b".
func containersOf(apps []*appContainer) string {
	return plural3(apps, "container ", "containers ") + names(apps)
}

// ending says that the apps end: "job ends", "all of job and main end".
func ending(apps []*appContainer) string {
	if len(apps) == 1 {
		return names(apps) + " ends"
	}
	return "each of " + names(apps) + " ends"
}

// plural3 is one for a single app, many for several.
func plural3(apps []*appContainer, one, many string) string {
	if len(apps) == 1 {
		return one
	}
	return many
}
