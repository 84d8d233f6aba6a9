package detect

import (
	"fmt"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// containerEnv are the variables that name the container sidesync runs in, first found first:
// the downward API cannot give a container its own name, so `kubectl sidesync inject` (or the
// pod's author) sets one of them.
var containerEnv = []string{"SIDESYNC_CONTAINER", "POD_CONTAINER_NAME"}

// restartOf reads from a Pod object whether the kubelet restarts this container in place after
// it exits, as restart.Effective says from the container's restartPolicy (else the pod's) and
// its restartPolicyRules. It returns what it read and of what (the container, or the pod), or,
// when it cannot tell, an empty Spec and a note that says why. Without a container name, the
// pod's restartPolicy is this container's only when no container of the pod overrides it.
func restartOf(p *manifest.PodView, lookupEnv func(string) (string, bool)) (spec restart.Spec, of, note string) {
	variable, name := containerName(lookupEnv)
	if name == "" {
		if own := ownRestarts(p.Containers); len(own) > 0 {
			return restart.Spec{}, "", fmt.Sprintf("cannot tell whether the kubelet restarts this container: containers %s set their own restartPolicy, "+
				"and neither %s says which container this is", strings.Join(own, ", "), strings.Join(containerEnv, " nor "))
		}
		spec, err := restart.Effective("", p.RestartPolicy, nil)
		if err != nil {
			return restart.Spec{}, "", fmt.Sprintf("cannot read the pod's restartPolicy: %v", err)
		}
		return spec, "the pod's restartPolicy", ""
	}
	for _, c := range p.Containers {
		if c.Name != name {
			continue
		}
		spec, err := restart.Effective(c.RestartPolicy, p.RestartPolicy, c.RestartPolicyRules)
		if err != nil {
			return restart.Spec{}, "", fmt.Sprintf("cannot read the restart rules of container %s: %v", name, err)
		}
		return spec, "container " + name, ""
	}
	return restart.Spec{}, "", fmt.Sprintf("%s=%s names no container of the pod: cannot tell whether the kubelet restarts this container", variable, name)
}

// containerName is the name of the container sidesync runs in, and the variable that gave it.
func containerName(lookupEnv func(string) (string, bool)) (variable, name string) {
	for _, v := range containerEnv {
		if name, ok := lookupEnv(v); ok && strings.TrimSpace(name) != "" {
			return v, strings.TrimSpace(name)
		}
	}
	return "", ""
}

// ownRestarts names the containers that set a restartPolicy or restartPolicyRules of their own.
func ownRestarts(cs []*manifest.Container) []string {
	var out []string
	for _, c := range cs {
		if c.RestartPolicy != "" || c.RestartPolicyRules != nil {
			out = append(out, c.Name)
		}
	}
	return out
}
