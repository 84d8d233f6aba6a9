package inject

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/contract"

	"github.com/sidesync/sidesync/internal/detect"
)

// action is what inject does with a container.
type action int

const (
	leave action = iota // leave it as it is (why says why)
	wrap                // wrap it now
	keep                // it is wrapped already: refresh what inject owns around it
)

// decision is what inject does with one container, decided before anything changes.
type decision struct {
	c      *ctr
	act    action
	why    string   // leave: the reason, for the report
	argv   []string // wrap: what runs after "--"; nil when the wrapper picks per platform
	byPlat map[string][]string
	pinned string // wrap: the image pinned to a digest, or ""
	// needsImage marks a container left alone for want of its image's ENTRYPOINT.
	needsImage bool
}

// plan is everything inject decided about a pod.
type plan struct {
	t         *template
	decisions []decision // the regular containers, in order
	left      []Left     // the init containers, with why they are left alone
	sidecars  []string   // the sidecars the manifest shows, as --sidecar values
	warnings  []string
}

// planPod decides what happens to every container of the pod, changing nothing.
func planPod(t *template, o Options, eps Entrypoints) (*plan, error) {
	regular, err := containersAt(t.spec, "containers", t.specPath())
	if err != nil {
		return nil, err
	}
	if len(regular) == 0 {
		return nil, fmt.Errorf("%s: no containers", join(t.specPath(), "containers"))
	}
	inits, err := containersAt(t.spec, "initContainers", t.specPath())
	if err != nil {
		return nil, err
	}
	if err := checkUniqueNames(t, inits, regular); err != nil {
		return nil, err
	}
	if err := checkSelection(regular, inits, o.Containers); err != nil {
		return nil, err
	}
	p := &plan{t: t}
	for _, c := range inits {
		p.initContainer(c)
	}
	for _, c := range regular {
		p.decisions = append(p.decisions, p.decide(c, o, eps))
	}
	return p, nil
}

// checkUniqueNames refuses a pod in which two containers (init or regular) share a name: the
// API server refuses it too, and what inject would wrap or report under that name would be
// ambiguous (found by FuzzApply: of two containers "a", one was wrapped, and the report could
// not say which).
func checkUniqueNames(t *template, groups ...[]*ctr) error {
	seen := map[string]bool{}
	for _, cs := range groups {
		for _, c := range cs {
			if seen[c.name] {
				return fmt.Errorf("%s: container name %q is used twice (the API server refuses such a pod)", t.specPath(), c.name)
			}
			seen[c.name] = true
		}
	}
	return nil
}

// initContainer records an init container: never wrapped; a native sidecar that detection
// knows goes into the sidecars annotation.
func (p *plan) initContainer(c *ctr) {
	switch {
	case c.name == contract.InitContainer:
		return // inject's own
	case !c.native():
		p.left = append(p.left, Left{c.name, "an init container"})
	default:
		if _, spec, ok := detect.ManifestSidecar(manifestContainer(c, true)); ok {
			p.addSidecar(spec)
			p.left = append(p.left, Left{c.name, "a native sidecar: " + profileOf(spec)})
			return
		}
		p.left = append(p.left, Left{c.name, "a native sidecar"})
	}
}

// decide says what to do with a regular container.
func (p *plan) decide(c *ctr, o Options, eps Entrypoints) decision {
	switch {
	case c.wrapped():
		return decision{c: c, act: keep}
	case c.runsSidesync():
		return decision{c: c, act: leave, why: "runs sidesync already"}
	}
	if f, spec, ok := detect.ManifestSidecar(manifestContainer(c, false)); ok {
		p.addSidecar(spec)
		for _, n := range f.Notes {
			p.warnings = append(p.warnings, fmt.Sprintf("container %s: %s", c.name, n))
		}
		return decision{c: c, act: leave, why: "a known sidecar: " + profileOf(spec)}
	}
	if len(o.Containers) > 0 && !slices.Contains(o.Containers, c.name) {
		return decision{c: c, act: leave, why: "not selected"}
	}
	if len(c.command) > 0 {
		return decision{c: c, act: wrap, argv: Argv(c.command, c.args, ImageCommand{})}
	}
	img, ok := eps[c.image]
	if !ok {
		p.warnings = append(p.warnings, noCommandWarning(c))
		return decision{c: c, act: leave, why: "no command", needsImage: true}
	}
	return p.resolved(c, img)
}

// resolved decides for a container without a command whose image was resolved: one argv
// inlined when every platform runs the same, else the wrapper picks its platform's.
func (p *plan) resolved(c *ctr, img ResolvedImage) decision {
	byPlat := platformArgv(c.args, img)
	argv, same := sameArgv(byPlat)
	switch {
	case len(byPlat) == 0:
		p.warnings = append(p.warnings, fmt.Sprintf("container %s: no platform of image %s was read; %s", c.name, c.image, addCommand))
		return decision{c: c, act: leave, why: "no command"}
	case same && len(argv) == 0:
		p.warnings = append(p.warnings, fmt.Sprintf("container %s: image %s has neither ENTRYPOINT nor CMD, and the container no args: nothing to run", c.name, c.image))
		return decision{c: c, act: leave, why: "nothing to run"}
	case same:
		return decision{c: c, act: wrap, argv: argv, pinned: img.Pinned}
	case slices.ContainsFunc(c.args, func(a string) bool { return strings.Contains(a, "$(") }):
		// The argv goes into an env value as JSON; a variable's value expanded into it could
		// break the JSON, so what would run is no longer certain.
		p.warnings = append(p.warnings, fmt.Sprintf("container %s: image %s runs a different ENTRYPOINT or CMD per platform and the args use $(VAR), which cannot be passed per platform; %s", c.name, c.image, addCommand))
		return decision{c: c, act: leave, why: "no command"}
	}
	if err := checkPlatformCommands(byPlat); err != nil {
		p.warnings = append(p.warnings, fmt.Sprintf("container %s: image %s: its commands per platform are not a value the wrapper takes (%v); %s", c.name, c.image, err, addCommand))
		return decision{c: c, act: leave, why: "no command"}
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

func noCommandWarning(c *ctr) string {
	return fmt.Sprintf("container %s was not wrapped: it has no command, so the ENTRYPOINT of its image %s decides what runs, which inject does not know; %s", c.name, c.image, addCommand)
}

// addSidecar records a sidecar the manifest shows, once.
func (p *plan) addSidecar(spec string) {
	if !slices.Contains(p.sidecars, spec) {
		p.sidecars = append(p.sidecars, spec)
	}
}

// checkSelection checks the names given to wrap: each must be a regular container that is not
// a known sidecar.
func checkSelection(regular, inits []*ctr, names []string) error {
	for _, n := range names {
		isName := func(c *ctr) bool { return c.name == n }
		if i := slices.IndexFunc(regular, isName); i >= 0 {
			if f, _, ok := detect.ManifestSidecar(manifestContainer(regular[i], false)); ok {
				return fmt.Errorf("container %s is a known sidecar (%s): sidesync never wraps sidecars", n, f.Sidecar.Name)
			}
			continue
		}
		if slices.ContainsFunc(inits, isName) {
			return fmt.Errorf("container %s is an init container: sidesync wraps only regular containers", n)
		}
		var have []string
		for _, c := range regular {
			have = append(have, c.name)
		}
		return fmt.Errorf("no container %s (the containers are %s)", n, strings.Join(have, ", "))
	}
	return nil
}

// manifestContainer is c as detection reads it.
func manifestContainer(c *ctr, native bool) detect.ManifestContainer {
	_, probe := c.m["startupProbe"].(map[string]any)
	return detect.ManifestContainer{Name: c.name, Image: c.image, Command: c.command, Args: c.args,
		Native: native, StartupProbe: probe}
}

// profileOf is the profile of a --sidecar value.
func profileOf(spec string) string {
	name, _, _ := strings.Cut(spec, ":")
	return name
}
