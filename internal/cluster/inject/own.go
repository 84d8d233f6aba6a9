package inject

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// The names and paths inject owns, and the rule that refuses a pod in which something inject
// did not add uses them, each in two renderings side by side: Go, which Apply runs (clash), and
// CEL, which the admission policy runs in the API server (ClashCEL). cel_test.go evaluates both
// over the corpus, the examples, inject's testdata and synthetic pods, as the API server
// evaluates CEL, and checks that they agree.

// ownedVolumes are the volumes inject adds, with the one source each may have.
var ownedVolumes = map[string][]string{
	contract.BinVolume:     {"emptyDir", "image"},
	contract.PodInfoVolume: {"downwardAPI"},
	contract.StateVolume:   {"emptyDir"},
}

// ownedVolumeNames are the names of ownedVolumes, sorted: what inject adds to the pod's volumes
// and mounts in the containers it wraps.
var ownedVolumeNames = slices.Sorted(maps.Keys(ownedVolumes))

// restartEnvNames are the variables of a wrapped container's restart settings, which inject
// writes on every inject (setEnv); ownedEnvNames are every variable inject writes in a container
// it wraps: those and the commands per platform of an image resolved (wrapContainer).
var (
	restartEnvNames = []string{contract.Env(contract.FlagRestartPolicy), contract.Env(contract.FlagRestartRules)}
	ownedEnvNames   = append([]string{contract.Env(contract.FlagPlatformCommands)}, restartEnvNames...)
)

// ownedEnv, restartEnv, ownedMount, ownedVolume and ownedInit tell sidesync's items of a
// container's env and volumeMounts, and of a pod's volumes and initContainers, by name: inject
// drops them before it writes its own (wrapContainer drops every ownedEnv entry of the
// container's, which the wrapper would read in place of inject's; refreshContainer only the
// restartEnv ones, keeping the commands per platform that only a registry could renew), and
// Patch moves them by index.
var (
	ownedEnv    = named(ownedEnvNames...)
	restartEnv  = named(restartEnvNames...)
	ownedMount  = named(ownedVolumeNames...)
	ownedVolume = ownedMount
	ownedInit   = named(contract.InitContainer)
)

// named returns a test of whether an item is an object named one of names.
func named(names ...string) func(any) bool {
	return func(e any) bool {
		m, ok := e.(map[string]any)
		return ok && slices.Contains(names, manifest.Str(m, "name"))
	}
}

// OwnedEnvCEL is ownedEnv in CEL, for the env entry (an EnvVar, as the API server hands it)
// that the CEL expression e names. The admission policy, which only appends to a container's
// env, leaves alone a pod whose app sets one of these itself, where inject would drop it.
func OwnedEnvCEL(e string) string {
	return "(" + e + ".name in " + catalog.CELList(ownedEnvNames) + ")"
}

// clash refuses a pod in which a name or a path inject owns is used by something inject did
// not add: replacing it would drop the user's volume, mount or container (a Secret swapped for
// an emptyDir), and leaving both would give names or mount paths the API server refuses. What
// inject added is known by the pod's contract.InjectedAnnotation and by its shape.
func (p *plan) clash() error {
	spec := manifest.Join(p.pod.Path, "spec")
	vols, err := manifest.ListAt(p.pod.Spec, "volumes", spec)
	if err != nil {
		return err
	}
	for i, v := range vols {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.volumes[%d]: not an object", spec, i)
		}
		name := manifest.Str(m, "name")
		// A volume of sidesync's with no source at all is one a webhook that decodes pods into
		// older types stripped (an image volume's source is newer than many): inject puts it back.
		if ownedVolume(m) && (!p.injected || !hasOneOf(m, ownedVolumes[name]) && len(m) > 1) {
			return clashError(fmt.Sprintf("%s.volumes[%d]", spec, i), "volume "+name, "a volume")
		}
	}
	for _, c := range p.pod.All() {
		if err := p.clashContainer(c); err != nil {
			return err
		}
	}
	return nil
}

// clashContainer refuses a container that takes inject's install container's name, or mounts
// inject's volumes or a path below contract.Owned where inject would not.
func (p *plan) clashContainer(c *manifest.Container) error {
	if c.Name == contract.InitContainer && (!c.Init || !p.injected || !slices.Equal(c.Command, installCommand())) {
		return clashError(c.Path, "container name "+contract.InitContainer, "its install init container")
	}
	mounts, err := manifest.ListAt(c.M, "volumeMounts", c.Path)
	if err != nil {
		return err
	}
	ours := c.Name == contract.InitContainer || wrapped(c) && p.injected
	// an app that is or will be wrapped: inject mounts its own volumes below contract.Owned there
	wraps := slices.Contains(p.sorted.Apps, c) && wrappable(c)
	for i, e := range mounts {
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.volumeMounts[%d]: not an object", c.Path, i)
		}
		name, at := manifest.Str(m, "name"), manifest.Str(m, "mountPath")
		where := fmt.Sprintf("%s.volumeMounts[%d]", c.Path, i)
		switch {
		case ownedMount(m) && !ours:
			return clashError(where, "volume "+name, "a volume it mounts in the containers it wraps")
		case !ownedMount(m) && wraps && below(at, contract.Owned):
			return clashError(where, "path "+at, "where it mounts its binary, the pod's annotations and its state")
		}
	}
	return nil
}

// ClashCEL is clash in CEL, for a pod without contract.InjectedAnnotation (the only pods the
// admission policy acts on: where inject added nothing, every use of its names is a clash):
// spec is the CEL expression of the pod's spec, apps the CEL list of its app containers (the
// catalog's Pod.Apps, as catalog.SortCEL.Claim tells them). It binds the names c, m and v.
func ClashCEL(spec, apps string) string {
	names := catalog.CELList(ownedVolumeNames)
	takes := fmt.Sprintf("c.name == %s || (has(c.volumeMounts) && c.volumeMounts.exists(m, m.name in %s))", catalog.CELString(contract.InitContainer), names)
	return "(" + strings.Join([]string{
		fmt.Sprintf("(has(%[1]s.volumes) && %[1]s.volumes.exists(v, v.name in %[2]s))", spec, names),
		fmt.Sprintf("(has(%[1]s.initContainers) && %[1]s.initContainers.exists(c, %[2]s))", spec, takes),
		fmt.Sprintf("%s.containers.exists(c, %s)", spec, takes),
		fmt.Sprintf("%s.exists(c, %s && has(c.volumeMounts) && c.volumeMounts.exists(m, %s))", apps, wrappableCEL("c"), belowCEL("m.mountPath", contract.Owned)),
	}, " || ") + ")"
}

// clashError is the error for a name or path inject owns used by something else.
func clashError(where, what, whose string) error {
	return fmt.Errorf("%s: the %s belongs to sidesync (%s), and inject did not add this one; rename it, or remove it if an earlier sidesync left it", where, what, whose)
}

// hasOneOf reports whether a volume has one of the given sources.
func hasOneOf(v map[string]any, sources []string) bool {
	return slices.ContainsFunc(sources, func(s string) bool { _, ok := v[s]; return ok })
}

// below reports whether path is dir or below it.
func below(path, dir string) bool {
	path = strings.TrimRight(path, "/")
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// belowCEL is below in CEL, for the path that the CEL expression path names: dir itself, or dir
// and a slash and anything (trailing slashes are what below trims).
func belowCEL(path, dir string) string {
	return path + ".matches(" + catalog.CELString("^"+regexp.QuoteMeta(dir)+"(/|$)") + ")"
}
