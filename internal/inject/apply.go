package inject

import (
	"fmt"
	"slices"
)

// Apply puts sidesync into obj, a Pod (v1), Job or CronJob (batch/v1) decoded from JSON or
// YAML, and returns the result with a report; obj itself is not changed. An object of any
// other kind comes back unchanged, and so does a pod in which no container can be wrapped.
// Fields inject does not own are kept as they are, unknown ones included.
//
// In the pod, every regular container that is selected (Options.Containers) and is not a known
// sidecar gets command [contract.Binary] and args [flags..., "--", its argv...]; the binary's volume
// (per Options.Delivery), the pod-info volume and their mounts are added; contract.SidecarsAnnotation
// records the sidecars the manifest shows and contract.InjectedAnnotation what inject did. A container
// without a command is wrapped only when eps has its image (see Images); otherwise a warning
// says what to add.
//
// Apply is idempotent: applied to its own result with the same options, it returns the same
// object (Report.Changed false). Whether a container is wrapped is read from the container
// itself (its command is [contract.Binary]), and everything else inject adds is found by its name and
// replaced, so a second Apply with another Delivery switches cleanly.
//
// The error is about the input (a container that is not an object, a name in
// Options.Containers that the pod lacks) or the options; it names the field.
func Apply(obj map[string]any, o Options, eps Entrypoints) (map[string]any, Report, error) {
	r := Report{Object: objectName(obj)}
	if err := o.Validate(); err != nil {
		return nil, r, err
	}
	out, _ := deepCopy(obj).(map[string]any)
	p, reason, err := planObject(out, o, eps)
	if err != nil {
		return nil, r, fmt.Errorf("%s: %w", r.Object, err)
	}
	if p == nil {
		r.Reason = reason
		return out, r, nil
	}
	r.Injected = true
	p.fill(&r)
	if len(r.Wrapped)+len(r.AlreadyWrapped) == 0 {
		return out, r, nil // planning changed nothing
	}
	r.Delivery = o.delivery()
	if err := p.mutate(o); err != nil {
		return nil, r, fmt.Errorf("%s: %w", r.Object, err)
	}
	r.Changed = !sameJSON(obj, out)
	return out, r, nil
}

// Images lists the images whose ENTRYPOINT and CMD Apply needs for obj: those of the
// containers it would wrap that have no command. The caller reads them from the registry and
// gives them to Apply as Entrypoints. Its error is Apply's.
func Images(obj map[string]any, o Options) ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p, _, err := planObject(obj, o, nil)
	if err != nil || p == nil {
		return nil, err
	}
	var images []string
	for _, d := range p.decisions {
		if d.needsImage && d.c.image != "" && !slices.Contains(images, d.c.image) {
			images = append(images, d.c.image)
		}
	}
	return images, nil
}

// planObject plans the pod of obj; nil, and why, for an object inject leaves alone.
func planObject(obj map[string]any, o Options, eps Entrypoints) (*plan, string, error) {
	t, err := templateOf(obj)
	switch {
	case err != nil:
		return nil, "", err
	case t == nil:
		return nil, fmt.Sprintf("kind %s %s is not injected", str(obj, "kind"), str(obj, "apiVersion")), nil
	case t.windows():
		return nil, "a Windows pod: sidesync runs on Linux", nil
	}
	p, err := planPod(t, o, eps)
	return p, "", err
}

// fill writes the plan into the report.
func (p *plan) fill(r *Report) {
	for _, d := range p.decisions {
		switch d.act {
		case wrap:
			r.Wrapped = append(r.Wrapped, d.c.name)
		case keep:
			r.AlreadyWrapped = append(r.AlreadyWrapped, d.c.name)
		default:
			r.Left = append(r.Left, Left{d.c.name, d.why})
		}
	}
	r.Left = slices.Concat(p.left, r.Left)
	r.Sidecars = p.sidecars
	r.Warnings = p.warnings
	if str(p.t.spec, "restartPolicy") == "" && p.t.path != "" {
		r.Warnings = append(r.Warnings, "the pod template has no restartPolicy: a Job's pods need Never or OnFailure")
	}
}

// mutate carries the plan out.
func (p *plan) mutate(o Options) error {
	var wrapped []string
	for _, d := range p.decisions {
		var err error
		switch d.act {
		case wrap:
			err = wrapContainer(d, o, p.t.restartPolicy())
		case keep:
			err = refreshContainer(d, p.t.restartPolicy())
		default:
			continue
		}
		if err != nil {
			return err
		}
		wrapped = append(wrapped, d.c.name)
	}
	if err := deliver(p.t, o); err != nil {
		return err
	}
	annotate(p.t, o, wrapped, p.sidecars)
	return nil
}
