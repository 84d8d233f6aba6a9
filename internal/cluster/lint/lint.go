// Package lint says, before anything is applied, whether a Pod, Job or CronJob will hang or
// misbehave with its sidecars: a classic sidecar that nothing tells to quit, a quit endpoint that
// is off, a native sidecar that Kubernetes does not wait for, a podFailurePolicy that sidecars'
// exit codes trip, restart settings that restart the app after its sidecars were told to quit.
// Each finding says what to change. It is pure: objects in, findings out, no I/O.
//
// It sorts a pod with the catalog of sidecars (internal/shared/catalog) as detection and inject do,
// reads a wrapped container's settings with the wrapper's own parser (internal/shared/config) and its
// restarts with the wrapper's own decision (internal/shared/restart), so that it predicts what sidesync
// will do.
package lint

import (
	"fmt"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Severity says how bad a finding is. Only errors make `kubectl sidesync lint` fail.
type Severity string

// Severities, from the worst.
const (
	// Error: the workload will hang or fail because of its sidecars.
	Error Severity = "error"
	// Warning: it may misbehave (start before its sidecar is ready, miscount a failure).
	Warning Severity = "warning"
	// Info: worth knowing, not counted.
	Info Severity = "info"
)

// Finding is one thing lint found in one object.
type Finding struct {
	Object    string   `json:"object"`              // "Job/report"
	Namespace string   `json:"namespace,omitempty"` // the object's, when read from a cluster
	Severity  Severity `json:"severity"`            // error, warning or info
	Rule      string   `json:"rule"`                // a stable name for the check, e.g. RuleNeverQuits
	Container string   `json:"container,omitempty"` // the container it is about, if one
	Message   string   `json:"message"`             // what is wrong and what follows from it
	Fix       string   `json:"fix,omitempty"`       // what to change
}

// String is the finding as one line: "Job/report: error: MESSAGE; FIX", and for an object read
// from a cluster "Job/report -n team-a: error: MESSAGE; FIX", the object named as kubectl takes
// it (kubectl describe Job/report -n team-a).
func (f Finding) String() string {
	s := f.Object
	if f.Namespace != "" {
		s += " -n " + f.Namespace
	}
	s += ": " + string(f.Severity) + ": " + f.Message
	if f.Fix != "" {
		s += "; " + f.Fix
	}
	return s
}

// Object is a Pod, Job or CronJob as lint reads it, with internal/shared/manifest's reader, the one
// inject uses too: what it is called, the pod it makes and, for a Job or a CronJob, the Job's
// spec. An object of a kind lint reads in an API version it does not is kept with Unsupported
// set, so that lint says what inject says of it.
type Object struct {
	Kind manifest.Kind
	// Name is "Job/report", or "Job/report-*" for a generateName.
	Name string
	// Namespace is the namespace of an object read from a cluster; "" for one read from a
	// manifest, whose namespace is wherever it will be applied.
	Namespace string
	// FromNamespace names, by the catalog's name of a mesh ("istio"), the mark of the
	// namespace that asks for its sidecar (`label istio-injection: "enabled"`), for the mesh
	// requests that InNamespace added to the pod: the findings say where the sidecar comes from.
	FromNamespace map[string]string
	// Pod is the pod's metadata and spec: a Pod's own, or the template of a Job or of a
	// CronJob's job.
	Pod *manifest.PodView
	// JobSpec is the Job's spec (decoded JSON); nil for a Pod.
	JobSpec map[string]any
	// ConcurrencyPolicy is a CronJob's spec.concurrencyPolicy as written ("" when unset: Allow).
	ConcurrencyPolicy string
	// Unsupported says why the object is not what sidesync reads (an API version Kubernetes no
	// longer serves); Pod is nil then, unless the version keeps its pod where the current one
	// does (a batch/v1beta1 CronJob), whose pod is linted too.
	Unsupported string
}

// FromWorkload is the Object of a located workload.
func FromWorkload(w *manifest.Workload) (Object, error) {
	pod, err := manifest.ReadWorkload(w)
	if err != nil {
		return Object{}, err
	}
	o := Object{Kind: w.Kind, Name: w.Name, Pod: pod, JobSpec: w.JobSpec}
	if w.Kind == manifest.CronJob {
		spec, _ := w.Object["spec"].(map[string]any)
		o.ConcurrencyPolicy = manifest.Str(spec, "concurrencyPolicy")
	}
	return o, nil
}

// ID is how findings name the object: "Job/report".
func (o Object) ID() string { return o.Name }

// Lint returns the findings about one object, in a fixed order: rule by rule, in the order of
// the table, and within a rule in the order of the pod's containers.
func Lint(o Object) []Finding {
	var fs []Finding
	if o.Pod == nil {
		// An object lint cannot read has no pod for the other rules to check.
		fs = notServed(&pod{Object: o})
	} else {
		p := newPod(o)
		for _, r := range table {
			fs = append(fs, r.check(p)...)
		}
	}
	for i := range fs {
		fs[i].Object, fs[i].Namespace = o.ID(), o.Namespace
	}
	return fs
}

// notServed (api-version-not-served): an object of an API version Kubernetes no longer serves.
// Its pod, when it is where the current version keeps it, is linted as well; otherwise this is
// the only rule Lint checks it for.
func notServed(p *pod) []Finding {
	if p.Unsupported == "" {
		return nil
	}
	fix := "then lint it again; kubectl sidesync inject passes it through unchanged until then"
	if p.Pod != nil {
		fix = "its pod is the same in batch/v1 and is linted here as well; kubectl sidesync inject passes it through unchanged until then"
	}
	return []Finding{{Severity: Error, Rule: RuleAPIVersion, Message: p.Unsupported, Fix: fix}}
}

// Counts sums up findings: errors and warnings (infos are not counted) in so many objects.
type Counts struct {
	Errors, Warnings, Objects int
}

// Count counts the errors and warnings among findings about objects objects.
func Count(objects int, fs []Finding) Counts {
	c := Counts{Objects: objects}
	for _, f := range fs {
		switch f.Severity {
		case Error:
			c.Errors++
		case Warning:
			c.Warnings++
		}
	}
	return c
}

// String is the summary line: "2 errors, 1 warning in 3 objects".
func (c Counts) String() string {
	return fmt.Sprintf("%s, %s in %s", plural(c.Errors, "error"), plural(c.Warnings, "warning"), plural(c.Objects, "object"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
