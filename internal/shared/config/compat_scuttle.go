package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// scuttle's contract (docs/PRIOR-ART.md 3) minus its bugs: no pkill (a quit request instead),
// readiness from Envoy's /ready or /server_info, bounded quits, invalid values rejected rather
// than ignored.

// scuttleVars are redboxllc/scuttle's variables plus those of its kvij fork.
var scuttleVars = []string{
	"SCUTTLE_LOGGING", "ENVOY_ADMIN_API", "START_WITHOUT_ENVOY", "WAIT_FOR_ENVOY_TIMEOUT",
	"QUIT_WITHOUT_ENVOY_TIMEOUT", "ISTIO_QUIT_API", "NEVER_KILL_ISTIO", "NEVER_KILL_ISTIO_ON_FAILURE",
	"GENERIC_QUIT_ENDPOINTS", "GENERIC_QUIT_ONLY", "QUIT_REQUEST_TIMEOUT", "ISTIO_FALLBACK_PKILL",
	"BYPASS_SIGURG",
}

// scuttle holds scuttle's variables, parsed.
type scuttle struct {
	adminAPI, istioQuitAPI        string
	generic                       []string
	startWithout                  bool
	waitTimeout, quitTimeout      time.Duration
	hasWaitTimeout                bool
	neverKill, neverKillOnFailure bool
	genericOnly, pkill, sigurg    bool
	logging                       bool
}

// readScuttle parses every scuttle variable set, or returns nil when none is.
func (p *parser) readScuttle() *scuttle {
	if !p.anyEnv(scuttleVars) {
		return nil
	}
	s := &scuttle{logging: true}
	p.compatURL("ENVOY_ADMIN_API", &s.adminAPI)
	p.compatURL("ISTIO_QUIT_API", &s.istioQuitAPI)
	if v, ok := p.env("GENERIC_QUIT_ENDPOINTS"); ok {
		if err := (urlListValue{&s.generic}).Set(v); err != nil {
			p.problem(fmt.Errorf("%s (scuttle): %w", describe("GENERIC_QUIT_ENDPOINTS", v), err))
		}
	}
	p.compatBool("SCUTTLE_LOGGING", &s.logging)
	p.compatBool("START_WITHOUT_ENVOY", &s.startWithout)
	p.compatBool("NEVER_KILL_ISTIO", &s.neverKill)
	p.compatBool("NEVER_KILL_ISTIO_ON_FAILURE", &s.neverKillOnFailure)
	p.compatBool("GENERIC_QUIT_ONLY", &s.genericOnly)
	p.compatBool("ISTIO_FALLBACK_PKILL", &s.pkill)
	p.compatBool("BYPASS_SIGURG", &s.sigurg)
	s.hasWaitTimeout = p.compatDuration("WAIT_FOR_ENVOY_TIMEOUT", &s.waitTimeout)
	p.compatDuration("QUIT_WITHOUT_ENVOY_TIMEOUT", &s.quitTimeout)
	return s
}

// scuttleBehaviour applies scuttle's behaviour variables, each unless a flag or SIDESYNC_*
// variable set the same thing, wherever the sidecar's location came from.
func (p *parser) scuttleBehaviour(s *scuttle) {
	if s == nil {
		return
	}
	if !s.logging {
		p.setDefault(flagLogLevel, "SCUTTLE_LOGGING", "warn")
	}
	if s.startWithout {
		p.setDefault(flagNoWait, "START_WITHOUT_ENVOY", "true")
	}
	switch {
	case s.quitTimeout > 0: // takes precedence over WAIT_FOR_ENVOY_TIMEOUT, as in scuttle
		p.setDefault(flagTimeout, "QUIT_WITHOUT_ENVOY_TIMEOUT", s.quitTimeout.String())
		p.setDefault(flagOnTimeout, "QUIT_WITHOUT_ENVOY_TIMEOUT", "fail")
	case s.hasWaitTimeout:
		p.setDefault(flagTimeout, "WAIT_FOR_ENVOY_TIMEOUT", s.waitTimeout.String())
		if s.waitTimeout > 0 {
			p.setDefault(flagOnTimeout, "WAIT_FOR_ENVOY_TIMEOUT", "start-anyway")
		}
	}
	switch {
	case s.neverKillOnFailure:
		p.setDefault(flagQuit, "NEVER_KILL_ISTIO_ON_FAILURE", string(QuitOnSuccess))
	case s.neverKill && !s.genericOnly:
		p.setDefault(flagQuit, "NEVER_KILL_ISTIO", string(QuitNever))
	}
	if v, ok := p.env("QUIT_REQUEST_TIMEOUT"); ok {
		p.setDefault(flagQuitReqTime, "QUIT_REQUEST_TIMEOUT", v)
	}
	p.scuttleUnsupported(*s)
}

func (p *parser) scuttleUnsupported(s scuttle) {
	if s.pkill {
		p.note(slog.LevelWarn, "ISTIO_FALLBACK_PKILL=true is not supported: sidesync never kills other containers' processes; it retries the quit request instead")
	}
	if s.sigurg {
		p.note(slog.LevelInfo, "BYPASS_SIGURG is not needed: sidesync never forwards SIGURG or SIGCHLD")
	}
}

// scuttleSidecars locates the sidecars from scuttle's variables: Envoy at ENVOY_ADMIN_API (quit
// through Istio's agent where scuttle would have used its API or pkill), and a quit-only
// sidecar per GENERIC_QUIT_ENDPOINTS entry. Neither means no sidecar, as in scuttle.
func (p *parser) scuttleSidecars(s scuttle) {
	if s.adminAPI == "" && len(s.generic) == 0 {
		p.disable("scuttle's variables without ENVOY_ADMIN_API", slog.LevelInfo,
			"scuttle's variables are set but ENVOY_ADMIN_API is not (as scuttle)")
		return
	}
	if s.adminAPI != "" {
		envoy := sidecar.Sidecar{Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: s.adminAPI}}
		if c, ok := p.scuttleIstioQuit(s); ok {
			envoy.Quit = &c
		}
		p.compatSidecars = append(p.compatSidecars, envoy)
	}
	for _, u := range s.generic {
		p.requireLoopback("GENERIC_QUIT_ENDPOINTS", u)
		name := u
		if parsed, err := url.Parse(u); err == nil {
			name = parsed.Host
		}
		p.compatSidecars = append(p.compatSidecars, sidecar.Sidecar{Name: name, Quit: &sidecar.Call{URL: u}})
	}
}

// scuttleIstioQuit is the call that replaces scuttle's Istio quit (or its pkill fallback).
func (p *parser) scuttleIstioQuit(s scuttle) (sidecar.Call, bool) {
	if s.genericOnly || s.neverKill {
		return sidecar.Call{}, false
	}
	if !IsLoopback(s.adminAPI) {
		p.note(slog.LevelWarn, "ENVOY_ADMIN_API %s is not a loopback address: the proxy will not be told to quit (as scuttle)", s.adminAPI)
		return sidecar.Call{}, false
	}
	if s.istioQuitAPI != "" {
		p.requireLoopback("ISTIO_QUIT_API", s.istioQuitAPI)
		return sidecar.EnvoyQuit(s.istioQuitAPI), true
	}
	envoy := sidecar.EnvoyQuit(s.adminAPI)
	u, err := url.Parse(s.adminAPI)
	if err != nil {
		return envoy, true
	}
	// Istio's agent listens on 15020 next to Envoy's admin on 15000 (the catalog's Istio row); it
	// stops Envoy at once and exits 0. Where nothing listens on 15020 (plain Envoy, as in OSM),
	// Envoy's own /quitquitquit is used instead.
	port, ok := catalog.QuitBesideEnvoyAdmin(u.Port())
	if !ok {
		return envoy, true
	}
	u.Host = net.JoinHostPort(u.Hostname(), port)
	agent := sidecar.EnvoyQuit(u.String())
	agent.Alternates = []string{envoy.URL}
	return agent, true
}

func (p *parser) requireLoopback(name, u string) {
	if !p.in.allowRemoteQuit && !IsLoopback(u) {
		p.problem(fmt.Errorf("%s (scuttle): quit URL %s is not on a loopback address; set %s=true to allow it",
			name, u, EnvName(flagAllowRemote)))
	}
}
