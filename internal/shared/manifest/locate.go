package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is a kind of object whose pods sidesync handles.
type Kind string

// The kinds sidesync handles.
const (
	Pod     Kind = "Pod"
	Job     Kind = "Job"
	CronJob Kind = "CronJob"
)

// Workload is an object that makes pods, located: what it is, and where its pod is.
type Workload struct {
	Kind       Kind
	APIVersion string
	// Name names it in messages: "Job/report"; a generateName is written "Job/report-*".
	Name string
	// Object is the whole object, as given.
	Object map[string]any
	// Template holds the pod's metadata and spec: the Pod itself, or the pod template.
	Template map[string]any
	// TemplatePath is where Template is in Object, for messages: "" for a Pod,
	// "spec.template" for a Job, "spec.jobTemplate.spec.template" for a CronJob.
	TemplatePath string
	// JobSpec is the spec of the Job (a CronJob's job template's); nil for a Pod.
	JobSpec map[string]any
}

// Unsupported is an object of a kind sidesync handles, in an API version it does not read:
// inject passes it through and lint reports it, both with Reason.
type Unsupported struct {
	Name   string
	Reason string
	// Workload, for an API version Kubernetes no longer serves whose pod is where the current
	// version keeps it (a batch/v1beta1 CronJob's template is a batch/v1 CronJob's), is the
	// object located as the current version: lint reads its pod, so that the upgrade is not the
	// only finding; inject still passes the object through. nil otherwise.
	Workload *Workload
}

func (u *Unsupported) Error() string { return u.Name + ": " + u.Reason }

// removed are the API versions of the kinds sidesync handles that Kubernetes no longer serves,
// with the release that removed them; each keeps its pod where the current version does
// (Unsupported.Workload) (https://kubernetes.io/docs/reference/using-api/deprecation-guide/).
var removed = map[string]string{
	"batch/v1beta1 CronJob":  "1.25",
	"batch/v2alpha1 CronJob": "1.21",
}

// kinds says where each kind sidesync handles keeps its pod, by "apiVersion Kind".
func kinds(apiVersion string, kind Kind) ([]string, bool) {
	switch apiVersion + " " + string(kind) {
	case "v1 Pod":
		return nil, true
	case "batch/v1 Job":
		return []string{"spec", "template"}, true
	case "batch/v1 CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}, true
	}
	return nil, false
}

// TypeMeta is what says what an object is; an item of a typed List (a PodList) may leave it
// out, and is then of the list's kind.
type TypeMeta struct {
	APIVersion string
	Kind       string
}

// Locate says what obj is: a Workload when it is a Pod (v1), a Job or a CronJob (batch/v1);
// nil, nil for an object of any other kind (a Deployment, a ConfigMap: their pods run forever,
// or they make none); an *Unsupported error for a Pod, Job or CronJob of another API version;
// another error for an object whose pod is missing or not an object. An object without
// apiVersion or kind takes them from inherited (the list it is an item of).
func Locate(obj map[string]any, inherited TypeMeta) (*Workload, error) {
	tm := typeMeta(obj, inherited)
	if tm.Kind == "" {
		return nil, errors.New("not a Kubernetes object: it has no kind")
	}
	w := &Workload{Kind: Kind(tm.Kind), APIVersion: tm.APIVersion, Object: obj, Template: obj}
	w.Name = tm.Kind + "/" + objectName(obj)
	path, ok := kinds(tm.APIVersion, w.Kind)
	if !ok {
		u := unsupported(w)
		if u != nil && removed[tm.APIVersion+" "+tm.Kind] != "" {
			// The removed versions of a kind keep its pod where the current one does.
			path, _ := kinds(current(w.Kind), w.Kind)
			if cur, err := locateAt(w, path); err == nil {
				u.Workload = cur
			}
		}
		if u == nil {
			return nil, nil
		}
		return nil, u
	}
	return locateAt(w, path)
}

// locateAt finds the pod of w along path, and the Job's spec on the way.
func locateAt(w *Workload, path []string) (*Workload, error) {
	for i, k := range path {
		m, err := MapAt(w.Template, k, w.TemplatePath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
		if m == nil {
			return nil, fmt.Errorf("%s: %s: missing", w.Name, Join(w.TemplatePath, k))
		}
		if k == "spec" && i == len(path)-2 {
			w.JobSpec = m
		}
		w.Template, w.TemplatePath = m, Join(w.TemplatePath, k)
	}
	return w, nil
}

// unsupported is the error for a kind sidesync handles in another version of its API group, or
// nil for a kind it does not handle (a Job of another group is someone else's).
func unsupported(w *Workload) *Unsupported {
	group, _, versioned := strings.Cut(w.APIVersion, "/")
	if !versioned {
		group = "" // the core group: "v1"
	}
	switch {
	case w.Kind == Pod && group == "", (w.Kind == Job || w.Kind == CronJob) && group == "batch":
	default:
		return nil
	}
	reason := fmt.Sprintf("apiVersion %s: sidesync reads a %s only as %s", w.APIVersion, w.Kind, current(w.Kind))
	if release, ok := removed[w.APIVersion+" "+string(w.Kind)]; ok {
		reason = fmt.Sprintf("apiVersion %s is not served since Kubernetes %s: upgrade it to %s", w.APIVersion, release, current(w.Kind))
	}
	return &Unsupported{Name: w.Name, Reason: reason}
}

// current is the API version sidesync reads a kind in.
func current(k Kind) string {
	if k == Pod {
		return "v1"
	}
	return "batch/v1"
}

// typeMeta is obj's apiVersion and kind, each else inherited's.
func typeMeta(obj map[string]any, inherited TypeMeta) TypeMeta {
	tm := TypeMeta{APIVersion: Str(obj, "apiVersion"), Kind: Str(obj, "kind")}
	if tm.Kind == "" {
		tm.Kind = inherited.Kind
		if tm.APIVersion == "" {
			tm.APIVersion = inherited.APIVersion
		}
	}
	return tm
}

// objectName is the object's name, else its generateName followed by "*", else "(no name)".
func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	switch {
	case Str(meta, "name") != "":
		return Str(meta, "name")
	case Str(meta, "generateName") != "":
		return Str(meta, "generateName") + "*"
	}
	return "(no name)"
}

// Name names obj in messages, as Locate does: "Job/report", "(no kind)/x".
func Name(obj map[string]any, inherited TypeMeta) string {
	kind := typeMeta(obj, inherited).Kind
	if kind == "" {
		kind = "(no kind)"
	}
	return kind + "/" + objectName(obj)
}

// IsList reports whether obj is a List (kind List, or a typed list such as PodList) with
// items, and the type its items have when they say none: a PodList's are Pods; a plain List's
// must say their own.
func IsList(obj map[string]any) (inherited TypeMeta, ok bool) {
	kind := Str(obj, "kind")
	if _, hasItems := obj["items"]; !hasItems || !strings.HasSuffix(kind, "List") {
		return TypeMeta{}, false
	}
	if kind == "List" {
		return TypeMeta{}, true
	}
	return TypeMeta{APIVersion: Str(obj, "apiVersion"), Kind: strings.TrimSuffix(kind, "List")}, true
}

// Items calls fn with every object obj holds: obj itself, or each item of a List in turn, with
// the type an item without one inherits and where it is ("items[2]"), and puts what fn returns
// in its place. A List whose items is not a list, or an item that is not an object, is an error
// naming it; an item without a kind in a plain List is fn's to judge (inherited is empty).
func Items(obj map[string]any, fn func(item map[string]any, inherited TypeMeta, where string) (map[string]any, error)) (map[string]any, error) {
	inherited, isList := IsList(obj)
	if !isList {
		return fn(obj, TypeMeta{}, "")
	}
	items, err := ListAt(obj, "items", "")
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		where := fmt.Sprintf("items[%d]", i)
		item, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", where)
		}
		out, err := fn(item, inherited, where)
		if err != nil {
			return nil, err
		}
		items[i] = out
	}
	return obj, nil
}
