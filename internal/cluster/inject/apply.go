package inject

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Apply puts sidesync into obj, a Pod (v1), Job or CronJob (batch/v1) decoded from JSON or
// YAML (an item of a List inherits the list's type through tm), and returns the result with a
// report; obj itself is not changed. An object of any other kind or API version comes back
// unchanged (the report says why: a batch/v1beta1 CronJob is to be upgraded), and so does a pod
// in which sidesync has nothing to do or cannot wrap every app. Fields inject does not own are
// kept as they are, unknown ones included.
//
// In the pod, every app container (a regular container that is neither a sidecar the catalog
// knows nor one its orchestrator stops; or those Options.Containers selects) gets command
// [contract.Binary] and args [flags..., "--", its argv...]; the binary's volume (per
// Options.Delivery), the pod-info volume, with several apps their shared state volume, and their
// mounts are added; annotations record what inject did, the wrapped containers (the wrappers'
// peers) and the sidecars the manifest shows. Either every app is wrapped or none: an app
// without a command whose image was not resolved (see Images) leaves the whole pod unchanged,
// with a warning that says what to add.
//
// Apply is idempotent: applied to its own result with the same options, it returns the same
// object (Report.Changed false). A container wrapped before is brought up to date (the flags
// inject owns, its restart settings, its mounts), so a second Apply with other options or
// another Delivery switches cleanly.
//
// The error is about the input (a field of the wrong type, two containers of one name, a name
// inject owns used by something it did not add, a selected container that is no app) or the
// options; it names the field.
func Apply(obj map[string]any, tm manifest.TypeMeta, o Options, eps Entrypoints) (map[string]any, Report, error) {
	r := Report{Object: manifest.Name(obj, tm)}
	if err := o.Validate(); err != nil {
		return nil, r, err
	}
	out, _ := deepCopy(obj).(map[string]any)
	p, reason, err := planObject(out, tm, o, eps)
	if err != nil {
		return nil, r, fmt.Errorf("%s: %w", r.Object, err)
	}
	if p == nil {
		r.Reason = reason
		return out, r, nil
	}
	r.Injected = true
	p.fill(&r)
	if p.unchanged != "" || len(p.wrapped()) == 0 {
		r.Reason = p.unchanged
		r.Changed = len(p.conv) > 0 && !sameJSON(obj, out) // planning changes only what Native converts
		r.Needs = needs(p.pod, "")
		return out, r, nil
	}
	r.Delivery = o.delivery()
	if err := p.mutate(o, &r); err != nil {
		return nil, r, fmt.Errorf("%s: %w", r.Object, err)
	}
	r.Changed = !sameJSON(obj, out)
	r.Needs = needs(p.pod, r.Delivery)
	return out, r, nil
}

// Images lists the images whose ENTRYPOINT and CMD Apply needs for obj: those of the app
// containers it would wrap that have no command. The caller reads them from the registry and
// gives them to Apply as Entrypoints. Its error is Apply's.
func Images(obj map[string]any, tm manifest.TypeMeta, o Options) ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Native {
		obj, _ = deepCopy(obj).(map[string]any) // planning converts, on a copy
	}
	p, _, err := planObject(obj, tm, o, nil)
	if err != nil || p == nil || p.unchanged == notNeeded {
		return nil, err // a pod that needs no wrapper needs no image's command
	}
	var images []string
	for _, d := range p.decisions {
		if d.needsImage && d.c.Image != "" && !slices.Contains(images, d.c.Image) {
			images = append(images, d.c.Image)
		}
	}
	return images, nil
}

// planObject plans the pod of obj; nil, and why, for an object inject leaves alone.
func planObject(obj map[string]any, tm manifest.TypeMeta, o Options, eps Entrypoints) (*plan, string, error) {
	w, err := manifest.Locate(obj, tm)
	var unsupported *manifest.Unsupported
	switch {
	case errors.As(err, &unsupported):
		return nil, unsupported.Reason, nil
	case err != nil:
		return nil, "", err
	case w == nil:
		return nil, fmt.Sprintf("kind %s %s is not injected: only Pods, Jobs and CronJobs are", manifest.Str(obj, "kind"), manifest.Str(obj, "apiVersion")), nil
	}
	p, err := planPod(w, o, eps)
	if err != nil {
		return nil, "", err
	}
	if p.pod.OS == "windows" {
		return nil, "a Windows pod: sidesync runs on Linux", nil
	}
	return p, "", nil
}

// fill writes the plan into the report.
func (p *plan) fill(r *Report) {
	for _, d := range p.decisions {
		switch {
		case p.unchanged == notNeeded:
			r.Left = append(r.Left, Left{d.c.Name, "not wrapped: " + p.unchangedApps})
		case d.unwrappable != "":
			r.Left = append(r.Left, Left{d.c.Name, "no command"})
		case d.act == leave:
			r.Left = append(r.Left, Left{d.c.Name, d.why})
		case p.unchanged != "" && d.act == keep:
			r.Left = append(r.Left, Left{d.c.Name, "wrapped before, not updated: " + p.unchangedApps})
		case p.unchanged != "":
			r.Left = append(r.Left, Left{d.c.Name, "not wrapped: " + p.unchangedApps})
		case d.act == wrap:
			r.Wrapped = append(r.Wrapped, d.c.Name)
		default:
			r.AlreadyWrapped = append(r.AlreadyWrapped, d.c.Name)
		}
	}
	r.Left = slices.Concat(p.left, r.Left)
	order := map[string]int{}
	for i, c := range p.pod.All() {
		order[c.Name] = i
	}
	slices.SortStableFunc(r.Left, func(a, b Left) int { return order[a.Container] - order[b.Container] })
	r.Sidecars = p.found
	r.Warnings = p.warnings
	p.fillNative(r)
	if p.pod.RestartPolicy == "" && p.w.Kind != manifest.Pod {
		r.Warnings = append(r.Warnings, "the pod template has no restartPolicy: a Job's pods need Never or OnFailure")
	}
}

// mutate carries the plan out, and records which wrapped containers it brought up to date.
func (p *plan) mutate(o Options, r *Report) error {
	ws := p.wrapped()
	var names []string
	for _, d := range ws {
		names = append(names, d.c.Name)
	}
	for _, d := range ws {
		before, _ := deepCopy(d.c.M).(map[string]any)
		var err error
		if d.act == wrap {
			err = wrapContainer(d, o, p.pod, len(ws))
		} else {
			err = refreshContainer(d, o, p.pod, len(ws))
		}
		if err != nil {
			return err
		}
		if d.act == keep && !sameJSON(before, d.c.M) {
			r.Updated = append(r.Updated, d.c.Name)
		}
	}
	if err := deliver(p.pod, o, len(ws)); err != nil {
		return err
	}
	annotate(p.w.Template, o, names, p.found)
	return nil
}
