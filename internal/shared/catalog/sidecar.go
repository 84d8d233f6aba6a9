package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/sidecar"
)

// Sidecar is one sidecar of a pod, as Sort found it, with what the pod's settings say of it.
type Sidecar struct {
	// Entry is its row; nil for a native sidecar the catalog does not know.
	Entry *Entry
	// Container is its container; nil when a mark or a request announces it and the pod does
	// not hold it yet (a mesh's webhook adds it at admission).
	Container *manifest.Container
	// Via says what gave it away: "annotation sidecar.istio.io/status, container istio-proxy".
	Via string
	// Requested: only an injection request announces it.
	Requested bool

	// Profile is its endpoints as its settings leave them: the ports its annotations, flags or
	// variables set, and no Ready or Quit when that endpoint is certainly off. Native and
	// StartupProbe are set. Zero for a sidecar the catalog does not know.
	Profile sidecar.Sidecar
	// Native: a Kubernetes native sidecar (the kubelet stops it after the apps); NativeMaybe: it
	// is announced only (asked for, or marked without its container, as the downward API shows
	// a pod), and whether its injector adds it as a native one depends on the injector's release
	// or the cluster, which nothing on the pod says (Native is then false).
	Native, NativeMaybe bool
	// StartupProbe: a native sidecar with a startup probe, which Kubernetes waits for.
	StartupProbe bool
	// ReadyOff and QuitOff say that its health check or its quit endpoint is off, and how to
	// switch it on; nil when on.
	ReadyOff, QuitOff *Off
	// EndpointsOff, when not empty, names the setting that switches every endpoint of the
	// sidecar off (Entry.Off): the profile has neither Ready nor Quit, and nothing can wait for
	// it or tell it to quit.
	EndpointsOff string
	// Handshake, when not empty, says how a classic sidecar in the pod quits by a shutdown
	// handshake written by hand (HandshakeQuit): it ends when the app does, and nothing needs
	// to tell it to quit.
	Handshake string
	// Notes are what the user should know (an endpoint that is off, a port that is not one).
	Notes []string
}

// Off is an endpoint of a sidecar that is off.
type Off struct {
	Rule string // the lint rule that reports it
	What string // "quit API"
	Fix  string
	// Certain: every place that can switch it on was read. Otherwise (Linkerd's proxy, whose
	// variable the pod does not show yet) it may be on all the same, and it is still called.
	Certain bool
	// Hidden, when not empty, names the setting that decides and whose value the manifest does
	// not show (a variable from a ConfigMap, a Secret or a field): the endpoint is taken as on,
	// and the user is told to make sure it is.
	Hidden string
	// Unavailable: this container of the sidecar has no such endpoint at all (Switch.Unavailable),
	// and Fix says what to use instead.
	Unavailable bool
}

// Name is the sidecar's profile name, or "" for a native sidecar the catalog does not know.
func (s *Sidecar) Name() string {
	if s.Entry == nil {
		return ""
	}
	return s.Entry.Name
}

// ContainerName is the name of its container: its own, or the one its injector will add.
func (s *Sidecar) ContainerName() string {
	switch {
	case s.Container != nil:
		return s.Container.Name
	case s.Entry != nil:
		return s.Entry.Container
	}
	return ""
}

// read works out what the pod says of the sidecar: native or not, its ports, its switches.
func (s *Sidecar) read(v *manifest.PodView) {
	if s.Container != nil {
		s.Native = s.Container.Native()
		s.StartupProbe = s.Native && s.Container.StartupProbe
		if !s.Native {
			s.Handshake, _ = HandshakeQuit(s.Container, v)
		}
	}
	if s.Entry == nil {
		return
	}
	e := s.Entry
	s.Profile = fresh(e.Sidecar)
	if s.Container == nil {
		s.readNative(v)
	}
	if p, ok := s.port(v, e.ReadyPort); ok {
		s.Profile = s.Profile.WithPorts(p, 0)
	}
	if p, ok := s.port(v, e.QuitPort); ok {
		s.Profile = s.Profile.WithPorts(0, p)
	}
	if s.EndpointsOff = s.allOff(v); s.EndpointsOff != "" {
		s.Profile.Ready, s.Profile.Quit = nil, nil
		if !s.Native {
			s.Notes = append(s.Notes, e.Title+"'s "+s.EndpointsOff+" switches its endpoints off: nothing can wait for it or tell it to quit")
		}
	}
	// A native sidecar is the kubelet's to stop, and one with a startup probe Kubernetes's to
	// wait for: what is off then is worth no note.
	switch s.ReadyOff = s.off(v, e.ReadySwitch); {
	case s.ReadyOff == nil || s.Profile.Ready == nil:
	case s.ReadyOff.Hidden != "":
		if !s.StartupProbe {
			s.Notes = append(s.Notes, hiddenNote(e.Title, s.ReadyOff))
		}
	default:
		if !s.StartupProbe {
			s.Notes = append(s.Notes, e.Title+"'s "+s.ReadyOff.What+" is off, so there is nothing to wait for: "+s.ReadyOff.Fix)
		}
		s.Profile.Ready = nil
	}
	// Nor is a quit endpoint that is off, for a sidecar that quits by a handshake of its own.
	quits := !s.Native && s.Handshake == ""
	switch s.QuitOff = s.off(v, e.QuitSwitch); {
	case s.QuitOff == nil || s.Profile.Quit == nil:
	case s.QuitOff.Hidden != "":
		if quits {
			s.Notes = append(s.Notes, hiddenNote(e.Title, s.QuitOff))
		}
	case s.QuitOff.Certain:
		if quits {
			s.Notes = append(s.Notes, e.Title+"'s "+s.QuitOff.What+" is off, so it cannot be told to quit: "+s.QuitOff.Fix)
		}
		s.Profile.Quit = nil
	case quits:
		s.Notes = append(s.Notes, e.Title+"'s "+s.QuitOff.What+" is off unless the cluster turns it on, and the quit fails without it: "+s.QuitOff.Fix)
	}
	s.Profile.Native, s.Profile.StartupProbe = s.Native, s.StartupProbe
}

// allOff names the first of the row's Off settings that the pod sets to its Value ("annotation
// status.sidecar.istio.io/port: "0""), or "".
func (s *Sidecar) allOff(v *manifest.PodView) string {
	for _, src := range s.Entry.Off {
		if val, set := s.value(v, src); set && strings.TrimSpace(val) == src.Value {
			return src.String() + ": " + quote(src.Value)
		}
	}
	return ""
}

// offCEL is allOff in CEL, for the sidecar's container that the CEL expression c names: whether
// the pod sets one of the row's Off settings to its Value (a bool).
func offCEL(sources []Source, p CELPod, c string) string {
	var conds []string
	for _, src := range sources {
		set, val, _ := src.valueCEL(p, c)
		conds = append(conds, fmt.Sprintf("(%s && %s.trim() == %s)", set, val, CELString(src.Value)))
	}
	if len(conds) == 0 {
		return "false"
	}
	return celOr(conds)
}

// hiddenNote says that an endpoint is switched by a setting whose value the manifest does not
// show, and is taken as on.
func hiddenNote(title string, off *Off) string {
	return title + "'s " + off.What + " is switched by " + off.Hidden + ", whose value the manifest does not show (valueFrom): sidesync takes it as on; make sure it is true"
}

// readNative works out from the pod's annotations whether the injector adds (or added) the
// sidecar as a native one.
func (s *Sidecar) readNative(v *manifest.PodView) {
	n := s.Entry.Native
	switch {
	case n.FromMarks != nil && anyOn(s.Entry.Marks, v):
		// The injector's own record of what it added wins over what the pod asked for: an
		// injector too old for the request adds a classic sidecar.
		s.Native = n.FromMarks(v.Annotations)
	case anyOn(n.Marks, v), n.ByDefault == NativeDefault:
		s.Native = true
	case anyOn(n.ClassicMarks, v):
	case n.FromMarks != nil && !s.Requested:
		// The injector's mark tells, and it does not list a native sidecar.
	case n.ByDefault == Maybe:
		// Asked for, or marked (injected) with nothing on the pod to say how: Linkerd leaves the
		// same annotations and labels on a pod whichever it injects (SIDECARS.md 15.2), and
		// only the pod's containers tell.
		s.NativeMaybe = true
	}
}

// WithCredential adds to the quit call of a sidecar of profile name the credential that its row
// takes from the wrapper's environment (Dapr's API token), when the variable is set.
func WithCredential(name string, sc sidecar.Sidecar, lookupEnv func(string) (string, bool)) sidecar.Sidecar {
	e, ok := Lookup(name)
	if !ok || e.Credential == nil || sc.Quit == nil {
		return sc
	}
	v, set := lookupEnv(e.Credential.Env)
	if !set || v == "" {
		return sc
	}
	q := *sc.Quit
	q.Header = append(append([]sidecar.Header{}, q.Header...), sidecar.Header{Name: e.Credential.Header, Value: v})
	sc.Quit = &q
	return sc
}

func quote(s string) string { return strconv.Quote(s) }
