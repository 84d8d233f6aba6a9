// Package lint says, before anything is applied, whether a Pod, Job or CronJob will hang or
// misbehave with its sidecars: a classic sidecar that nothing tells to quit, a quit endpoint that
// is off, a native sidecar that Kubernetes does not wait for, a podFailurePolicy that sidecars'
// exit codes trip, restart settings that restart the app after its sidecars were told to quit.
// Each finding says what to change. It is pure: objects in, findings out, no I/O.
//
// It reads sidecars with the detection table of the pod binary (internal/detect) and restarts
// with the wrapper's own decision (internal/restart), so that it predicts what sidesync will do.
package lint

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
	Severity  Severity `json:"severity"`            // error, warning or info
	Rule      string   `json:"rule"`                // a stable name for the check, e.g. RuleNeverQuits
	Container string   `json:"container,omitempty"` // the container it is about, if one
	Message   string   `json:"message"`             // what is wrong and what follows from it
	Fix       string   `json:"fix,omitempty"`       // what to change
}

// String is the finding as one line: "Job/report: error: MESSAGE; FIX".
func (f Finding) String() string {
	s := f.Object + ": " + string(f.Severity) + ": " + f.Message
	if f.Fix != "" {
		s += "; " + f.Fix
	}
	return s
}

// Object is a Pod, Job or CronJob as lint reads it: what it is called, the pod it makes and,
// for a Job or a CronJob, the Job's spec.
type Object struct {
	Kind string // "Pod", "Job" or "CronJob"
	Name string
	// Pod is the pod's metadata (annotations, labels) and spec: a Pod's own, or the template of
	// a Job or of a CronJob's job.
	Pod corev1.PodTemplateSpec
	Job *batchv1.JobSpec // nil for a Pod
}

// FromPod is the Object of a Pod.
func FromPod(p *corev1.Pod) Object {
	return Object{Kind: "Pod", Name: nameOf(p.ObjectMeta.Name, p.GenerateName),
		Pod: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}}
}

// FromJob is the Object of a Job.
func FromJob(j *batchv1.Job) Object {
	return Object{Kind: "Job", Name: nameOf(j.Name, j.GenerateName), Pod: j.Spec.Template, Job: &j.Spec}
}

// FromCronJob is the Object of a CronJob: the pod of the Jobs it creates.
func FromCronJob(c *batchv1.CronJob) Object {
	spec := c.Spec.JobTemplate.Spec
	return Object{Kind: "CronJob", Name: nameOf(c.Name, c.GenerateName), Pod: spec.Template, Job: &spec}
}

// nameOf names an object in findings: by its name, else by its generateName.
func nameOf(name, generate string) string {
	if name == "" && generate != "" {
		return generate + "*"
	}
	return name
}

// ID is how findings name the object: "Job/report".
func (o Object) ID() string { return o.Kind + "/" + o.Name }

// Lint returns the findings about one object, in a fixed order: rule by rule, in the order of
// the pod's containers.
func Lint(o Object) []Finding {
	p := newPod(o)
	var fs []Finding
	for _, check := range checks() {
		fs = append(fs, check(p)...)
	}
	for i := range fs {
		fs[i].Object = o.ID()
	}
	return fs
}

// checks are the rules, in the order their findings are reported.
func checks() []func(*pod) []Finding {
	return []func(*pod) []Finding{
		neverQuits, quitEndpointsOff, cloudSQLHealthCheck, nativeWithoutStartupProbe,
		failurePolicyWithoutContainer, restartsInPlace, nothingToDo,
	}
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
