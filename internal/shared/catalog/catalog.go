// Package catalog is the one table of the sidecars sidesync knows, one row per sidecar: its
// endpoints (the profile that --sidecar names), how it shows in a pod (images, container names,
// the annotations and labels its injector reads and leaves), when its injector makes it a
// native sidecar, how its quit endpoint and its health checks are switched on (flags, variables,
// annotations) and what to tell a user who has them off. Detection in the pod, `kubectl
// sidesync inject` and `kubectl sidesync lint` all read it and keep nothing of their own about a
// sidecar; the README's tables are generated from it. The facts, with their upstream sources,
// are in docs/SIDECARS.md.
//
// It is data and pure functions over a pod (internal/shared/manifest), standard library only: the pod
// binary reads it too.
package catalog

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/sidecar"
)

//go:generate go test -run TestREADME -update

// Entry is one row of the catalog: a sidecar, or a container an orchestrator adds and stops
// itself.
type Entry struct {
	// Name is the profile's name ("istio"), as --sidecar and the annotations name it.
	Name string
	// Title is the sidecar's own name, for messages ("Istio").
	Title string
	// Sidecar is the profile: its endpoints with their documented defaults, and the hints that
	// explain a failed quit. Its Name is Name.
	Sidecar sidecar.Sidecar
	// Notes is what the user must know to make the profile work, one line of Markdown for the
	// README; ReadyWhen and QuitWith describe a generic profile's endpoints, which the user gives.
	Notes, ReadyWhen, QuitWith string

	// StoppedBy, when not empty, says which orchestrator stops this container itself: it is
	// neither a profile nor an app; sidesync never wraps it and never tells it to quit.
	StoppedBy string

	// Undetectable, when not empty, says why nothing in a pod reveals this sidecar.
	Undetectable string
	// Marks are what its injector leaves on a pod it injected (annotations or labels); any one
	// reveals the sidecar, unless one of Unless is on the pod too.
	Marks, Unless []Mark
	// Requests are what asks its injector for the sidecar before admission; any one announces
	// it in a manifest, unless one of Unless is on the pod too.
	Requests []Mark
	// NamespaceRequests are the marks on a namespace (its labels or annotations) that ask the
	// injector for a sidecar in every pod created there, unless the pod says otherwise (Unless).
	// Only what reads a namespace sees them: the webhook's warnings at a Job's creation.
	NamespaceRequests []Mark
	// Expects are pod annotations that only its injector reads (a key, or a prefix ending in
	// "/"): a pod that carries one and no mark nor request expects the sidecar all the same, from
	// its namespace's request, which a manifest does not show (Expected). The keys of Requests and
	// Unless are not counted: they speak for themselves.
	Expects []string
	// Container is the name of the container its injector adds: once a mark reveals the
	// sidecar, this container of the pod is it.
	Container string
	// Containers reveal the sidecar in a pod that carries no mark: any container that matches.
	Containers []Match

	// ReadyPort and QuitPort are the settings that move the readiness check's or the quit
	// call's port: pod annotations, or the sidecar's own flags and variables.
	ReadyPort, QuitPort []Source
	// Off are settings whose Value switches every endpoint of the sidecar off: Istio's
	// status.sidecar.istio.io/port "0" turns the agent's status server off, which serves the quit
	// and, through Envoy, the readiness (SIDECARS.md 3.1). A pod that sets one leaves the profile
	// with neither (Sidecar.EndpointsOff).
	Off []Source
	// ReadySwitch and QuitSwitch say how the sidecar's health check and quit endpoint are
	// switched on, when they are not always on; nil: always on.
	ReadySwitch, QuitSwitch *Switch
	// Credential is a variable of the wrapper's environment whose value the quit call sends in
	// a header (Dapr's API token).
	Credential *Credential

	// Native says how its injector decides between a native and a classic sidecar.
	Native Native
	// Convert says how a classic container of this sidecar written in a manifest becomes a
	// native sidecar (`kubectl sidesync inject --native`); nil: it is not converted.
	Convert *Convert
	// QuitsInJobs: the mesh's control plane tells the sidecar of a Job's pod to quit once the
	// other containers ended (Kuma, for pods a Job owns).
	QuitsInJobs bool
	// Quitters are the programs an app may run its command with that tell the sidecar to quit
	// when the command ends (linkerd-await --shutdown): the app then needs no sidesync to end
	// the pod.
	Quitters []Quitter
	// EnvoyAdminPort is the port of the Envoy admin beside the sidecar's quit endpoint, when the
	// quit goes elsewhere (Istio's Envoy on 15000, its agent's quit on 15020): scuttle's
	// ENVOY_ADMIN_API on this port is told to quit there (QuitBesideEnvoyAdmin).
	EnvoyAdminPort int
	// Reads says, for the README, what the row reads besides its marks and containers.
	Reads string
}

// Mark is an annotation or a label on a pod.
type Mark struct {
	Key   string
	Value string // the value it must have; "" means any value
	Label bool   // a label, not an annotation
}

// Match matches a container of a pod.
type Match struct {
	Name       string // the container's name; "" matches any name
	NamePrefix string // a prefix of its name; "" matches any
	Image      string // a piece of its image, in lower case; "" matches any image
	// When, if set, must be on the pod for the match to count (Tekton's sidecar- containers
	// only in a Tekton pod).
	When *Mark
}

// Source is a place where a setting of the sidecar is read: a pod annotation, or a flag or a
// variable of the sidecar's own container. Exactly one of the three is set.
type Source struct {
	Annotation string
	Flag       string // the sidecar's flag, without dashes: --quitquitquit is "quitquitquit"
	Env        string // a variable of the sidecar's container
	// Value is what switches a setting on: "" for a boolean flag or variable (present, and not
	// false); a port has none.
	Value string

	port bool // read as a port: a flag then takes the next argument as its value
}

// Switch is how a sidecar's endpoint is switched on: the first of On that the pod sets decides.
type Switch struct {
	// Rule is the name of the lint rule that finds it off ("linkerd-shutdown-off").
	Rule string
	On   []Source
	// What names the endpoint for messages: "the quit endpoint /shutdown".
	What string
	// Fix says what to change in the pod to switch it on.
	Fix string
	// Maybe, when not empty, says why the endpoint may be on although nothing in the pod says
	// so (a cluster-wide setting of the injector, an older release that had it always on).
	Maybe string
	// Unavailable are the containers of the sidecar on which nothing switches it on (the Cloud
	// SQL Auth Proxy v1 has no --quitquitquit); UnavailableFix then says what to do instead.
	Unavailable    []Match
	UnavailableFix string
}

// Quitter is a program that runs the app's command and then tells the sidecar to quit, when
// one of its flags says so.
type Quitter struct {
	Program string   // the base name of its executable: "linkerd-await"
	Flags   []string // any one of them, before "--", makes it quit: "--shutdown", "-S"
}

// Credential is a variable of the wrapper's environment sent with the quit call.
type Credential struct {
	Env    string // DAPR_API_TOKEN
	Header string // dapr-api-token
}

// Native says how an injector decides whether it adds its sidecar as a native sidecar (an init
// container with restartPolicy: Always).
type Native struct {
	// Marks make the injector add a native sidecar; the first is the one to recommend.
	Marks []Mark
	// ClassicMarks make it add a classic one.
	ClassicMarks []Mark
	// ByDefault is what the injector does with none of them, in its current releases:
	// Classic, Native or Maybe (it depends on the release or the cluster).
	ByDefault Default
	// Why says, for Maybe, what it depends on.
	Why string
	// Honoured says which releases of the injector honour the first of Marks, with the
	// upstream source: inject adds that mark to a pod that asks for the sidecar (Options.Native),
	// and an older release ignores it.
	Honoured string
	// FromMarks reads from a mark whether the injector made it native (Istio's status
	// annotation lists its init containers).
	FromMarks func(ann map[string]string) bool
}

// Default is what an injector does when the pod says nothing.
type Default int

// The defaults.
const (
	Classic       Default = iota // a classic sidecar: a regular container
	NativeDefault                // a native sidecar
	Maybe                        // it depends on the injector's release or the cluster
)

// Entries returns the catalog, in the order of the README's tables and of detection. The rows are
// shared: read them, never change them.
func Entries() []Entry { return slices.Clone(table) }

// Lookup returns the row called name, shared: read only.
func Lookup(name string) (*Entry, bool) {
	for i := range table {
		if table[i].Name == name {
			return &table[i], true
		}
	}
	return nil, false
}

// IsProfile reports whether the row is a profile that --sidecar names: every row but those of
// containers an orchestrator stops.
func (e *Entry) IsProfile() bool { return e.StoppedBy == "" }

// Generic reports whether the profile has no endpoints of its own: the user gives them.
func (e *Entry) Generic() bool { return e.ReadyWhen != "" }

// Profile returns the sidecar profile called name with its documented defaults, and whether
// there is such a profile. Every URL can be changed on the returned value.
func Profile(name string) (sidecar.Sidecar, bool) {
	e, ok := Lookup(name)
	if !ok || !e.IsProfile() {
		return sidecar.Sidecar{}, false
	}
	return fresh(e.Sidecar), true
}

// fresh is a copy of a row's profile that shares nothing with the row: its caller may change
// its check and its call.
func fresh(sc sidecar.Sidecar) sidecar.Sidecar {
	if sc.Ready != nil {
		r := *sc.Ready
		sc.Ready = &r
	}
	if sc.Quit != nil {
		q := *sc.Quit
		q.Hints, q.Header = slices.Clone(q.Hints), slices.Clone(q.Header)
		sc.Quit = &q
	}
	return sc
}

// ProfileNames lists the profiles, in documentation order.
func ProfileNames() []string {
	var names []string
	for i := range table {
		if table[i].IsProfile() {
			names = append(names, table[i].Name)
		}
	}
	return names
}

// IsProfile reports whether name is a profile.
func IsProfile(name string) bool { return slices.Contains(ProfileNames(), name) }

// NamesProfileCEL is, in CEL, whether the string that the CEL expression spec gives is a value of
// --sidecar that names a profile: IsProfile of the part before its first ":" (a line of one
// value: RE2's "." takes no newline).
func NamesProfileCEL(spec string) string {
	names := ProfileNames()
	for i, n := range names {
		names[i] = quoteMeta(n)
	}
	return spec + ".matches(" + CELString("^("+strings.Join(names, "|")+")(:.*)?$") + ")"
}

// AskedByNamespace reports whether the namespace's annotations or labels ask the injector of e
// for a sidecar in a pod with the given annotations and labels: a namespace request is on, and
// the pod neither opts out (Unless) nor asks by itself (which Requests tells already).
func (e *Entry) AskedByNamespace(nsAnn, nsLabels, podAnn, podLabels map[string]string) bool {
	for _, m := range e.Unless {
		if m.On(podAnn, podLabels) {
			return false
		}
	}
	for _, m := range e.NamespaceRequests {
		if m.On(nsAnn, nsLabels) {
			return true
		}
	}
	return false
}

// QuitBy reports whether app container c runs its command with one of e's quitters, so that the
// sidecar is told to quit when the command ends.
func (e *Entry) QuitBy(c *manifest.Container) bool {
	return slices.ContainsFunc(e.Quitters, func(q Quitter) bool { return q.quits(c.Argv()) })
}

// quits reports whether argv runs the quitter with one of its flags before "--".
func (q Quitter) quits(argv []string) bool {
	if len(argv) == 0 || path.Base(argv[0]) != q.Program {
		return false
	}
	for _, a := range argv[1:] {
		if a == "--" {
			return false
		}
		if slices.Contains(q.Flags, a) {
			return true
		}
	}
	return false
}

// QuitBesideEnvoyAdmin is the port of the quit endpoint of the sidecar whose Envoy admin listens
// on port adminPort, as a URL writes it (Istio's agent, "15020", beside its Envoy's "15000"), and
// whether a row says so: scuttle's ENVOY_ADMIN_API names only the Envoy admin, and kvij/scuttle
// derives the agent's port the same way.
func QuitBesideEnvoyAdmin(adminPort string) (string, bool) {
	for i := range table {
		if e := &table[i]; e.EnvoyAdminPort != 0 && strconv.Itoa(e.EnvoyAdminPort) == adminPort && e.Sidecar.Quit != nil {
			return strconv.Itoa(urlPort(e.Sidecar.Quit.URL)), true
		}
	}
	return "", false
}
