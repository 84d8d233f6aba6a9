package config

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// The environment contracts of the tools sidesync replaces, accepted unchanged so that users
// switch without editing manifests (docs/PRIOR-ART.md 3). The package comment gives the
// precedence; in short, sidesync's own settings decide where the sidecars are, and the other
// tools' behaviour variables fill only what no flag or SIDESYNC_* variable set.

// scuttleLocationVars are scuttle's variables that say where a sidecar is.
var scuttleLocationVars = []string{"ENVOY_ADMIN_API", "ISTIO_QUIT_API", "GENERIC_QUIT_ENDPOINTS"}

// sidecarFlags are sidesync's settings that say where the sidecars are (--disabled: nowhere).
var sidecarFlags = []string{flagSidecar, flagAdmin, flagReadyURL, flagQuitURL, flagDisabled}

// applyCompat applies the article's and scuttle's contracts below sidesync's own settings.
func (p *parser) applyCompat() {
	own := p.ownSidecarSources() // before any compatibility variable sets anything
	a := p.readArticle()
	s := p.readScuttle()
	p.articleBehaviour(a)
	p.scuttleBehaviour(s)
	if len(own) > 0 {
		p.noteIgnored(own, a)
		return
	}
	switch {
	case a.on:
		if !p.contradicts(a) {
			p.articleSidecar(a)
		}
	case a.proxy != "":
		if !p.contradicts(a) {
			p.disable(describe("PROXY", a.proxy), a.offLevel(), "%s is not \"true\" (the article's contract)", describe("PROXY", a.proxy))
		}
	case s != nil:
		p.scuttleSidecars(*s)
	}
}

// ownSidecarSources lists the flags and SIDESYNC_* variables that say where the sidecars are
// ("--admin", "SIDESYNC_SIDECARS"). --disabled=false says nothing about them.
func (p *parser) ownSidecarSources() []string {
	var out []string
	for _, name := range sidecarFlags {
		src, ok := p.source[name]
		if ok && (name != flagDisabled || p.cfg.Disabled) {
			out = append(out, src)
		}
	}
	return out
}

// noteIgnored says which of the other tools' location variables sidesync's own settings
// overrule.
func (p *parser) noteIgnored(own []string, a article) {
	var ignored []string
	if a.proxy != "" {
		ignored = append(ignored, "PROXY")
	}
	if _, ok := p.env("proxyEndpoint"); ok && a.on {
		ignored = append(ignored, "proxyEndpoint")
	}
	for _, name := range scuttleLocationVars {
		if _, ok := p.env(name); ok {
			ignored = append(ignored, name)
		}
	}
	if len(ignored) == 0 {
		return
	}
	verb := "is"
	if len(ignored) > 1 {
		verb = "are"
	}
	p.note(slog.LevelInfo, "the sidecars are set by %s, so %s %s ignored for waiting and quitting (flags and SIDESYNC_* variables come before the article's and scuttle's variables)",
		strings.Join(own, ", "), strings.Join(ignored, ", "), verb)
}

// contradicts reports, as a problem, each of scuttle's location variables set beside PROXY:
// PROXY=true locates the sidecar itself, and PROXY set to anything else means no sidecar.
func (p *parser) contradicts(a article) bool {
	found := false
	for _, name := range scuttleLocationVars {
		v, ok := p.env(name)
		if !ok {
			continue
		}
		why := "both configure the sidecar"
		if !a.on {
			why = fmt.Sprintf("contradict each other: PROXY not \"true\" means no sidecar, %s names one", name)
		}
		p.problem(fmt.Errorf("%s (the article's contract) and %s (scuttle's) %s: keep one, or name the sidecar with --sidecar or --admin",
			describe("PROXY", a.proxy), describe(name, v), why))
		found = true
	}
	return found
}

// disable turns the sidecars off for a compatibility contract that means "no sidecar", unless
// --disabled=false (or SIDESYNC_DISABLED=false) says otherwise.
func (p *parser) disable(source string, level slog.Level, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	if p.given(flagDisabled) {
		p.note(slog.LevelInfo, "%s, which means no sidecar, but %s wins", why, describe(p.source[flagDisabled], "false"))
		return
	}
	p.note(level, "%s: not waiting for or quitting any sidecar", why)
	p.set(flagDisabled, source, "true")
}

func (p *parser) anyEnv(names []string) bool {
	for _, n := range names {
		if _, ok := p.env(n); ok {
			return true
		}
	}
	return false
}

// compatURL, compatBool and compatDuration parse one of scuttle's variables into dst; a bad
// value is a problem that names the variable (scuttle logged and ignored it).
func (p *parser) compatURL(name string, dst *string) {
	if v, ok := p.env(name); ok {
		if err := (urlValue{dst}).Set(v); err != nil {
			p.problem(fmt.Errorf("%s (scuttle): %w", describe(name, v), err))
		}
	}
}

func (p *parser) compatBool(name string, dst *bool) {
	if v, ok := p.env(name); ok {
		if err := (boolValue{dst}).Set(v); err != nil {
			p.problem(fmt.Errorf("%s (scuttle): %w", describe(name, v), err))
		}
	}
}

func (p *parser) compatDuration(name string, dst *time.Duration) bool {
	v, ok := p.env(name)
	if !ok {
		return false
	}
	if err := (durationValue{dst}).Set(v); err != nil {
		p.problem(fmt.Errorf("%s (scuttle): %w", describe(name, v), err))
		return false
	}
	return true
}
