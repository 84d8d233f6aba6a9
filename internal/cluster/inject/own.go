package inject

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// ownedVolumes are the volumes inject adds, with the one source each may have.
var ownedVolumes = map[string][]string{
	contract.BinVolume:     {"emptyDir", "image"},
	contract.PodInfoVolume: {"downwardAPI"},
	contract.StateVolume:   {"emptyDir"},
}

// checkOwned refuses a pod in which a name or a path inject owns is used by something inject did
// not add: replacing it would drop the user's volume, mount or container (a Secret swapped for
// an emptyDir), and leaving both would give names or mount paths the API server refuses. What
// inject added is known by the pod's contract.InjectedAnnotation and by its shape.
func (p *plan) checkOwned() error {
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
		if sources, owned := ownedVolumes[name]; owned && (!p.injected || !hasOneOf(m, sources) && len(m) > 1) {
			return clash(fmt.Sprintf("%s.volumes[%d]", spec, i), "volume "+name, "a volume")
		}
	}
	for _, c := range p.pod.All() {
		if err := p.checkContainer(c); err != nil {
			return err
		}
	}
	return nil
}

// checkContainer refuses a container that takes inject's install container's name, or mounts
// inject's volumes or a path below /sidesync where inject would not.
func (p *plan) checkContainer(c *manifest.Container) error {
	if c.Name == contract.InitContainer && (!c.Init || !p.injected || !slices.Equal(c.Command, installCommand())) {
		return clash(c.Path, "container name "+contract.InitContainer, "its install init container")
	}
	mounts, err := manifest.ListAt(c.M, "volumeMounts", c.Path)
	if err != nil {
		return err
	}
	ours := c.Name == contract.InitContainer || wrapped(c) && p.injected
	// an app that is or will be wrapped: inject mounts its own volumes below /sidesync there
	wrappable := slices.Contains(p.sorted.Apps, c) && (wrapped(c) || !contract.RunsSidesync(c.Command))
	for i, e := range mounts {
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.volumeMounts[%d]: not an object", c.Path, i)
		}
		name, at := manifest.Str(m, "name"), manifest.Str(m, "mountPath")
		where := fmt.Sprintf("%s.volumeMounts[%d]", c.Path, i)
		_, ownedVolume := ownedVolumes[name]
		switch {
		case ownedVolume && !ours:
			return clash(where, "volume "+name, "a volume it mounts in the containers it wraps")
		case !ownedVolume && wrappable && below(at, contract.Owned):
			return clash(where, "path "+at, "where it mounts its binary, the pod's annotations and its state")
		}
	}
	return nil
}

// clash is the error for a name or path inject owns used by something else.
func clash(where, what, whose string) error {
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
