package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// spec is one --sidecar value: a profile and its overrides.
type spec struct {
	profile string
	params  [][2]string // key, value in order
	source  string      // the flag or variable it came from, for messages
}

// specValue is the --sidecar flag: PROFILE[:KEY=VALUE[,KEY=VALUE...]], repeatable, and a value
// may hold several sidecars separated by commas (SIDESYNC_SIDECARS=istio,cloudsql). A comma
// segment that starts with KEY= continues the previous sidecar's overrides; any other starts a
// new sidecar.
type specValue struct{ specs *[]spec }

func (v specValue) String() string {
	if v.specs == nil {
		return ""
	}
	var names []string
	for _, s := range *v.specs {
		names = append(names, s.profile)
	}
	return strings.Join(names, ",")
}

func (v specValue) Set(s string) error {
	parsed, err := parseSpecs(s)
	if err != nil {
		return err
	}
	*v.specs = append(*v.specs, parsed...)
	return nil
}

// parseSpecs splits a --sidecar value into specs; see specValue. The first problem fails it.
func parseSpecs(s string) ([]spec, error) {
	pieces, errs := splitSpecs(s)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	specs := make([]spec, 0, len(pieces))
	for _, piece := range pieces {
		sp, err := parseSpec(piece)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

// splitSpecs cuts a list into one piece per sidecar: "istio,cloudsql:ready-port=1,quit-port=2"
// is "istio" and "cloudsql:ready-port=1,quit-port=2". A comma segment that starts with KEY=
// continues the previous piece; one before any piece is a problem, and is left out.
func splitSpecs(s string) (pieces []string, problems []error) {
	for seg := range strings.SplitSeq(s, ",") {
		if seg = strings.TrimSpace(seg); seg == "" {
			continue
		}
		eq, colon := strings.Index(seg, "="), strings.Index(seg, ":")
		switch {
		case eq < 0 || colon >= 0 && colon < eq:
			pieces = append(pieces, seg)
		case len(pieces) == 0:
			problems = append(problems, fmt.Errorf("%q: a setting before any sidecar name", maskUserinfo(seg)))
		default:
			pieces[len(pieces)-1] += "," + seg
		}
	}
	return pieces, problems
}

// parseSpec reads one piece of a list: PROFILE[:KEY=VALUE[,KEY=VALUE...]].
func parseSpec(piece string) (spec, error) {
	name, rest, _ := strings.Cut(piece, ":")
	name = strings.ToLower(strings.TrimSpace(name))
	if !catalog.IsProfile(name) {
		return spec{}, fmt.Errorf("unknown sidecar %q (known: %s)", name, strings.Join(catalog.ProfileNames(), ", "))
	}
	sp := spec{profile: name}
	for kv := range strings.SplitSeq(rest, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return spec{}, fmt.Errorf("%q: settings are KEY=VALUE", maskUserinfo(kv))
		}
		sp.params = append(sp.params, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return sp, nil
}

// specKeys documents the overrides a spec accepts.
const specKeys = "name, ready, quit, port, ready-port, quit-port, host, method, status, native, startup-probe"

// sidecar builds the sidecar a spec describes; lookupEnv supplies the credential its row takes
// from the environment (DAPR_API_TOKEN).
func (s spec) sidecar(lookupEnv func(string) (string, bool)) (sidecar.Sidecar, error) {
	sc, _ := catalog.Profile(s.profile)
	// URLs first, so that port, method and status apply to them whatever the order given.
	if err := s.apply(&sc, true); err != nil {
		return sc, err
	}
	if err := s.checkPort(sc); err != nil {
		return sc, err
	}
	if err := s.apply(&sc, false); err != nil {
		return sc, err
	}
	switch {
	case s.profile == "http" && sc.Ready == nil && sc.Quit == nil:
		return sc, fmt.Errorf("the http sidecar needs ready=URL, quit=URL or both")
	case s.profile == "tcp" && (sc.Ready == nil || sc.Ready.Kind != sidecar.TCP):
		return sc, fmt.Errorf("the tcp sidecar needs ready=tcp://HOST:PORT")
	}
	return catalog.WithCredential(s.profile, sc, lookupEnv), nil
}

// apply sets the spec's URL overrides (ready=, quit=) on sc, or all the others.
func (s spec) apply(sc *sidecar.Sidecar, urls bool) error {
	for _, kv := range s.params {
		if isURLKey := kv[0] == "ready" || kv[0] == "quit"; isURLKey != urls {
			continue
		}
		if err := apply(sc, kv[0], kv[1]); err != nil {
			return fmt.Errorf("%s=%q: %w", kv[0], maskUserinfo(kv[1]), err)
		}
	}
	return nil
}

// checkPort refuses port= where the readiness check and the quit call are on different ports
// (cloudsql: 9090 and 9091; consul: 19000 and 20600): moving both to one port would send the
// quit to the health port, which answers 404, and the sidecar would keep running. It is decided
// from the sidecar as the profile and any ready=/quit= override left it.
func (s spec) checkPort(sc sidecar.Sidecar) error {
	if !slices.ContainsFunc(s.params, func(kv [2]string) bool { return kv[0] == "port" }) || sc.Ready == nil || sc.Quit == nil {
		return nil
	}
	ready, quit := urlPort(sc.Ready.URL), urlPort(sc.Quit.URL)
	if ready == quit {
		return nil
	}
	return fmt.Errorf("port= is ambiguous: the readiness check (%s) and the quit call (%s) are on different ports; use ready-port=N and/or quit-port=N", ready, quit)
}

// urlPort is the port a URL connects to, its scheme's default included.
func urlPort(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return ""
	case u.Port() != "":
		return u.Port()
	case u.Scheme == "https":
		return "443"
	}
	return "80"
}

// apply sets one override on sc.
func apply(sc *sidecar.Sidecar, key, value string) error {
	switch key {
	case "name":
		if value == "" || strings.ContainsAny(value, " \t=,:") {
			return fmt.Errorf("not a usable name")
		}
		sc.Name = value
	case "ready":
		return setReady(sc, value)
	case "quit":
		return setQuit(sc, value)
	case "port", "ready-port", "quit-port":
		return setPort(sc, key, value)
	case "host":
		return setHost(sc, value)
	case "method":
		if sc.Quit == nil || value == "" || strings.ContainsAny(value, " \t\r\n") {
			return fmt.Errorf("needs a quit URL and an HTTP method")
		}
		sc.Quit.Method = strings.ToUpper(value)
	case "status":
		n, err := strconv.Atoi(value)
		if err != nil || n < 100 || n > 599 || sc.Ready == nil || sc.Ready.Kind != sidecar.HTTPStatus {
			return fmt.Errorf("needs an HTTP readiness URL and a status from 100 to 599")
		}
		sc.Ready.Status = n
	case "native", "startup-probe":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("not a boolean (use true or false)")
		}
		if key == "native" {
			sc.Native = b
		} else {
			sc.StartupProbe = b
		}
	default:
		return fmt.Errorf("unknown setting (known: %s)", specKeys)
	}
	return nil
}

func setReady(sc *sidecar.Sidecar, value string) error {
	if value == "none" {
		sc.Ready = nil
		return nil
	}
	if strings.HasPrefix(value, "tcp://") {
		addr, err := parseTCP(value)
		if err != nil {
			return err
		}
		sc.Ready = &sidecar.Check{Kind: sidecar.TCP, URL: addr}
		return nil
	}
	if fix, ok := suggestHTTP(value); ok && !strings.Contains(value, "://") {
		if hostport, tail := splitAuthority(strings.TrimPrefix(fix, "http://")); tail == "" {
			return fmt.Errorf("must be a URL: write %s for an HTTP check, or tcp://%s to wait for the port to accept connections", fix, hostport)
		}
	}
	u, err := parseURL(value)
	if err != nil {
		return err
	}
	kind := sidecar.HTTPStatus
	if sc.Ready != nil && sc.Ready.Kind == sidecar.EnvoyAdmin && (u.Path == "" || u.Path == "/") {
		kind = sidecar.EnvoyAdmin // an admin base URL for an Envoy profile
	}
	sc.Ready = &sidecar.Check{Kind: kind, URL: u.String()}
	return nil
}

func setQuit(sc *sidecar.Sidecar, value string) error {
	if value == "none" {
		sc.Quit = nil
		return nil
	}
	u, err := parseURL(value)
	if err != nil {
		return err
	}
	c := sidecar.Call{URL: u.String()}
	if sc.Quit != nil {
		c.Hints = sc.Quit.Hints
	}
	sc.Quit = &c
	return nil
}

// setPort moves the readiness check, the quit call or both to another port.
func setPort(sc *sidecar.Sidecar, key, value string) error {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("not a port from 1 to 65535")
	}
	switch key {
	case "ready-port":
		*sc = sc.WithPorts(n, 0)
	case "quit-port":
		*sc = sc.WithPorts(0, n)
	default:
		*sc = sc.WithPorts(n, n)
	}
	return nil
}

// setHost moves the readiness check and the quit call to another host (localhost, ::1, ...).
// A host with a port, a path or a user is refused: the port has its own keys.
func setHost(sc *sidecar.Sidecar, value string) error {
	bad := value == "" || strings.ContainsAny(value, "/@ []%?#\t")
	if !bad && strings.Contains(value, ":") && net.ParseIP(value) == nil {
		return fmt.Errorf("not a host name or IP address (a port goes in port=, ready-port= or quit-port=)")
	}
	if _, err := url.Parse("http://" + net.JoinHostPort(value, "1")); bad || err != nil {
		return fmt.Errorf("not a host name or IP address")
	}
	*sc = sc.WithHost(value)
	return nil
}
