package catalog

import (
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
	// is announced only, and whether its injector adds it as a native one depends on the
	// injector's release or the cluster (Native is then false).
	Native, NativeMaybe bool
	// StartupProbe: a native sidecar with a startup probe, which Kubernetes waits for.
	StartupProbe bool
	// ReadyOff and QuitOff say that its health check or its quit endpoint is off, and how to
	// switch it on; nil when on.
	ReadyOff, QuitOff *Off
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
	switch s.QuitOff = s.off(v, e.QuitSwitch); {
	case s.QuitOff == nil || s.Profile.Quit == nil:
	case s.QuitOff.Hidden != "":
		if !s.Native {
			s.Notes = append(s.Notes, hiddenNote(e.Title, s.QuitOff))
		}
	case s.QuitOff.Certain:
		if !s.Native {
			s.Notes = append(s.Notes, e.Title+"'s "+s.QuitOff.What+" is off, so it cannot be told to quit: "+s.QuitOff.Fix)
		}
		s.Profile.Quit = nil
	case !s.Native:
		s.Notes = append(s.Notes, e.Title+"'s "+s.QuitOff.What+" is off unless the cluster turns it on, and the quit fails without it: "+s.QuitOff.Fix)
	}
	s.Profile.Native, s.Profile.StartupProbe = s.Native, s.StartupProbe
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
	case n.FromMarks != nil && n.FromMarks(v.Annotations), anyOn(n.Marks, v), n.ByDefault == NativeDefault:
		s.Native = true
	case anyOn(n.ClassicMarks, v):
	case n.ByDefault == Maybe && s.Requested:
		s.NativeMaybe = true
	}
}

func anyOn(marks []Mark, v *manifest.PodView) bool {
	for _, m := range marks {
		if m.On(v.Annotations, v.Labels) {
			return true
		}
	}
	return false
}

// port is the port the first of sources that the pod sets gives; a value that is no port is a
// note, and the default stays.
func (s *Sidecar) port(v *manifest.PodView, sources []Source) (int, bool) {
	for _, src := range sources {
		src.port = true
		val, set := s.value(v, src)
		if !set && s.hidden(src) {
			s.Notes = append(s.Notes, "the port "+src.String()+" sets comes from valueFrom, which the manifest does not show: assuming the default; give it a literal value, or name the port with --sidecar")
			return 0, false
		}
		if !set {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 1 || n > 65535 {
			s.Notes = append(s.Notes, "ignoring port "+strconv.Quote(val)+" from "+src.String()+": not a port")
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// off returns how the switch is off, or nil when it is on (or there is none). The first of its
// settings that the pod sets decides, as the sidecar's own flag library has a flag win over its
// variable; with none set it is off, certainly so when every setting could be read and the row
// says nothing else may switch it on.
func (s *Sidecar) off(v *manifest.PodView, sw *Switch) *Off {
	if sw == nil {
		return nil
	}
	if s.Container != nil {
		for _, m := range sw.Unavailable {
			if m.Matches(v, s.Container) {
				return &Off{Rule: sw.Rule, What: sw.What, Fix: sw.UnavailableFix, Certain: true}
			}
		}
	}
	certain := sw.Maybe == ""
	for _, src := range sw.On {
		if src.Annotation == "" && s.Container == nil {
			certain = false // the pod does not show the sidecar's own flags and variables yet
			continue
		}
		if val, set := s.value(v, src); set {
			if src.on(val) {
				return nil
			}
			return &Off{Rule: sw.Rule, What: sw.What, Fix: sw.Fix, Certain: true}
		}
		if s.hidden(src) {
			return &Off{Rule: sw.Rule, What: sw.What, Fix: sw.Fix, Hidden: src.String()}
		}
	}
	return &Off{Rule: sw.Rule, What: sw.What, Fix: sw.Fix, Certain: certain}
}

// value reads a source in the pod: the annotation, or the flag or variable of the sidecar's
// container.
func (s *Sidecar) value(v *manifest.PodView, src Source) (string, bool) {
	switch {
	case src.Annotation != "":
		val, ok := v.Annotations[src.Annotation]
		return val, ok
	case s.Container == nil:
		return "", false
	case src.Flag != "":
		return FlagValue(s.Container.Argv(), src.Flag, src.Value == "" && !src.port)
	}
	return s.Container.EnvValue(src.Env)
}

// hidden reports whether src is a variable of the sidecar's container set with valueFrom (a
// ConfigMap, a Secret, a field), whose value the manifest does not show.
func (s *Sidecar) hidden(src Source) bool {
	return src.Env != "" && s.Container != nil && s.Container.EnvFrom(src.Env)
}

// on reports whether a source's value switches it on: its Value, or for a boolean flag or
// variable anything strconv.ParseBool reads as true (a flag given without a value is true).
func (src Source) on(val string) bool {
	if src.Value != "" {
		return val == src.Value
	}
	if src.Flag != "" && val == "" {
		return true
	}
	b, err := strconv.ParseBool(val)
	return err == nil && b
}

// String names a source for messages: "annotation config.linkerd.io/admin-port", "flag
// --http-port", "variable CSQL_PROXY_HTTP_PORT".
func (src Source) String() string {
	switch {
	case src.Annotation != "":
		return "annotation " + src.Annotation
	case src.Flag != "":
		return "flag --" + src.Flag
	}
	return "variable " + src.Env
}

// FlagValue finds a flag of the sidecar's own command line, as the sidecars' flag libraries read
// them: --name=V, or --name V (also with one dash) unless the flag is boolean, which takes its
// value only after "=" (--quitquitquit false is the flag, then an argument). It stops at "--".
func FlagValue(args []string, name string, boolean bool) (string, bool) {
	for i, a := range args {
		if a == "--" {
			return "", false // what follows is not the sidecar's
		}
		a = strings.TrimLeft(a, "-")
		if a == name {
			if !boolean && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
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

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
