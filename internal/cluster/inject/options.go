package inject

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/config"
)

// Delivery is how the sidesync binary gets into the pod.
type Delivery string

// The deliveries.
const (
	// InitCopy copies the binary from the sidesync image into an emptyDir with an init container
	// placed first: works on every Kubernetes version and runtime.
	InitCopy Delivery = "init-copy"
	// ImageVolume mounts the sidesync image itself as a volume (Kubernetes >= 1.35, containerd
	// >= 2.1 or CRI-O >= 1.31): no init container.
	ImageVolume Delivery = "image-volume"
)

// Options says how to inject. The zero Delivery is InitCopy; Version and Image are required.
type Options struct {
	// Version is the sidesync version recorded in contract.InjectedAnnotation.
	Version string
	// Image is the sidesync image: the install init container's image (InitCopy) or the image
	// volume's reference (ImageVolume).
	Image    string
	Delivery Delivery
	// Sidecars are --sidecar values given to every wrapper, in sidesync's syntax
	// ("cloudsql:ready-port=9190,quit-port=9191"). Any turns the wrapper's own detection off, so
	// inject never derives them from the manifest: it records what the manifest shows in
	// contract.FoundAnnotation instead.
	Sidecars []string
	// Containers are the names of the app containers to wrap; none means every app container
	// (every regular container that is neither a known sidecar nor one its orchestrator stops).
	// A name the pod does not have, or that names an init container, a sidecar or an
	// orchestrator's container, is an error.
	Containers []string
	// Force wraps the apps of a pod whose sidecars are all native with startup probes, which
	// Kubernetes already orders and stops (such a pod is left unchanged otherwise).
	Force bool
	// Native turns classic sidecars that the pod holds into native ones where it can (an init
	// container with restartPolicy Always and a startup probe from the catalog), and asks the
	// meshes that the pod requests for native sidecars through their own annotations; a pod
	// left with no classic sidecar needs no wrapper. False keeps inject as it was. Callers
	// resolve NativeMode into it (NativeMode.Native).
	Native bool
}

// Validate lists every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Version == "" || strings.ContainsAny(o.Version, " \t\n") {
		errs = append(errs, fmt.Errorf("version %q: empty or with spaces", o.Version))
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		errs = append(errs, fmt.Errorf("image %q: empty or with spaces", o.Image))
	}
	if o.delivery() != InitCopy && o.delivery() != ImageVolume {
		errs = append(errs, fmt.Errorf("delivery %q: not %s or %s", o.Delivery, InitCopy, ImageVolume))
	}
	for _, s := range o.Sidecars {
		if err := checkSpec(s); err != nil {
			errs = append(errs, fmt.Errorf("sidecar %q: %w", s, err))
		}
	}
	for i, c := range o.Containers {
		switch {
		case c == "" || strings.ContainsAny(c, " \t\n,"):
			errs = append(errs, fmt.Errorf("container %q: not a container name", c))
		case slices.Contains(o.Containers[:i], c):
			errs = append(errs, fmt.Errorf("container %q: named twice", c))
		}
	}
	return errors.Join(errs...)
}

// delivery is o.Delivery with its default.
func (o Options) delivery() Delivery {
	if o.Delivery == "" {
		return InitCopy
	}
	return o.Delivery
}

// checkSpec checks a --sidecar value with the wrapper's own parser, so that a value inject
// accepts is one the wrapper accepts.
func checkSpec(s string) error {
	parsed, err := config.ParseSidecars(s, func(string) (string, bool) { return "", false })
	switch {
	case err != nil:
		return err
	case len(parsed) == 0:
		return errors.New("no sidecar named")
	}
	return nil
}
