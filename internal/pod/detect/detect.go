package detect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// Options says where to look.
type Options struct {
	PodInfoDir string // downward-API volume with "annotations" and "labels"
	// PodInfo is that volume as the caller read it already (ReadPodInfo); nil: Detect reads it.
	PodInfo           *PodInfo
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

// Detect looks at the pod's annotations in the downward-API volume first (the sidecars lists of
// the user and of inject, and the injectors' marks), then at the pod in the Kubernetes API; the
// first source that names a sidecar wins. Reading the Pod also tells whether the kubelet
// restarts this container in place (Result.Restart).
func Detect(ctx context.Context, o Options) Result {
	var r Result
	var pi PodInfo
	if o.PodInfo != nil {
		pi = *o.PodInfo
	} else {
		pi = ReadPodInfo(ctx, o.PodInfoDir)
	}
	r.Warnings = append(r.Warnings, pi.Warnings...)
	switch {
	case !pi.Found:
		r.Tried = append(r.Tried, "no downward-API volume at "+o.PodInfoDir)
	case len(pi.Warnings) > 0 && len(pi.Annotations) == 0 && len(pi.Labels) == 0:
		r.Tried = append(r.Tried, "the downward-API volume at "+o.PodInfoDir+" could not be used")
	default:
		view := &manifest.PodView{Annotations: pi.Annotations, Labels: pi.Labels}
		if found := r.fromPod(view, o.LookupEnv); len(found) > 0 {
			if api, ok := nativeFromAPI(ctx, o, r, found); ok {
				return api
			}
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

// nativeFromAPI settles the sidecars the annotations found whose being native they cannot tell
// (Found.NativeUnknown): the Pod in the API shows which of its containers are native sidecars,
// and what it finds replaces what the annotations found (ok). When the Pod cannot be read, or
// does not tell either, such a sidecar keeps its readiness check (waiting is right for a native
// sidecar too) but loses its quit call: a native sidecar is never told to quit (the kubelet
// would restart it), and one that may be native is not either; a note says why and what to do.
func nativeFromAPI(ctx context.Context, o Options, r Result, found []Found) (Result, bool) {
	if !slices.ContainsFunc(found, func(f Found) bool { return f.NativeUnknown != "" }) {
		return Result{}, false
	}
	why := "the Kubernetes API was not asked (--kube-api=false)"
	if o.KubeAPI {
		api := Result{Warnings: r.Warnings}
		api.fromAPI(ctx, o)
		if len(api.Found) > 0 && !slices.ContainsFunc(api.Found, func(f Found) bool { return f.NativeUnknown != "" }) {
			return api, true
		}
		why = "its Pod in the Kubernetes API did not tell: " + strings.Join(api.Tried, "; ")
		if api.Failed != nil {
			why += " (" + api.Fix + ")"
		}
	}
	for i := range found {
		f := &found[i]
		if f.NativeUnknown == "" || f.Sidecar.Quit == nil {
			continue
		}
		f.Sidecar.Quit = nil
		fix := "let sidesync read its Pod (get on pods: deploy/examples/rbac.yaml)"
		if f.settle != "" {
			fix += ", or " + f.settle
		}
		f.Notes = append(f.Notes, "not telling "+f.Sidecar.Name+" to quit: it may be a native sidecar ("+f.NativeUnknown+
			"), which sidesync never tells to quit, and the pod's annotations do not say which; "+why+"; "+fix)
	}
	return Result{}, false
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
		if found := r.fromPod(p, o.LookupEnv); len(found) > 0 {
			r.Found, r.Source, r.Tried = found, "the Kubernetes API, pod "+where, nil
			return
		}
		r.Tried = append(r.Tried, "Kubernetes API: pod "+where+" has no known sidecar")
	}
}

// fromPod finds the pod's sidecars: those the sidesync annotations list, merged with those the
// catalog finds from the injectors' marks and, in a Pod object, from its containers (native or
// not, startup probe, the sidecar's own settings). A malformed annotation becomes a warning.
func (r *Result) fromPod(p *manifest.PodView, lookupEnv func(string) (string, bool)) []Found {
	annotated := r.fromSidecarsAnnotations(p.Annotations, lookupEnv)
	var others []Found
	for _, s := range catalog.Sort(p, catalog.Options{}).Sidecars {
		if s.Entry == nil {
			continue // a native sidecar nobody knows: nothing to wait for, nothing to tell
		}
		sc := s.Profile
		sc.Name = s.Entry.Name
		f := Found{Profile: s.Entry.Name, Sidecar: catalog.WithCredential(s.Entry.Name, sc, lookupEnv), Why: s.Via, Notes: s.Notes}
		if n := s.Entry.Native; s.NativeMaybe {
			f.NativeUnknown = n.Why
			if len(n.Marks) > 0 && len(n.ClassicMarks) > 0 {
				f.settle = "annotate the pod with " + n.Marks[0].YAML() + " or " + n.ClassicMarks[0].YAML()
			}
		}
		others = append(others, f)
	}
	return withAnnotated(annotated, others)
}
