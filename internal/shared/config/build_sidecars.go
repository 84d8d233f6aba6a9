package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/sidesync/sidesync/sidecar"
)

// buildSidecars derives the sidecars: the one that --admin, --ready-url and --quit-url describe
// (or those a compatibility contract locates, when none of sidesync's own settings does), then
// every --sidecar. Everything is checked even when disabled, so that switching sidesync off
// does not hide a mistake; a disabled config then has no sidecars. None, and not disabled,
// means that sidesync must detect them.
func (p *parser) buildSidecars(cfg *Config) {
	scs := append(p.legacySidecars(), p.compatSidecars...)
	for _, s := range p.in.specs {
		sc, err := s.sidecar(p.lookupEnv)
		if err != nil {
			p.problem(fmt.Errorf("%s: %s: %w", s.source, s.profile, err))
			continue
		}
		p.checkReadyLoopback(s.source+": "+s.profile, sc.Ready)
		p.checkLoopback(s.source+": "+s.profile, sc.Quit)
		scs = append(scs, sc)
	}
	uniqueNames(scs)
	if cfg.Disabled {
		return
	}
	cfg.Sidecars = scs
	cfg.Detect = len(scs) == 0
}

// legacySidecars is the sidecar of --admin, --ready-url and --quit-url (sidesync's first form),
// plus quit-only ones for extra quit URLs.
func (p *parser) legacySidecars() []sidecar.Sidecar {
	in := &p.in
	if !p.given(flagAdmin) && !p.given(flagReadyURL) && !p.given(flagQuitURL) {
		return nil
	}
	main := sidecar.Sidecar{Name: "envoy"}
	switch {
	case in.readyURL != "":
		main.Name, main.Ready = "sidecar", &sidecar.Check{Kind: sidecar.HTTPStatus, URL: in.readyURL}
		p.checkReadyLoopback(p.source[flagReadyURL], main.Ready)
	case p.given(flagAdmin):
		main.Ready = &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: in.admin}
		p.checkReadyLoopback(p.source[flagAdmin], main.Ready)
	}
	var extra []sidecar.Call
	switch {
	case p.given(flagQuitURL) && len(in.quitURLs) > 0:
		main.Quit = &sidecar.Call{URL: in.quitURLs[0]}
		for _, u := range in.quitURLs[1:] {
			extra = append(extra, sidecar.Call{URL: u})
		}
		p.checkLoopback(p.source[flagQuitURL], main.Quit)
	case p.given(flagAdmin):
		q := sidecar.EnvoyQuit(in.admin)
		main.Quit = &q
		p.checkLoopback(p.source[flagAdmin], main.Quit)
	}
	var out []sidecar.Sidecar
	if main.Ready != nil || main.Quit != nil {
		out = append(out, main)
	}
	for _, c := range extra {
		p.checkLoopback(p.source[flagQuitURL], &c)
		u, _ := url.Parse(c.URL)
		out = append(out, sidecar.Sidecar{Name: u.Host, Quit: &c})
	}
	return out
}

// checkLoopback refuses a quit call outside loopback unless --allow-remote-quit: a quit is for
// this pod's own sidecar.
func (p *parser) checkLoopback(source string, c *sidecar.Call) {
	if c == nil || p.in.allowRemoteQuit || IsLoopback(c.URL) {
		return
	}
	p.problem(fmt.Errorf("%s: quit URL %s is not on a loopback address; quitting a sidecar of another pod is refused unless --%s (%s=true) is given",
		source, c.URL, flagAllowRemote, EnvName(flagAllowRemote)))
}

// checkReadyLoopback refuses a readiness check outside loopback unless --allow-remote-ready (or
// --allow-remote-quit, which trusts the remote sidecar with more): the sidecars sidesync waits
// for are in this pod, and a probe elsewhere is a mistake or a way to make this pod talk to
// another machine. (scuttle's ENVOY_ADMIN_API keeps scuttle's meaning: it is waited for wherever
// it points, and only told to quit on loopback.)
func (p *parser) checkReadyLoopback(source string, c *sidecar.Check) {
	if c == nil || p.in.allowRemoteReady || p.in.allowRemoteQuit || IsLoopback(c.URL) {
		return
	}
	p.problem(fmt.Errorf("%s: readiness URL %s is not on a loopback address; waiting for a sidecar of another machine is refused unless --%s (%s=true) is given",
		source, c.URL, flagAllowReady, EnvName(flagAllowReady)))
}

// uniqueNames makes the sidecars' names unique for logs: istio, istio-2, ...
func uniqueNames(scs []sidecar.Sidecar) {
	seen := make(map[string]int)
	for i := range scs {
		seen[scs[i].Name]++
		if n := seen[scs[i].Name]; n > 1 {
			scs[i].Name += "-" + strconv.Itoa(n)
		}
	}
}

// ParsedSidecar is one sidecar of a list in the syntax of --sidecar, and the profile it was built
// from (its Name may differ, with name=).
type ParsedSidecar struct {
	Profile string
	Sidecar sidecar.Sidecar
}

// ParseSidecars builds the sidecars of a list in the syntax of --sidecar and SIDESYNC_SIDECARS,
// as the pod annotation sidesync.io/sidecars carries it ("istio,cloudsql:ready-port=9190,
// quit-port=9191"); lookupEnv supplies DAPR_API_TOKEN. Unlike the flag, which fails as a whole,
// it returns every entry that is valid, and joins the problems of the others in err: a pod that
// is already running is better served by the sidecars that can be read. A quit or readiness URL
// outside loopback is a problem, as it is without --allow-remote-quit and --allow-remote-ready.
func ParseSidecars(value string, lookupEnv func(string) (string, bool)) ([]ParsedSidecar, error) {
	pieces, problems := splitSpecs(value)
	var out []ParsedSidecar
	for _, piece := range pieces {
		sp, err := parseSpec(piece)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		sc, err := sp.sidecar(lookupEnv)
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("%s: %w", sp.profile, err))
		case sc.Quit != nil && !IsLoopback(sc.Quit.URL):
			problems = append(problems, fmt.Errorf("%s: quit URL %s is not on a loopback address", sp.profile, sc.Quit.URL))
		case sc.Ready != nil && !IsLoopback(sc.Ready.URL):
			problems = append(problems, fmt.Errorf("%s: readiness URL %s is not on a loopback address", sp.profile, sc.Ready.URL))
		default:
			out = append(out, ParsedSidecar{Profile: sp.profile, Sidecar: sc})
		}
	}
	return out, errors.Join(problems...)
}
