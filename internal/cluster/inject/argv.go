package inject

import (
	"slices"
	"strings"
)

// Entrypoints maps an image reference, exactly as a container names it, to what the registry
// says about that image. The caller reads them before Apply (see Images), which keeps Apply
// free of I/O; `kubectl sidesync inject --resolve` does it with go-containerregistry.
type Entrypoints map[string]ResolvedImage

// ResolvedImage is what a registry said about an image.
type ResolvedImage struct {
	// Pinned is the reference pinned to the digest that was read ("repo@sha256:..."), which a
	// wrapped container then runs, so that the ENTRYPOINT inject inlined is the one that runs
	// even if the tag moves. Empty keeps the container's image.
	Pinned string
	// Platforms maps each platform the image has, "os/arch[/variant]" ("linux/arm64/v8"), to
	// the ENTRYPOINT and CMD of its config there.
	Platforms map[string]ImageCommand
}

// ImageCommand is the ENTRYPOINT and CMD of an image's config.
type ImageCommand struct {
	Entrypoint []string
	Cmd        []string
}

// Argv is the argv that Kubernetes runs for a container with the given command and args, whose
// image's config says img, by the rules of
// https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/#notes:
//
//   - neither command nor args: the image's ENTRYPOINT, then its CMD;
//   - command only: the command; the image's ENTRYPOINT and CMD are ignored;
//   - args only: the image's ENTRYPOINT, then the args (its CMD is ignored; with no ENTRYPOINT
//     the args run alone);
//   - command and args: the command, then the args.
//
// Words from the image's config are escaped for kubelet's $(VAR) expansion (see escapeWords),
// since Argv's result goes into args, where kubelet expands, and Docker never expanded them; the
// container's own words are kept as they are, so their $(VAR) references still work.
func Argv(command, args []string, img ImageCommand) []string {
	switch {
	case len(command) > 0:
		return slices.Concat(command, args)
	case len(args) > 0:
		return slices.Concat(escapeWords(img.Entrypoint), args)
	}
	return slices.Concat(escapeWords(img.Entrypoint), escapeWords(img.Cmd))
}

// escapeWords makes words survive kubelet's expansion of command, args and env values unchanged:
// kubelet turns "$$" into "$" and "$(NAME)" into the variable's value, and leaves every other
// "$" alone, so doubling every "$" is its exact inverse ("$(HOME)" becomes "$$(HOME)", and a
// literal "a$$b" stays "a$$b" instead of losing a dollar).
func escapeWords(words []string) []string {
	var out []string
	for _, w := range words {
		out = append(out, strings.ReplaceAll(w, "$", "$$"))
	}
	return out
}

// platformArgv is, for a container without a command whose image was resolved, the argv on
// every platform of the image.
func platformArgv(args []string, img ResolvedImage) map[string][]string {
	m := make(map[string][]string, len(img.Platforms))
	for p, ic := range img.Platforms {
		m[p] = Argv(nil, args, ic)
	}
	return m
}

// sameArgv returns the argv that every platform runs, if they agree.
func sameArgv(byPlatform map[string][]string) ([]string, bool) {
	var first []string
	n := 0
	for _, argv := range byPlatform {
		if n > 0 && !slices.Equal(argv, first) {
			return nil, false
		}
		first, n = argv, n+1
	}
	return first, n > 0
}
