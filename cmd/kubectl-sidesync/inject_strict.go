package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	workload "github.com/sidesync/sidesync/internal/shared/manifest"
)

// imageUsers maps an image that inject needs resolved to the containers that need it, each as
// "container NAME of KIND/NAME (document N)", for --strict's error.
type imageUsers map[string][]string

// add records the containers of obj that need an image resolved: those inject.Images names
// when asked about that container alone. Containers inject cannot select (init containers,
// sidecars) need no image.
func (u imageUsers) add(obj map[string]any, tm workload.TypeMeta, o inject.Options, where string) {
	_, r, err := inject.Apply(obj, tm, o, nil)
	if err != nil {
		return // inject.Images, asked first, has said what is wrong
	}
	for _, l := range r.Left {
		if len(o.Containers) > 0 && !slices.Contains(o.Containers, l.Container) {
			continue
		}
		one := o
		one.Containers = []string{l.Container}
		images, err := inject.Images(obj, tm, one)
		if err != nil {
			continue
		}
		for _, image := range images {
			u[image] = append(u[image], fmt.Sprintf("container %s of %s (%s)", l.Container, r.Object, where))
		}
	}
}

// strictError is --strict's refusal: one line per image that could not be resolved, in the
// order of images, naming the containers that need it and why it could not be read.
func strictError(images []string, errs map[string]error, users imageUsers) error {
	var lines []string
	for _, image := range images {
		if err := errs[image]; err != nil {
			lines = append(lines, fmt.Sprintf("  %s, for %s: %v", image, strings.Join(users[image], ", "), err))
		}
	}
	return fmt.Errorf("--strict: %d of %d images could not be read from their registries, so their containers would be left unwrapped; nothing is written:\n%s",
		len(lines), len(images), strings.Join(lines, "\n"))
}
