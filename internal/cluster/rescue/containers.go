package rescue

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// containers are the ephemeral containers of attempt n: one quit container for every target
// with a quit endpoint, and one signal container per signalled target. Their names are taken by
// no container of the pod.
func containers(pod *corev1.Pod, targets []Target, n int, image string) []corev1.EphemeralContainer {
	var out []corev1.EphemeralContainer
	var specs []string
	var env []corev1.EnvVar
	for _, t := range targets {
		if t.Signal {
			continue
		}
		specs = append(specs, "--"+contract.FlagSidecar, t.Spec)
		env = append(env, credential(pod, t)...)
	}
	taken := names(pod)
	base := ContainerPrefix + strconv.Itoa(n)
	if len(specs) > 0 {
		out = append(out, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name:            unique(base, taken),
			Image:           image,
			Command:         append(QuitCommand(), specs...),
			Env:             env,
			SecurityContext: restricted(nil),
		}})
	}
	for _, t := range targets {
		if !t.Signal {
			continue
		}
		out = append(out, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name:            unique(signalName(base, t.Container), taken),
				Image:           image,
				Command:         append(SignalCommand(), "TERM"),
				SecurityContext: restricted(userOf(pod, t.Container)),
			},
			TargetContainerName: t.Container,
		})
	}
	return out
}

// maxName is the longest container name: a DNS label.
const maxName = 63

// signalName is the name of the container that signals target in attempt base: base, "-signal-"
// and the target's name, a DNS label of at most 63 characters. A longer one keeps what fits and
// ends with a hash of the target's name: two long targets that start alike stay apart.
func signalName(base, target string) string {
	n := base + "-signal-" + target
	if len(n) <= maxName {
		return n
	}
	h := fnv.New32a()
	h.Write([]byte(target))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	return strings.TrimRight(n[:maxName-len(suffix)], "-") + suffix
}

// unique is name, or name with "-2", "-3"... when a container of the pod or one added before is
// called so already (the API server refuses two containers of one name), and takes it. The
// number of the attempt stays where attemptOf reads it.
func unique(name string, taken map[string]bool) string {
	got := name
	for i := 2; taken[got]; i++ {
		suffix := "-" + strconv.Itoa(i)
		got = strings.TrimRight(name[:min(len(name), maxName-len(suffix))], "-") + suffix
	}
	taken[got] = true
	return got
}

// names are the names of every container of the pod: init, regular and ephemeral.
func names(pod *corev1.Pod) map[string]bool {
	taken := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		taken[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		taken[c.Name] = true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		taken[c.Name] = true
	}
	return taken
}

// credential is the variable a sidecar's quit call needs (Dapr's API token), copied from the
// sidecar's own container, whose injector set it (from a Secret, usually).
func credential(pod *corev1.Pod, t Target) []corev1.EnvVar {
	e, ok := catalog.Lookup(t.Profile)
	if !ok || e.Credential == nil {
		return nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != t.Container {
			continue
		}
		for _, v := range c.Env {
			if v.Name == e.Credential.Env {
				return []corev1.EnvVar{v}
			}
		}
	}
	return nil
}

// user is a numeric user and group for a signal container.
type user struct {
	uid, gid *int64
}

// userOf is the user that target runs as, as its spec says (its own securityContext, else the
// pod's): a signal needs the same user, as the container drops every capability.
func userOf(pod *corev1.Pod, target string) *user {
	u := &user{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		u.uid, u.gid = psc.RunAsUser, psc.RunAsGroup
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == target && c.SecurityContext != nil {
			u.uid = cmp.Or(c.SecurityContext.RunAsUser, u.uid)
			u.gid = cmp.Or(c.SecurityContext.RunAsGroup, u.gid)
		}
	}
	return u
}

// restricted is the securityContext of a rescue container: it passes Pod Security
// "restricted" and needs nothing, as the install container of inject. u, for a signal
// container, is the user of the container it signals: a user of 0 (root) cannot pass
// "restricted", and the API server's Pod Security admission then refuses the container, which
// rescue reports.
func restricted(u *user) *corev1.SecurityContext {
	no, yes := false, true
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if u != nil {
		sc.RunAsUser, sc.RunAsGroup = u.uid, u.gid
		if u.uid != nil && *u.uid == 0 {
			sc.RunAsNonRoot = nil
		}
	}
	return sc
}
