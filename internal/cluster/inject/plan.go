package inject

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// action is what inject does with an app container.
type action int

const (
	leave action = iota // leave it as it is (why says why)
	wrap                // wrap it now
	keep                // it is wrapped already: bring what inject owns around it up to date
)

// decision is what inject does with one app container, decided before anything changes.
type decision struct {
	c    *manifest.Container
	act  action
	why  string   // leave: the reason, for the report
	argv []string // wrap: what runs after "--"; nil when the wrapper picks per platform
	// byPlat is, for an image whose ENTRYPOINT or CMD differs by platform, each platform's argv.
	byPlat map[string][]string
	pinned string // wrap: the image pinned to a digest, or ""
	// unwrappable says why an app that should be wrapped cannot be (no command, and its image
	// was not resolved); needsImage marks one whose image's ENTRYPOINT would do.
	unwrappable string
	needsImage  bool
}

// plan is everything inject decided about a pod.
type plan struct {
	w      *manifest.Workload
	pod    *manifest.PodView
	sorted *catalog.Pod
	// injected: the pod carries contract.InjectedAnnotation, so inject added what bears its
	// names there.
	injected  bool
	decisions []decision // the app containers, in order
	left      []Left     // the other containers, with why they are left alone
	found     []string   // the sidecars the manifest shows, as --sidecar values
	warnings  []string
	// unchanged, when not empty, says why the whole pod is left as it is; unchangedApps says it
	// of the apps that could have been wrapped.
	unchanged, unchangedApps string
	// native: Options.Native; conv are the conversions carried out before the plan was made,
	// on the pod it was made for (nativePod).
	native bool
	conv   []Conversion
}

// planPod decides what happens to every container of the pod, changing nothing. Its error is
// about the input: two containers of one name, a name inject owns that inject did not add, a
// selected container that is no app.
func planPod(w *manifest.Workload, o Options, eps Entrypoints) (*plan, error) {
	pod, err := manifest.ReadWorkload(w)
	if err != nil {
		return nil, err
	}
	if len(pod.Containers) == 0 {
		return nil, fmt.Errorf("%s: no containers", manifest.Join(manifest.Join(w.TemplatePath, "spec"), "containers"))
	}
	var conv []Conversion
	if o.Native && pod.OS != "windows" {
		if conv, pod, err = nativePod(w, pod); err != nil {
			return nil, err
		}
	}
	p := &plan{w: w, pod: pod, sorted: catalog.Sort(pod, catalog.Options{Requests: true}), conv: conv, native: o.Native}
	_, p.injected = pod.Annotations[contract.InjectedAnnotation]
	if err := p.check(o); err != nil {
		return nil, err
	}
	p.sidecars()
	for _, c := range p.sorted.Apps {
		p.decisions = append(p.decisions, p.decide(c, o, eps))
	}
	p.allOrNone(o)
	return p, nil
}

// check refuses what inject must not touch: duplicate names, names inject owns, a selection
// that is no app.
func (p *plan) check(o Options) error {
	if err := checkUniqueNames(p.pod); err != nil {
		return err
	}
	if err := p.clash(); err != nil {
		return err
	}
	return p.checkSelection(o.Containers)
}

// checkUniqueNames refuses a pod in which two containers (init or regular) share a name: the
// API server refuses it too, and what inject would wrap or report under that name would be
// ambiguous (found by FuzzApply: of two containers "a", one was wrapped, and the report could
// not say which).
// (manifest.ReadPod has checked each name is one the API server takes, the rule the wrapper's
// --container checks too.)
func checkUniqueNames(pod *manifest.PodView) error {
	seen := map[string]bool{}
	for _, c := range pod.All() {
		if seen[c.Name] {
			return fmt.Errorf("%s: container name %q is used twice (the API server refuses such a pod)", manifest.Join(pod.Path, "spec"), c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// sidecars records the pod's sidecars, the containers its orchestrator stops and its init
// containers: left alone, the sidecars the manifest holds recorded for the wrapper.
func (p *plan) sidecars() {
	for _, s := range p.sorted.Sidecars {
		if s.Container == nil { // announced: the mesh adds it, and its marks tell the wrapper
			for _, n := range s.Notes {
				p.warnings = append(p.warnings, fmt.Sprintf("the %s sidecar that the %s asks for: %s", s.Entry.Title, s.Via, n))
			}
			continue
		}
		switch {
		case s.Entry == nil:
			p.left = append(p.left, Left{s.Container.Name, "a native sidecar"})
			continue
		case p.handshake(s.Container.Name) != "":
			// it ends by itself, and the wrapper must not tell it to quit before its app ends
			p.left = append(p.left, Left{s.Container.Name, p.handshake(s.Container.Name)})
			continue
		case s.Native:
			p.left = append(p.left, Left{s.Container.Name, "a native sidecar: " + s.Entry.Name})
		default:
			p.left = append(p.left, Left{s.Container.Name, "a known sidecar: " + s.Entry.Name})
		}
		if spec := config.FormatSidecar(s.Entry.Name, s.Profile); !slices.Contains(p.found, spec) {
			p.found = append(p.found, spec)
		}
		for _, n := range s.Notes {
			p.warnings = append(p.warnings, fmt.Sprintf("container %s: %s", s.Container.Name, n))
		}
	}
	for _, st := range p.sorted.Stopped {
		p.left = append(p.left, Left{st.Container.Name, "stopped by its orchestrator: " + st.Entry.StoppedBy})
	}
	for _, c := range p.sorted.Inits {
		if c.Name != contract.InitContainer {
			p.left = append(p.left, Left{c.Name, "an init container"})
		}
	}
}

// decide says what to do with an app container.
func (p *plan) decide(c *manifest.Container, o Options, eps Entrypoints) decision {
	switch {
	case wrapped(c):
		return decision{c: c, act: keep}
	case contract.RunsSidesync(c.Command): // by hand: wrapping it would put one sidesync inside another
		return decision{c: c, act: leave, why: "runs sidesync already"}
	case len(o.Containers) > 0 && !slices.Contains(o.Containers, c.Name):
		return decision{c: c, act: leave, why: "not selected"}
	case hasCommand(c):
		return decision{c: c, act: wrap, argv: Argv(c.Command, c.Args, ImageCommand{})}
	}
	img, ok := eps[c.Image]
	if !ok {
		return decision{c: c, unwrappable: noCommand(c), needsImage: true}
	}
	return resolved(c, img)
}

// resolved decides for a container without a command whose image was resolved: one argv
// inlined when every platform runs the same, else the wrapper picks its platform's.
func resolved(c *manifest.Container, img ResolvedImage) decision {
	byPlat := platformArgv(c.Args, img)
	argv, same := sameArgv(byPlat)
	switch {
	case len(byPlat) == 0:
		return decision{c: c, unwrappable: fmt.Sprintf("container %s has no command, and no platform of its image %s was read; %s", c.Name, c.Image, addCommand)}
	case same && len(argv) == 0:
		return decision{c: c, unwrappable: fmt.Sprintf("container %s has no command, and its image %s has neither ENTRYPOINT nor CMD, and the container no args: nothing to run", c.Name, c.Image)}
	case same:
		return decision{c: c, act: wrap, argv: argv, pinned: img.Pinned}
	case slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "$(") }):
		// The argv goes into an env value as JSON; a variable's value expanded into it could
		// break the JSON, so what would run is no longer certain.
		return decision{c: c, unwrappable: fmt.Sprintf("container %s has no command, its image %s runs a different ENTRYPOINT or CMD per platform, and its args use $(VAR), which cannot be passed per platform; %s", c.Name, c.Image, addCommand)}
	}
	if err := checkPlatformCommands(byPlat); err != nil {
		return decision{c: c, unwrappable: fmt.Sprintf("container %s has no command, and the commands per platform of its image %s are not a value the wrapper takes (%v); %s", c.Name, c.Image, err, addCommand)}
	}
	return decision{c: c, act: wrap, byPlat: byPlat, pinned: img.Pinned}
}

// checkPlatformCommands checks the value of contract.Env(contract.FlagPlatformCommands) with
// the wrapper's own parser: a value it refuses stops the wrapper on every platform, so it is
// never written (an index entry "linux/AMD64", or a platform whose image runs nothing, did).
func checkPlatformCommands(byPlat map[string][]string) error {
	j, err := compactJSON(byPlat)
	if err == nil {
		_, err = config.ParsePlatformCommands(j)
	}
	return err
}

// addCommand says what makes a container without a command wrappable.
const addCommand = "add a command: with the image's ENTRYPOINT (and args: with its CMD, unless the container has args) to the container, as `crane config IMAGE` or `docker inspect IMAGE` shows them, or inject with --resolve to read them from the registry"

func noCommand(c *manifest.Container) string {
	return fmt.Sprintf("container %s has no command, so the ENTRYPOINT of its image %s decides what runs, which inject does not know; %s", c.Name, c.Image, addCommand)
}

// allOrNone leaves the whole pod unchanged when an app that should be wrapped cannot be (a
// wrapped app would tell the sidecars to quit while that one still runs), or when Kubernetes
// already does what sidesync would (every sidecar native with a startup probe), and warns about
// apps left unwrapped beside wrapped ones.
func (p *plan) allOrNone(o Options) {
	if !o.Force && p.nativeDone() {
		// no wrapper: an app without a command needs none of its image's, nor a registry read
		p.unchanged, p.unchangedApps = notNeeded, "sidesync is not needed"
		return
	}
	for _, d := range p.decisions {
		if d.unwrappable != "" {
			p.unchanged, p.unchangedApps = "an app container cannot be wrapped", "another app of the pod cannot be"
			p.warnings = append(p.warnings, d.unwrappable)
		}
	}
	if p.unchanged != "" && len(p.decisions) > 1 {
		p.warnings = append(p.warnings, "no container of the pod is wrapped: inject wraps every app of a pod or none, so that the sidecars are never told to quit while an app still runs")
	}
	if p.unchanged == "" && !o.Force && p.nativeOnly() {
		p.unchanged = "every sidecar is native with a startup probe: Kubernetes starts the apps after them and stops them after the apps end, so sidesync is not needed (--force wraps anyway)"
		p.unchangedApps = "sidesync is not needed"
	}

	if p.unchanged != "" || len(p.wrapped()) == 0 {
		return
	}
	for _, d := range p.decisions {
		if d.act == leave {
			p.warnings = append(p.warnings, fmt.Sprintf("container %s is not wrapped (%s): the sidecars are told to quit once the wrapped containers have ended, whether it still runs or not", d.c.Name, d.why))
		}
	}
}

// nativeOnly reports whether the pod has sidecars, all of them native with a startup probe
// (catalog.Pod.NativeOnly), and no wrapped container yet: a pod wrapped before stays wrapped.
func (p *plan) nativeOnly() bool {
	return !slices.ContainsFunc(p.decisions, func(d decision) bool { return d.act == keep }) && p.sorted.NativeOnly()
}

// wrapped are the decisions that leave an app wrapped: wrapped now, or before.
func (p *plan) wrapped() []decision {
	var out []decision
	for _, d := range p.decisions {
		if d.act == wrap || d.act == keep {
			out = append(out, d)
		}
	}
	return out
}

// checkSelection checks the names given to wrap: each must be an app container.
func (p *plan) checkSelection(names []string) error {
	for _, n := range names {
		isName := func(c *manifest.Container) bool { return c.Name == n }
		switch {
		case slices.ContainsFunc(p.sorted.Apps, isName):
			continue
		case slices.ContainsFunc(p.sorted.Sidecars, func(s *catalog.Sidecar) bool { return s.Container != nil && s.Container.Name == n }):
			return fmt.Errorf("container %s is a sidecar: sidesync never wraps sidecars", n)
		case slices.ContainsFunc(p.sorted.Stopped, func(s catalog.Stopped) bool { return s.Container.Name == n }):
			return fmt.Errorf("container %s is stopped by its orchestrator: sidesync never wraps it", n)
		case slices.ContainsFunc(p.pod.InitContainers, isName):
			return fmt.Errorf("container %s is an init container: sidesync wraps only regular containers", n)
		}
		var have []string
		for _, c := range p.sorted.Apps {
			have = append(have, c.Name)
		}
		return fmt.Errorf("no app container %s (the app containers are %s)", n, strings.Join(have, ", "))
	}
	return nil
}

// wrapped reports whether inject wrapped the container before: its command is [Binary]. Inject
// brings such an app up to date (refreshContainer) rather than wrap it again.
func wrapped(c *manifest.Container) bool { return slices.Equal(c.Command, []string{contract.Binary}) }

// WrappedCEL is wrapped in CEL, for the container that the CEL expression c names (as the API
// server hands it: no command field when it has none). The admission policy, which cannot bring
// a wrapped container up to date, leaves alone a pod with such an app.
func WrappedCEL(c string) string {
	return "(has(" + c + ".command) && " + c + ".command == " + catalog.CELList([]string{contract.Binary}) + ")"
}

// wrappable reports whether inject keeps an app wrapped or wraps it, as far as its command tells
// (decide): it was wrapped before, or it does not run sidesync by hand. Inject mounts its
// volumes below contract.Owned in such a container (clashContainer).
func wrappable(c *manifest.Container) bool { return wrapped(c) || !contract.RunsSidesync(c.Command) }

// wrappableCEL is wrappable in CEL, for the container that the CEL expression c names.
func wrappableCEL(c string) string {
	return "(" + WrappedCEL(c) + " || !" + contract.RunsSidesyncCEL(c) + ")"
}

// hasCommand reports whether the container has a command of its own, which inject wraps as it
// is (decide); one without runs its image's ENTRYPOINT, which inject knows only when it was
// read from the registry (Entrypoints), and otherwise cannot wrap.
func hasCommand(c *manifest.Container) bool { return len(c.Command) > 0 }

// HasCommandCEL is hasCommand in CEL, for the container that the CEL expression c names. The
// admission policy, which cannot read a registry, leaves alone a pod with an app without one, as
// Apply does without Entrypoints (allOrNone).
func HasCommandCEL(c string) string {
	return "(has(" + c + ".command) && size(" + c + ".command) > 0)"
}
