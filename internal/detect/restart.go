package detect

import (
	"fmt"
	"strings"

	"github.com/sidesync/sidesync/internal/restart"
)

// containerEnv are the variables that name the container sidesync runs in, first found first:
// the downward API cannot give a container its own name, so `kubectl sidesync inject` (or the
// pod's author) sets one of them.
var containerEnv = []string{"SIDESYNC_CONTAINER", "POD_CONTAINER_NAME"}

// restartOf reads from a Pod object whether the kubelet restarts this container in place after
// it exits: the container's own restartPolicy (else the pod's) and its restartPolicyRules. It
// returns what it read and of what (the container, or the pod), or, when it cannot tell, an
// empty Spec and a note that says why. Without a container name, the pod's restartPolicy is
// this container's only when no container of the pod overrides it.
func restartOf(p *pod, lookupEnv func(string) (string, bool)) (spec restart.Spec, of, note string) {
	variable, name := containerName(lookupEnv)
	if name == "" {
		if own := ownRestarts(p.Spec.Containers); len(own) > 0 {
			return restart.Spec{}, "", fmt.Sprintf("cannot tell whether the kubelet restarts this container: containers %s set their own restartPolicy, "+
				"and neither %s says which container this is", strings.Join(own, ", "), strings.Join(containerEnv, " nor "))
		}
		policy, err := restart.ParsePolicy(p.Spec.RestartPolicy)
		if err != nil {
			return restart.Spec{}, "", fmt.Sprintf("cannot read the pod's restartPolicy %q: %v", p.Spec.RestartPolicy, err)
		}
		return restart.Spec{Policy: policy}, "the pod's restartPolicy", ""
	}
	for _, c := range p.Spec.Containers {
		if c.Name != name {
			continue
		}
		spec, err := containerRestart(c, p.Spec.RestartPolicy)
		if err != nil {
			return restart.Spec{}, "", fmt.Sprintf("cannot read the restart rules of container %s: %v", name, err)
		}
		return spec, "container " + name, ""
	}
	return restart.Spec{}, "", fmt.Sprintf("%s=%s names no container of the pod: cannot tell whether the kubelet restarts this container", variable, name)
}

// containerRestart is a container's effective restartPolicy (its own, else the pod's) and its
// restartPolicyRules.
func containerRestart(c container, podPolicy string) (restart.Spec, error) {
	policy := c.RestartPolicy
	if policy == "" {
		policy = podPolicy
	}
	var spec restart.Spec
	var err error
	if spec.Policy, err = restart.ParsePolicy(policy); err != nil {
		return restart.Spec{}, fmt.Errorf("restartPolicy %q: %w", policy, err)
	}
	if len(c.RestartPolicyRules) > 0 && string(c.RestartPolicyRules) != "null" {
		if spec.Rules, err = restart.ParseRules(string(c.RestartPolicyRules)); err != nil {
			return restart.Spec{}, err
		}
	}
	return spec, nil
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
func ownRestarts(cs []container) []string {
	var out []string
	for _, c := range cs {
		if c.RestartPolicy != "" || len(c.RestartPolicyRules) > 0 && string(c.RestartPolicyRules) != "null" {
			out = append(out, c.Name)
		}
	}
	return out
}
