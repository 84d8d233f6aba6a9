package rescue

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Patch is the strategic-merge patch of the pod's ephemeralcontainers subresource that adds
// the containers: what `kubectl debug` sends. An ephemeral container can be neither changed nor
// removed, and the patch merges on the name: sent twice (two rescuers at once), the second
// finds the same container and changes nothing. Nothing to add is an error: the list would be
// null, which a strategic-merge patch reads as "delete the list".
func Patch(add []corev1.EphemeralContainer) ([]byte, error) {
	if len(add) == 0 {
		return nil, errors.New("no ephemeral container to add")
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": add}})
}

// Result is how a rescued pod stands.
type Result struct {
	// Phase is the pod's phase; Done once it is Succeeded or Failed.
	Phase corev1.PodPhase
	Done  bool
	// Sidecars are the targets' exit codes, by container, once they ended.
	Sidecars map[string]int32
	// Rescuers are the rescue containers' states, by name: "exited 0", "running", "waiting
	// (ImagePullBackOff)".
	Rescuers map[string]string
	// Failed, when not empty, says why the rescue cannot end the pod any more: a rescue
	// container never starts (its image cannot be pulled), or every one ended, one of them
	// failed (a quit refused), and a target still runs. A decision that added nothing never
	// failed.
	Failed string
}

// Outcome reads how the pod that d rescued stands now.
func Outcome(pod *corev1.Pod, d Decision) Result {
	r := Result{Phase: pod.Status.Phase, Sidecars: map[string]int32{}, Rescuers: map[string]string{}}
	r.Done = r.Phase == corev1.PodSucceeded || r.Phase == corev1.PodFailed
	running := map[string]bool{}
	for _, st := range pod.Status.ContainerStatuses {
		for _, t := range d.Targets {
			if t.Container != st.Name {
				continue
			}
			if st.State.Terminated != nil {
				r.Sidecars[st.Name] = st.State.Terminated.ExitCode
			} else {
				running[st.Name] = true
			}
		}
	}
	ended, failed := len(d.Add) > 0, false
	var never []string
	for _, c := range d.Add {
		state, done := "has no status yet", false
		for _, st := range pod.Status.EphemeralContainerStatuses {
			if st.Name == c.Name {
				state, done = containerState(st), st.State.Terminated != nil
				failed = failed || done && st.State.Terminated.ExitCode != 0
				if why := stalled(st); why != "" {
					never = append(never, c.Name+" never starts ("+why+")")
					done = true
				}
			}
		}
		ended = ended && done
		r.Rescuers[c.Name] = state
	}
	if len(never) > 0 && !r.Done {
		r.Failed = strings.Join(never, "; ")
		return r
	}
	// Rescue containers that all exited 0 had every quit taken: a target that still runs is
	// ending (draining, or its exit not yet in the status, which the kubelet reports a moment
	// later), not a failure.
	if ended && failed && len(running) > 0 && !r.Done {
		var names []string
		for _, t := range d.Targets {
			if running[t.Container] {
				names = append(names, t.Container)
			}
		}
		verb := "runs"
		if len(names) > 1 {
			verb = "run"
		}
		r.Failed = "the rescue containers ended and " + strings.Join(names, ", ") + " still " + verb
	}
	return r
}

// containerState is a container's state in a few words.
func containerState(st corev1.ContainerStatus) string {
	switch s := st.State; {
	case s.Terminated != nil && s.Terminated.Signal != 0:
		return fmt.Sprintf("exited %d (signal %d)", s.Terminated.ExitCode, s.Terminated.Signal)
	case s.Terminated != nil:
		return fmt.Sprintf("exited %d", s.Terminated.ExitCode)
	case s.Running != nil:
		return "running"
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting (" + s.Waiting.Reason + ")"
	}
	return "waiting"
}
