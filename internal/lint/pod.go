package lint

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidesync/sidesync/internal/detect"
)

// pod is what the rules read: the object, with its containers sorted into sidecars and apps.
type pod struct {
	Object
	ann, labels map[string]string
	// completes: the pod runs to completion (a Job's, or a Pod with restartPolicy Never or
	// OnFailure), so a sidecar that never quits keeps it from completing.
	completes bool
	sidecars  []podSidecar
	apps      []*corev1.Container // the regular containers that are no known sidecar
}

// podSidecar is one sidecar of the pod: a container of the manifest, or one that an annotation
// says an injector will add.
type podSidecar struct {
	profile   string            // detection profile; "" for a native sidecar lint does not know
	container string            // its container's name
	c         *corev1.Container // nil when only an annotation announces it
	native    bool              // an init container with restartPolicy: Always
	via       string            // the annotation or label that announces it, if any
}

// who names the sidecar in messages: "container cloud-sql-proxy (Cloud SQL Auth Proxy)", and
// for one an injector adds, the annotation that asks for it.
func (s podSidecar) who() string {
	what := profileInfos()[s.profile].title
	if s.c == nil && s.via != "" {
		what += ", from the " + s.via
	}
	if what == "" {
		return "container " + s.container
	}
	return "container " + s.container + " (" + what + ")"
}

// newPod sorts the object's containers: native sidecars (init containers with restartPolicy:
// Always), classic sidecars (regular containers that the detection table, or an annotation of
// the pod, names), the apps; then the sidecars that annotations announce and the manifest does
// not hold yet.
func newPod(o Object) *pod {
	spec := &o.Pod.Spec
	p := &pod{Object: o, ann: o.Pod.Annotations, labels: o.Pod.Labels}
	policy := spec.RestartPolicy
	p.completes = o.Job != nil || policy == corev1.RestartPolicyNever || policy == corev1.RestartPolicyOnFailure
	announced := announcedSidecars(p.ann, p.labels)
	claimed := make([]bool, len(announced))
	claim := func(c *corev1.Container) (string, string, bool) {
		profile, known := containerProfile(c.Name, c.Image)
		for i, a := range announced {
			if !claimed[i] && (a.profile == profile || !known && a.container == c.Name) {
				claimed[i] = true
				return a.profile, a.via, true
			}
		}
		return profile, "", known
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			profile, via, _ := claim(c)
			p.sidecars = append(p.sidecars, podSidecar{profile: profile, container: c.Name, c: c, native: true, via: via})
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if profile, via, ok := claim(c); ok {
			p.sidecars = append(p.sidecars, podSidecar{profile: profile, container: c.Name, c: c, via: via})
		} else {
			p.apps = append(p.apps, c)
		}
	}
	for i, a := range announced {
		if !claimed[i] {
			p.sidecars = append(p.sidecars, a)
		}
	}
	return p
}

// announcedSidecars are the sidecars that the pod's annotations and labels reveal: the marks an
// injector leaves (the detection table), then the requests for an injection; one per profile,
// native when the annotations say the injector adds it so.
func announcedSidecars(ann, labels map[string]string) []podSidecar {
	infos := profileInfos()
	var out []podSidecar
	seen := make(map[string]bool)
	add := func(profile, via string, native bool) {
		if seen[profile] {
			return
		}
		seen[profile] = true
		sig, _ := detect.LookupSignature(profile)
		native = native || anyOn(infos[profile].native, ann, labels)
		out = append(out, podSidecar{profile: profile, container: sig.Container, native: native, via: via})
	}
	for _, sig := range detect.Signatures() {
		if m, ok := marked(sig, ann, labels); ok {
			via := "annotation " + m.Key
			if m.Label {
				via = "label " + m.Key
			}
			add(sig.Profile, via, sig.Profile == "istio" && istioNativeByStatus(ann))
		}
	}
	for _, sig := range detect.Signatures() {
		info := infos[sig.Profile]
		if anyOn(info.unless, ann, labels) {
			continue
		}
		for _, m := range info.requests {
			if m.on(ann, labels) {
				add(sig.Profile, m.String(), false)
			}
		}
	}
	return out
}

// classic returns the classic sidecars (not native).
func (p *pod) classic() []podSidecar {
	var out []podSidecar
	for _, s := range p.sidecars {
		if !s.native {
			out = append(out, s)
		}
	}
	return out
}

// wrapped returns the apps that run sidesync.
func (p *pod) wrapped() []*corev1.Container {
	var out []*corev1.Container
	for _, c := range p.apps {
		if isWrapped(c) {
			out = append(out, c)
		}
	}
	return out
}

// appNames names the apps for a fix: "job", or "job or report".
func (p *pod) appNames() string {
	var names []string
	for _, c := range p.apps {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "the app's"
	}
	return strings.Join(names, " or ")
}
