package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// The environment contracts of the tools sidesync replaces, accepted unchanged so that users
// switch without editing manifests (prior-art.md section (c)). Their variables fill only what no
// flag or SIDESYNC_* variable set.

// articleVars are the variables of the .NET job in the article sidesync started from.
var articleVars = []string{"PROXY", "proxyEndpoint", "interval", "maxRetries"}

// scuttleVars are redboxllc/scuttle's variables plus those of its kvij fork.
var scuttleVars = []string{
	"SCUTTLE_LOGGING", "ENVOY_ADMIN_API", "START_WITHOUT_ENVOY", "WAIT_FOR_ENVOY_TIMEOUT",
	"QUIT_WITHOUT_ENVOY_TIMEOUT", "ISTIO_QUIT_API", "NEVER_KILL_ISTIO", "NEVER_KILL_ISTIO_ON_FAILURE",
	"GENERIC_QUIT_ENDPOINTS", "GENERIC_QUIT_ONLY", "QUIT_REQUEST_TIMEOUT", "ISTIO_FALLBACK_PKILL",
	"BYPASS_SIGURG",
}

func (p *parser) anyEnv(names []string) bool {
	for _, n := range names {
		if _, ok := p.env(n); ok {
			return true
		}
	}
	return false
}

// explicitSidecar reports whether a flag or SIDESYNC_* variable says which sidecar to use.
func (p *parser) explicitSidecar() bool {
	return p.given(flagAdmin) || p.given(flagReadyURL) || p.given(flagQuitURL) || p.given(flagDisabled) || p.given(flagSidecar)
}

// applyArticle maps the article's contract: PROXY=true turns waiting and quitting on;
// proxyEndpoint is the admin base URL with a trailing slash ("ready" and "quitquitquit" are
// appended to it); interval is Polly's median first retry delay in whole seconds; maxRetries the
// retry count. PROXY unset or anything but "true" (the article compares exactly) means no sidecar.
func (p *parser) applyArticle() {
	if !p.anyEnv(articleVars) {
		if v, ok := p.env("proxy"); ok {
			p.note(slog.LevelWarn, "proxy=%q is set but PROXY is not: the article's sample quits on lowercase proxy, sidesync follows PROXY", v)
		}
		return
	}
	interval, hasInterval := p.articleSeconds("interval")
	retries, hasRetries := p.articleSeconds("maxRetries")
	endpoint, hasEndpoint := p.env("proxyEndpoint")
	if _, err := parseURL(endpoint); hasEndpoint && err != nil {
		p.problem(fmt.Errorf("proxyEndpoint=%q (the article's contract): %w", endpoint, err))
		hasEndpoint = false
	}
	if proxy, _ := p.env("PROXY"); proxy != "true" {
		p.articleOff(proxy)
		return
	}
	if v, ok := p.env("ENVOY_ADMIN_API"); ok {
		p.problem(fmt.Errorf("PROXY=true (the article's contract) and ENVOY_ADMIN_API=%q (scuttle's) both configure the sidecar: keep one", v))
		return
	}
	if hasEndpoint {
		p.setDefault(flagAdmin, "proxyEndpoint", endpoint)
	} else if !p.explicitSidecar() {
		p.note(slog.LevelInfo, "PROXY=true without proxyEndpoint: using Envoy's admin at %s, as in the article", DefaultAdmin)
		p.setDefault(flagAdmin, "PROXY", DefaultAdmin)
	}
	if !hasInterval && !hasRetries {
		return // sidesync's own fast policy
	}
	p.setDefault(flagBackoff, "interval", backoffPolly)
	if !hasInterval {
		interval = 1
		p.note(slog.LevelInfo, "maxRetries without interval: using Polly's policy with a 1s median first delay")
	}
	p.setDefault(flagInterval, "interval", strconv.Itoa(interval)+"s")
	if hasRetries {
		p.setDefault(flagMaxRetries, "maxRetries", strconv.Itoa(retries))
	}
}

// articleOff handles PROXY not being "true": no sidecar, unless sidesync's own settings name one.
func (p *parser) articleOff(proxy string) {
	if p.explicitSidecar() {
		p.note(slog.LevelInfo, "PROXY=%q is not \"true\", but sidesync's own settings name a sidecar: using them", proxy)
		return
	}
	level := slog.LevelInfo
	if proxy != "" && proxy != "false" {
		level = slog.LevelWarn // "True", "1", "yes": the article compares with "true" exactly
	}
	p.note(level, "PROXY=%q is not \"true\": not waiting for or quitting any sidecar (the article's contract)", proxy)
	p.setDefault(flagDisabled, "PROXY", "true")
}

// articleSeconds reads interval or maxRetries: whole numbers that .NET's Convert.ToInt16 accepts
// and Polly allows (0 to 32767).
func (p *parser) articleSeconds(name string) (int, bool) {
	v, ok := p.env(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > 32767 {
		p.problem(fmt.Errorf("%s=%q (the article's contract): must be a whole number from 0 to 32767", name, v))
		return 0, false
	}
	return n, true
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

// applyScuttle maps scuttle's contract (prior-art.md (c)) minus its bugs: no pkill (a quit
// request instead), readiness from Envoy's /ready or /server_info, bounded quits, invalid values
// rejected rather than ignored.
func (p *parser) applyScuttle() {
	if !p.anyEnv(scuttleVars) {
		return
	}
	s := p.readScuttle()
	if !s.logging {
		p.setDefault(flagLogLevel, "SCUTTLE_LOGGING", "warn")
	}
	if s.adminAPI != "" {
		p.setDefault(flagAdmin, "ENVOY_ADMIN_API", s.adminAPI)
	} else if !p.explicitSidecar() && len(s.generic) == 0 {
		p.note(slog.LevelInfo, "scuttle's variables are set but ENVOY_ADMIN_API is not: no sidecar to wait for or quit (as scuttle)")
		p.setDefault(flagDisabled, "ENVOY_ADMIN_API", "true")
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
	p.scuttleQuit(s)
	if s.pkill {
		p.note(slog.LevelWarn, "ISTIO_FALLBACK_PKILL=true is not supported: sidesync never kills other containers' processes; it retries the quit request instead")
	}
	if s.sigurg {
		p.note(slog.LevelInfo, "BYPASS_SIGURG is not needed: sidesync never forwards SIGURG or SIGCHLD")
	}
}

func (p *parser) readScuttle() scuttle {
	s := scuttle{logging: true}
	p.compatURL("ENVOY_ADMIN_API", &s.adminAPI)
	p.compatURL("ISTIO_QUIT_API", &s.istioQuitAPI)
	if v, ok := p.env("GENERIC_QUIT_ENDPOINTS"); ok {
		if err := (urlListValue{&s.generic}).Set(v); err != nil {
			p.problem(fmt.Errorf("GENERIC_QUIT_ENDPOINTS=%q (scuttle): %w", v, err))
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
	if v, ok := p.env("QUIT_REQUEST_TIMEOUT"); ok {
		p.setDefault(flagQuitReqTime, "QUIT_REQUEST_TIMEOUT", v)
	}
	return s
}

// scuttleQuit builds the quit calls: GENERIC_QUIT_ENDPOINTS, then Istio's agent
// (ISTIO_QUIT_API/quitquitquit) where scuttle would have used the API or pkill.
func (p *parser) scuttleQuit(s scuttle) {
	switch {
	case s.neverKillOnFailure:
		p.setDefault(flagQuit, "NEVER_KILL_ISTIO_ON_FAILURE", string(QuitOnSuccess))
	case s.neverKill && !s.genericOnly:
		p.setDefault(flagQuit, "NEVER_KILL_ISTIO", string(QuitNever))
	}
	if p.given(flagQuitURL) {
		return
	}
	p.compatQuit = &compatQuit{}
	for _, u := range s.generic {
		p.requireLoopback("GENERIC_QUIT_ENDPOINTS", u)
		p.compatQuit.extra = append(p.compatQuit.extra, sidecar.Call{URL: u})
	}
	if !s.genericOnly && !s.neverKill && s.adminAPI != "" {
		if c, ok := p.scuttleIstioQuit(s); ok {
			p.compatQuit.main = &c
		}
	}
	p.source[flagQuitURL] = "scuttle's quit settings"
}

// scuttleIstioQuit is the call that replaces scuttle's Istio quit (or its pkill fallback).
func (p *parser) scuttleIstioQuit(s scuttle) (sidecar.Call, bool) {
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
	if err != nil || u.Port() != "15000" {
		return envoy, true
	}
	// Istio's agent listens on 15020 next to Envoy's admin on 15000 (kvij/scuttle derives it the
	// same way); it drains and exits 0. Where nothing listens on 15020 (plain Envoy, as in OSM),
	// Envoy's own /quitquitquit is used instead.
	u.Host = net.JoinHostPort(u.Hostname(), "15020")
	agent := sidecar.EnvoyQuit(u.String())
	agent.Alternates = []string{envoy.URL}
	return agent, true
}

func (p *parser) requireLoopback(name, u string) {
	if !p.raw.allowRemoteQuit && !IsLoopback(u) {
		p.problem(fmt.Errorf("%s (scuttle): quit URL %s is not on a loopback address; set %s=true to allow it",
			name, u, EnvName(flagAllowRemote)))
	}
}

func (p *parser) compatURL(name string, dst *string) {
	if v, ok := p.env(name); ok {
		if err := (urlValue{dst}).Set(v); err != nil {
			p.problem(fmt.Errorf("%s=%q (scuttle): %w", name, v, err))
		}
	}
}

func (p *parser) compatBool(name string, dst *bool) {
	if v, ok := p.env(name); ok {
		if err := (boolValue{dst}).Set(v); err != nil {
			p.problem(fmt.Errorf("%s=%q (scuttle): %w", name, v, err))
		}
	}
}

func (p *parser) compatDuration(name string, dst *time.Duration) bool {
	v, ok := p.env(name)
	if !ok {
		return false
	}
	if err := (durationValue{dst}).Set(v); err != nil {
		p.problem(fmt.Errorf("%s=%q (scuttle): %w", name, v, err))
		return false
	}
	return true
}
