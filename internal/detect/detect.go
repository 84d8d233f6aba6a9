package detect

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/sidesync/sidesync/internal/restart"
	"github.com/sidesync/sidesync/sidecar"
)

// Options says where to look.
type Options struct {
	PodInfoDir        string // downward-API volume with "annotations" and "labels"
	KubeAPI           bool   // ask the Kubernetes API when the annotations say nothing
	ServiceAccountDir string // token, ca.crt, namespace
	LookupEnv         func(string) (string, bool)
	Timeout           time.Duration // bounds the API request; zero means 3 s
}

// Result is what detection found.
type Result struct {
	Found  []Found
	Source string   // where they were found, for the log
	Tried  []string // why each source gave nothing, for the log line when nothing is found
	// Failed is set when detection could not look where it should have: this is a Kubernetes
	// pod, but its own Pod could not be read (no token, 403, TLS failure, timeout). Nothing found
	// then does not mean that there is no sidecar.
	Failed error
	Fix    string // what to do about Failed
	// Warnings are what detection read but could not use, for the log: a malformed
	// sidesync.io/sidecars annotation.
	Warnings []string
	// Restart is what the Pod in the Kubernetes API says about restarting this container in
	// place, when detection read it (RestartFrom says from what); RestartNote says why it stays
	// unknown when the Pod could not tell.
	Restart     restart.Spec
	RestartFrom string
	RestartNote string
}

// Detect looks at the pod's annotations in the downward-API volume first (the sidesync.io/sidecars
// list and the injectors' marks), then at the pod in the Kubernetes API; the first source that
// names a sidecar wins. Reading the Pod also tells whether the kubelet restarts this container
// in place (Result.Restart).
func Detect(ctx context.Context, o Options) Result {
	var r Result
	pi := ReadPodInfo(ctx, o.PodInfoDir)
	r.Warnings = append(r.Warnings, pi.Warnings...)
	switch {
	case !pi.Found:
		r.Tried = append(r.Tried, "no downward-API volume at "+o.PodInfoDir)
	case len(pi.Warnings) > 0 && len(pi.Annotations) == 0 && len(pi.Labels) == 0:
		r.Tried = append(r.Tried, "the downward-API volume at "+o.PodInfoDir+" could not be used")
	default:
		if found := r.fromAnnotations(pi.Annotations, pi.Labels, nil, o.LookupEnv); len(found) > 0 {
			r.Found, r.Source, r.Tried = found, "pod annotations in "+o.PodInfoDir, nil
			return r
		}
		r.Tried = append(r.Tried, "pod annotations in "+o.PodInfoDir+" name no injected sidecar")
	}
	if !o.KubeAPI {
		r.Tried = append(r.Tried, "Kubernetes API not asked (--kube-api=false)")
		return r
	}
	r.fromAPI(ctx, o)
	return r
}

// fromAPI reads the pod from the Kubernetes API: its sidecars, and whether the kubelet restarts
// this container.
func (r *Result) fromAPI(ctx context.Context, o Options) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, where, err := getPod(ctx, o)
	switch {
	case errors.Is(err, errNoAPI):
		r.Tried = append(r.Tried, "Kubernetes API: "+err.Error())
	case err != nil && where == "":
		r.Tried = append(r.Tried, "Kubernetes API: "+err.Error())
		r.Failed, r.Fix = err, fixFor(err)
	case err != nil:
		r.Tried = append(r.Tried, "Kubernetes API, pod "+where+": "+err.Error())
		r.Failed, r.Fix = err, fixFor(err)
	default:
		var of string
		if r.Restart, of, r.RestartNote = restartOf(p, o.LookupEnv); of != "" {
			r.RestartFrom = "the Kubernetes API, pod " + where + ", " + of
		}
		if found := r.fromAnnotations(p.Metadata.Annotations, p.Metadata.Labels, p, o.LookupEnv); len(found) > 0 {
			r.Found, r.Source, r.Tried = found, "the Kubernetes API, pod "+where, nil
			return
		}
		r.Tried = append(r.Tried, "Kubernetes API: pod "+where+" has no known sidecar")
	}
}

// fromAnnotations finds the sidecars that the sidesync.io/sidecars annotation lists, merged with
// those the injectors' marks reveal and, given a Pod object, its containers; a malformed
// annotation becomes a warning.
func (r *Result) fromAnnotations(ann, labels map[string]string, p *pod, lookupEnv func(string) (string, bool)) []Found {
	annotated, warning := fromSidecarsAnnotation(ann, lookupEnv)
	if warning != "" && !slices.Contains(r.Warnings, warning) {
		r.Warnings = append(r.Warnings, warning)
	}
	if p != nil {
		return withAnnotated(annotated, fromPod(p))
	}
	return withAnnotated(annotated, fromMetadata(ann, labels))
}

// fromPod finds the sidecars of a Pod object: from its annotations, refined by its containers
// (native or not, startup probe), and from containers no annotation names (the Cloud SQL Auth
// Proxy, App Mesh's Envoy, hand-added sidecars).
func fromPod(p *pod) []Found {
	found := fromMetadata(p.Metadata.Annotations, p.Metadata.Labels)
	cs := p.containers()
	used := make(map[string]bool)
	for i := range found {
		s, _ := LookupSignature(found[i].Sidecar.Name)
		if c, ok := cs[s.Container]; ok && s.Container != "" {
			applyContainer(&found[i], s, c)
			used[s.Container] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		c := cs[name]
		if used[name] {
			continue
		}
		if s, ok := containerSignature(c); ok {
			f := Found{Profile: s.Profile, Why: "container " + name}
			f.Sidecar, _ = sidecar.Profile(s.Profile)
			applyContainer(&f, s, c)
			found = append(found, f)
		}
	}
	return found
}

// containerSignature recognises a sidecar container by its name or image: the first row of
// Signatures that it matches.
func containerSignature(c container) (Signature, bool) {
	for _, s := range Signatures() {
		if s.matches(c) {
			return s, true
		}
	}
	return Signature{}, false
}

// applyContainer records what the container says: native or not, a startup probe, and what
// the profile's own function reads there (the Cloud SQL Auth Proxy's flags).
func applyContainer(f *Found, s Signature, c container) {
	f.Sidecar.Native = f.Sidecar.Native || c.native
	f.Sidecar.StartupProbe = c.native && c.StartupProbe != nil
	if s.fromContainer != nil {
		s.fromContainer(f, c)
	}
}
