package manifest

import (
	"fmt"
	"strconv"

	"github.com/sidesync/sidesync/internal/shared/restart"
)

// PodView is a pod as sidesync reads it: its metadata and the parts of its spec that say which
// containers run, how, and how they restart.
type PodView struct {
	// Path is where the pod is, for messages: "" for a Pod, "spec.template" for a Job's.
	Path        string
	Annotations map[string]string // never nil
	Labels      map[string]string // never nil
	// RestartPolicy is the pod's restartPolicy as written: "" when unset (Kubernetes then
	// defaults it to Always).
	RestartPolicy string
	// OS is spec.os.name ("linux", "windows"), or "".
	OS string
	// InitContainers and Containers are the pod's containers, in order.
	InitContainers []*Container
	Containers     []*Container
	// Spec is the pod's spec itself, which inject changes.
	Spec map[string]any
}

// Container is one container of a pod as sidesync reads it.
type Container struct {
	// Path names it in messages: "spec.template.spec.containers[1]".
	Path    string
	Init    bool // an init container (a native sidecar is one too)
	Name    string
	Image   string
	Command []string
	Args    []string
	Env     []EnvVar
	// RestartPolicy is the container's own restartPolicy as written ("" when unset): on an init
	// container, Always makes it a native sidecar; on a regular one (Kubernetes 1.34+) it
	// overrides the pod's.
	RestartPolicy string
	// RestartPolicyRules is its restartPolicyRules as decoded, untouched (nil when unset or
	// null); internal/shared/restart reads them (restart.Effective), so that rules it cannot read
	// leave the restart unknown rather than fail the reading of the whole pod.
	RestartPolicyRules any
	StartupProbe       bool // it has a startupProbe
	// M is the container object itself, which inject changes.
	M map[string]any
}

// EnvVar is a variable of a container's env.
type EnvVar struct {
	Name  string
	Value string // the literal value; "" for one from a ConfigMap, a Secret or a field
	From  bool   // valueFrom: its value is not known from the manifest
}

// Native reports whether the container is a Kubernetes native sidecar: an init container with
// restartPolicy Always (Kubernetes 1.29+; init containers accept Never and OnFailure too, which
// are not sidecars).
func (c *Container) Native() bool { return c.Init && c.RestartPolicy == string(restart.Always) }

// NativeCEL is Native in CEL, for the init container that the CEL expression c names (the
// admission policies' own list of init containers stands for Init).
func NativeCEL(c string) string {
	return "has(" + c + ".restartPolicy) && " + c + ".restartPolicy == " + strconv.Quote(string(restart.Always))
}

// Argv is the container's own command and args, as one list; the image's ENTRYPOINT is not known
// here.
func (c *Container) Argv() []string { return append(append([]string{}, c.Command...), c.Args...) }

// EnvValue looks up a variable: its literal value, and whether the container sets it to a literal
// value that is not empty (an empty value counts as unset, as in sidesync's own settings).
func (c *Container) EnvValue(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, !e.From && e.Value != ""
		}
	}
	return "", false
}

// EnvFrom reports whether the container sets the variable from a ConfigMap, a Secret or a field:
// set, with a value the manifest does not show.
func (c *Container) EnvFrom(name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return e.From
		}
	}
	return false
}

// ReadPod reads the pod that holder holds (a Pod, or a pod template: an object with metadata and
// spec); path names holder in errors. A field sidesync reads that has the wrong type is an error
// naming it; every other field is left alone.
func ReadPod(holder map[string]any, path string) (*PodView, error) {
	meta, err := MapAt(holder, "metadata", path)
	if err != nil {
		return nil, err
	}
	p := &PodView{Path: path}
	metaPath := Join(path, "metadata")
	if p.Annotations, err = StringMapAt(meta, "annotations", metaPath); err != nil {
		return nil, err
	}
	if p.Labels, err = StringMapAt(meta, "labels", metaPath); err != nil {
		return nil, err
	}
	if p.Spec, err = MapAt(holder, "spec", path); err != nil {
		return nil, err
	}
	if p.Spec == nil {
		return nil, fmt.Errorf("%s: missing", Join(path, "spec"))
	}
	specPath := Join(path, "spec")
	p.RestartPolicy = Str(p.Spec, "restartPolicy")
	if os, err := MapAt(p.Spec, "os", specPath); err != nil {
		return nil, err
	} else {
		p.OS = Str(os, "name")
	}
	if p.InitContainers, err = readContainers(p.Spec, "initContainers", specPath); err != nil {
		return nil, err
	}
	if p.Containers, err = readContainers(p.Spec, "containers", specPath); err != nil {
		return nil, err
	}
	return p, nil
}

// ReadWorkload reads the pod of a located workload.
func ReadWorkload(w *Workload) (*PodView, error) {
	return ReadPod(w.Template, w.TemplatePath)
}

// readContainers reads the containers in spec[key].
func readContainers(spec map[string]any, key, specPath string) ([]*Container, error) {
	l, err := ListAt(spec, key, specPath)
	if err != nil {
		return nil, err
	}
	cs := make([]*Container, 0, len(l))
	for i, e := range l {
		path := fmt.Sprintf("%s[%d]", Join(specPath, key), i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", path)
		}
		c, err := readContainer(m, path)
		if err != nil {
			return nil, err
		}
		c.Init = key == "initContainers"
		cs = append(cs, c)
	}
	return cs, nil
}

// readContainer reads one container.
func readContainer(m map[string]any, path string) (*Container, error) {
	c := &Container{Path: path, M: m, Name: Str(m, "name"), Image: Str(m, "image"), RestartPolicy: Str(m, "restartPolicy")}
	if c.Name == "" {
		return nil, fmt.Errorf("%s: no name", path)
	}
	if err := CheckContainerName(c.Name); err != nil {
		return nil, fmt.Errorf("%s.name: %w (the API server refuses it too)", path, err)
	}
	var err error
	if c.Command, err = StringsAt(m, "command", path); err != nil {
		return nil, err
	}
	if c.Args, err = StringsAt(m, "args", path); err != nil {
		return nil, err
	}
	if c.Env, err = readEnv(m, path); err != nil {
		return nil, err
	}
	c.RestartPolicyRules = m["restartPolicyRules"]
	probe, err := MapAt(m, "startupProbe", path)
	if err != nil {
		return nil, err
	}
	c.StartupProbe = probe != nil
	return c, nil
}

// readEnv reads a container's env: each entry an object with a name.
func readEnv(m map[string]any, path string) ([]EnvVar, error) {
	l, err := ListAt(m, "env", path)
	if err != nil {
		return nil, err
	}
	var env []EnvVar
	for i, e := range l {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.env[%d]: not an object", path, i)
		}
		v := EnvVar{Name: Str(em, "name"), Value: Str(em, "value"), From: em["valueFrom"] != nil}
		if v.Name == "" {
			return nil, fmt.Errorf("%s.env[%d]: no name", path, i)
		}
		env = append(env, v)
	}
	return env, nil
}

// All is the pod's init containers, then its regular containers.
func (p *PodView) All() []*Container {
	return append(append([]*Container{}, p.InitContainers...), p.Containers...)
}

// Container returns the container called name, init or regular, or nil.
func (p *PodView) Container(name string) *Container {
	for _, c := range p.All() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// CheckContainerName checks that name is a name the API server takes for a container: a DNS
// label (RFC 1123), at most 63 lower-case letters, digits and '-', starting and ending with a
// letter or digit.
func CheckContainerName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("%q is not a container name: 1 to 63 characters", name)
	}
	for i, c := range name {
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1) {
			return fmt.Errorf("%q is not a container name: lower-case letters, digits and '-', starting and ending with a letter or digit", name)
		}
	}
	return nil
}
