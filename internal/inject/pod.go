package inject

import (
	"fmt"
	"path"
	"slices"

	"github.com/sidesync/sidesync/internal/contract"
)

// template is the pod an object makes: where it is in the object, and its metadata and spec.
type template struct {
	path   string         // "spec.template", "" for a Pod
	holder map[string]any // the object that holds metadata and spec: the Pod, or the template
	spec   map[string]any
}

// podPath is where the kinds inject handles keep their pod: a Pod is one; a Job's is
// spec.template; a CronJob's is its job template's.
func podPath(apiVersion, kind string) ([]string, bool) {
	switch {
	case apiVersion == "v1" && kind == "Pod":
		return nil, true
	case apiVersion == "batch/v1" && kind == "Job":
		return []string{"spec", "template"}, true
	case apiVersion == "batch/v1" && kind == "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}, true
	}
	return nil, false
}

// templateOf finds the pod of obj; nil when obj is of a kind inject leaves alone.
func templateOf(obj map[string]any) (*template, error) {
	keys, ok := podPath(str(obj, "apiVersion"), str(obj, "kind"))
	if !ok {
		return nil, nil
	}
	t := &template{holder: obj}
	for _, k := range keys {
		m, err := mapAt(t.holder, k, t.path)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%s: missing", join(t.path, k))
		}
		t.holder, t.path = m, join(t.path, k)
	}
	spec, err := mapAt(t.holder, "spec", t.path)
	if err != nil {
		return nil, err
	}
	if spec == nil {
		return nil, fmt.Errorf("%s: missing", join(t.path, "spec"))
	}
	t.spec = spec
	return t, nil
}

// specPath names the pod spec in messages.
func (t *template) specPath() string { return join(t.path, "spec") }

// annotations returns the pod's annotations, making them when absent.
func (t *template) annotations() map[string]any {
	return ensureMap(ensureMap(t.holder, "metadata"), "annotations")
}

// windows reports whether the pod says it runs on Windows, where sidesync does not.
func (t *template) windows() bool {
	os, _ := t.spec["os"].(map[string]any)
	return str(os, "name") == "windows"
}

// restartPolicy is the pod's restartPolicy, Always when unset, as Kubernetes defaults it.
func (t *template) restartPolicy() string {
	if p := str(t.spec, "restartPolicy"); p != "" {
		return p
	}
	return "Always"
}

// ctr is one container of the pod, as read for planning; m is the container itself, which
// wrapping changes.
type ctr struct {
	m       map[string]any
	path    string // "spec.template.spec.containers[0]", for messages
	name    string
	image   string
	command []string
	args    []string
}

// containersAt reads the containers in spec[key].
func containersAt(spec map[string]any, key, specPath string) ([]*ctr, error) {
	l, err := listAt(spec, key, specPath)
	if err != nil {
		return nil, err
	}
	var cs []*ctr
	for i, e := range l {
		path := fmt.Sprintf("%s[%d]", join(specPath, key), i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", path)
		}
		c := &ctr{m: m, path: path, name: str(m, "name"), image: str(m, "image")}
		if c.name == "" {
			return nil, fmt.Errorf("%s: no name", path)
		}
		if c.command, err = stringsAt(m, "command", path); err != nil {
			return nil, err
		}
		if c.args, err = stringsAt(m, "args", path); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// native reports whether an init container is a native sidecar.
func (c *ctr) native() bool { return str(c.m, "restartPolicy") == "Always" }

// wrapped reports whether inject wrapped the container before: its command is [contract.Binary].
func (c *ctr) wrapped() bool { return slices.Equal(c.command, []string{contract.Binary}) }

// runsSidesync reports whether the container runs sidesync of its own accord (a command such
// as ["/sidesync", "--sidecar", "istio", "--", ...] written by hand): wrapping it would put
// one sidesync inside another.
func (c *ctr) runsSidesync() bool {
	return len(c.command) > 0 && path.Base(c.command[0]) == "sidesync"
}

// objectName names obj in reports: "Job/report", or by its generateName.
func objectName(obj map[string]any) string {
	kind := str(obj, "kind")
	if kind == "" {
		kind = "(no kind)"
	}
	meta, _ := obj["metadata"].(map[string]any)
	name := str(meta, "name")
	if name == "" {
		name = str(meta, "generateName")
	}
	if name == "" {
		name = "(no name)"
	}
	return kind + "/" + name
}
