package catalog

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Convert says how a classic container of a row's sidecar, written in a manifest, becomes a
// Kubernetes native sidecar (`kubectl sidesync inject --native`): an init container with
// restartPolicy Always that the kubelet stops after the apps, with a startup probe that the
// kubelet waits for before it starts the next container. The facts, with their sources, are in
// docs/SIDECARS.md; the rule of what inject does with them in docs/KUBERNETES.md 1.1.
type Convert struct {
	// ProbePath is the path of the startup probe, an HTTP GET on the port of the row's readiness
	// check (ReadyPort, else the port of its URL); "" converts without a startup probe, and
	// NoProbe says why.
	ProbePath string
	// Needs are the settings the sidecar needs for the kubelet's probe to reach ProbePath.
	Needs []Need
	// NoProbe says why a conversion has no startup probe: the sidecar has no health endpoint
	// at all, so that neither the kubelet nor a wrapper can wait for it, and native still ends
	// it after the apps.
	NoProbe string
	// Unprobed are the containers of the sidecar that have no health endpoint (the Cloud SQL
	// Auth Proxy v1): converted without a startup probe, UnprobedWhy saying why.
	Unprobed    []Match
	UnprobedWhy string
}

// Need is a setting of the sidecar that the kubelet's probe needs: when the pod sets none of
// On, inject adds Add (a variable of the sidecar's container, which its flag would beat); when
// it sets one to a value Want refuses, the sidecar is not converted, since inject never changes
// what the user wrote.
type Need struct {
	// What names the setting for messages: "its health check (--health-check)".
	What string
	On   []Source
	// Want are the values that do; none: the value must switch On's source on (Source.on).
	Want []string
	Add  manifest.EnvVar
}

// NativeChange is how a classic sidecar of a pod becomes a native one.
type NativeChange struct {
	// Probe: a startup probe, GET Path on Port.
	Probe bool
	Path  string
	Port  int
	// Env are the variables to add to its container.
	Env []manifest.EnvVar
	// Why says, for the report, what the conversion gives: "startup probe GET :9090/startup", or
	// why there is no probe.
	Why string
}

// NativeChange says how the classic sidecar s, which its pod v holds, becomes a native sidecar
// (see Convert), or why it cannot (ok false): its row has no conversion (a mesh's injector
// added it, or its health check listens on loopback only), or the pod sets something the
// conversion needs to another value. The pod-wide reasons (a container the user keeps classic,
// a hand-written shutdown handshake, a restartPolicy of its own) are the caller's.
func (s *Sidecar) NativeChange(v *manifest.PodView) (NativeChange, string, bool) {
	if s.Entry == nil || s.Container == nil || s.Native {
		return NativeChange{}, "not a classic sidecar that the pod holds", false
	}
	e := s.Entry
	cv := e.Convert
	switch {
	case cv == nil:
		return NativeChange{}, e.noConvert(), false
	case cv.ProbePath == "":
		return NativeChange{Why: "no startup probe: " + cv.NoProbe}, "", true
	}
	for _, m := range cv.Unprobed {
		if m.Matches(v, s.Container) {
			return NativeChange{Why: "no startup probe: " + cv.UnprobedWhy}, "", true
		}
	}
	ch := NativeChange{Probe: true, Path: cv.ProbePath, Port: urlPort(e.Sidecar.Ready.URL)}
	for _, src := range e.ReadyPort {
		if s.hidden(src) {
			return NativeChange{}, "the port of its health check comes from " + src.String() + " with valueFrom, which the manifest does not show", false
		}
	}
	if p, ok := s.port(v, e.ReadyPort); ok {
		ch.Port = p
	}
	for _, n := range cv.Needs {
		add, why := s.need(v, n)
		if why != "" {
			return NativeChange{}, why, false
		}
		if add {
			ch.Env = append(ch.Env, n.Add)
		}
	}
	ch.Why = "startup probe GET :" + strconv.Itoa(ch.Port) + ch.Path
	return ch, "", true
}

// need reads one setting the probe needs: add it, or it is set as wanted, or why it cannot be.
func (s *Sidecar) need(v *manifest.PodView, n Need) (add bool, why string) {
	for _, src := range n.On {
		if s.hidden(src) {
			return false, n.What + " comes from " + src.String() + " with valueFrom, which the manifest does not show"
		}
		val, set := s.value(v, src)
		if !set {
			continue
		}
		if len(n.Want) == 0 && src.on(val) || slices.Contains(n.Want, val) {
			return false, ""
		}
		return false, n.What + " is set to " + strconv.Quote(val) + " by " + src.String() + ", and inject does not change what you wrote"
	}
	return true, ""
}

// noConvert says why the row's sidecar is not converted.
func (e *Entry) noConvert() string {
	switch {
	case e.Container != "" && len(e.Native.Marks) > 0:
		return "added by " + e.Title + "'s injector, which makes it native itself when the pod asks with " + e.Native.Marks[0].YAML()
	case e.Container != "" && e.Native.ByDefault != Classic:
		return "added by " + e.Title + "'s injector, which decides itself whether it is native: " + e.Native.Why
	case e.Container != "":
		return "added by " + e.Title + "'s injector, which adds it as a classic sidecar"
	case e.Sidecar.Ready != nil && isLoopback(e.Sidecar.Ready.URL):
		return "its health check (" + e.Sidecar.Ready.URL + ") listens on loopback only, which the kubelet's probe cannot reach"
	}
	return "the catalog knows no startup probe the kubelet can use for it"
}

// isLoopback reports whether a URL of the catalog names a loopback host.
func isLoopback(url string) bool {
	_, rest, _ := strings.Cut(url, "://")
	return strings.HasPrefix(rest, "127.0.0.1") || strings.HasPrefix(rest, "localhost") || strings.HasPrefix(rest, "[::1]")
}
