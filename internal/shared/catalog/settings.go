package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// What a sidecar's settings make of its endpoints: the ports they move (port), and whether its
// switches leave the endpoint on (off); read puts both into Sidecar.Profile. Each has its CEL
// beside it, which EndpointCEL gathers for the policies.

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
		if s.Entry != nil && slices.ContainsFunc(s.Entry.Off, func(o Source) bool {
			return o.Annotation == src.Annotation && o.Flag == src.Flag && o.Env == src.Env && strings.TrimSpace(val) == o.Value
		}) {
			return 0, false // not a port: the endpoints are off (allOff)
		}
		if err != nil || n < 1 || n > 65535 {
			s.Notes = append(s.Notes, "ignoring port "+strconv.Quote(val)+" from "+src.String()+": not a port")
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// portCEL is port in CEL, for the sidecar's container that the CEL expression c names: the port
// (an int) the first of sources that the pod sets gives, 0 when none does, when its value is no
// port, or when it is hidden; 0 leaves the default, as port's false does.
func portCEL(sources []Source, p CELPod, c string) string {
	expr := "0"
	for i := len(sources) - 1; i >= 0; i-- {
		src := sources[i]
		src.port = true
		set, val, hidden := src.valueCEL(p, c)
		// strconv.Atoi's numbers, leading zeros included, and none that int() cannot hold.
		valid := fmt.Sprintf("[%s.trim()].map(pv, pv.matches(\"^[+]?0*[0-9]{1,10}$\") && int(pv) >= 1 && int(pv) <= 65535 ? int(pv) : 0)[0]", val)
		expr = fmt.Sprintf("(%s ? %s : %s ? 0 : %s)", set, valid, hidden, expr)
	}
	return expr
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
				return &Off{Rule: sw.Rule, What: sw.What, Fix: sw.UnavailableFix, Certain: true, Unavailable: true}
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

// droppedCEL is, in CEL, whether the switch leaves the endpoint off so that read drops it from
// the profile, for the sidecar's container that the CEL expression c names: off's answer as
// read uses it (the readiness check goes whenever it is off and not hidden; the quit call only
// when it is certainly off).
func droppedCEL(sw *Switch, p CELPod, c string, quit bool) string {
	if sw == nil {
		return "false"
	}
	last := "true"
	if quit && sw.Maybe != "" {
		last = "false"
	}
	expr := last
	for i := len(sw.On) - 1; i >= 0; i-- {
		src := sw.On[i]
		set, val, hidden := src.valueCEL(p, c)
		expr = fmt.Sprintf("(%s ? !%s : %s ? false : %s)", set, src.onCEL(val), hidden, expr)
	}
	var un []string
	for _, m := range sw.Unavailable {
		un = append(un, m.CEL(p, c))
	}
	if len(un) > 0 {
		expr = fmt.Sprintf("(%s ? true : %s)", celOr(un), expr)
	}
	return expr
}

// EndpointCEL is, in CEL, what Sort makes of one endpoint of a row's profile for a container the
// row claims: whether Sidecar.Profile has it, and at which port.
type EndpointCEL struct {
	// Dropped is a bool: the pod's settings switch the endpoint off, and the profile has none
	// (Sidecar.Profile.Ready or Quit is nil).
	Dropped string
	// Port is an int: the port the pod's settings give the endpoint, 0 when they give none and
	// the row's stays.
	Port string
	// Default is the port of the row's URL.
	Default int
}

// ReadyCEL is EndpointCEL for the readiness check of e's profile, for the container that the
// CEL expression c names; false when the profile has no readiness check.
func (e *Entry) ReadyCEL(p CELPod, c string) (EndpointCEL, bool) {
	if e.Sidecar.Ready == nil {
		return EndpointCEL{}, false
	}
	return EndpointCEL{Dropped: "(" + offCEL(e.Off, p, c) + " || " + droppedCEL(e.ReadySwitch, p, c, false) + ")", Port: portCEL(e.ReadyPort, p, c), Default: urlPort(e.Sidecar.Ready.URL)}, true
}

// QuitCEL is EndpointCEL for the quit call of e's profile, for the container that the CEL
// expression c names; false when the profile has no quit call.
func (e *Entry) QuitCEL(p CELPod, c string) (EndpointCEL, bool) {
	if e.Sidecar.Quit == nil {
		return EndpointCEL{}, false
	}
	return EndpointCEL{Dropped: "(" + offCEL(e.Off, p, c) + " || " + droppedCEL(e.QuitSwitch, p, c, true) + ")", Port: portCEL(e.QuitPort, p, c), Default: urlPort(e.Sidecar.Quit.URL)}, true
}

// SidecarCEL is, in CEL, what Sort makes of the sidecar a row claims in a container
// (Sidecar.Profile): what config.FormatSidecarCEL writes, as config.FormatSidecar writes the
// profile.
type SidecarCEL struct {
	// Ready and Quit are its endpoints; nil where the row's profile has none.
	Ready, Quit *EndpointCEL
	// Native and StartupProbe are bools: the profile's Native and StartupProbe.
	Native, StartupProbe string
}

// ProfileCEL is SidecarCEL for the container that the CEL expression c names, which e claims;
// native says that it is a native sidecar (an init container that manifest.NativeCEL chooses),
// as the policies know from the list it is in.
func (e *Entry) ProfileCEL(p CELPod, c string, native bool) SidecarCEL {
	sc := SidecarCEL{Native: strconv.FormatBool(native), StartupProbe: fmt.Sprintf("(%t && %s)", native, hasStartupProbeCEL(c))}
	if ep, ok := e.ReadyCEL(p, c); ok {
		sc.Ready = &ep
	}
	if ep, ok := e.QuitCEL(p, c); ok {
		sc.Quit = &ep
	}
	return sc
}
