package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sidesync/sidesync/internal/redact"
	"github.com/sidesync/sidesync/sidecar"
)

// parser accumulates settings from the three layers and every problem found on the way.
type parser struct {
	mode      Mode
	lookupEnv func(string) (string, bool)
	fs        *flag.FlagSet
	raw       raw
	source    map[string]string // flag name -> where its value came from ("--timeout", "SIDESYNC_TIMEOUT", ...)
	// compatSidecars are the sidecars the article's or scuttle's variables locate, used only
	// when no flag or SIDESYNC_* variable names one; their quit calls are checked already.
	compatSidecars []sidecar.Sidecar
	problems       []error
	notes          []Note
}

func newParser(mode Mode, lookupEnv func(string) (string, bool)) *parser {
	p := &parser{mode: mode, lookupEnv: lookupEnv, source: make(map[string]string)}
	p.fs = newFlagSet(&p.raw)
	return p
}

// env returns a variable's value; an empty value counts as unset, as Kubernetes manifests often
// carry "name: X, value: ”" to switch something off.
func (p *parser) env(name string) (string, bool) {
	v, ok := p.lookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return v, true
}

// set gives flag name the value v, recording where it came from; a bad value is a problem that
// names its source.
func (p *parser) set(name, source, v string) {
	before := len(p.raw.specs)
	if err := p.fs.Lookup(name).Value.Set(v); err != nil {
		p.problem(fmt.Errorf("%s: %w", describe(source, v), err))
		return
	}
	p.source[name] = source
	for i := before; i < len(p.raw.specs); i++ {
		p.raw.specs[i].source = source // so that a bad override names where it came from
	}
}

// setDefault sets flag name from a compatibility variable unless a flag or SIDESYNC_* variable
// already set it.
func (p *parser) setDefault(name, source, v string) {
	if _, done := p.source[name]; !done {
		p.set(name, source, v)
	}
}

// given reports whether a flag was set by any layer.
func (p *parser) given(name string) bool {
	_, ok := p.source[name]
	return ok
}

// describe renders a setting and its value for messages: --timeout="5x", SIDESYNC_TIMEOUT="5x".
// A user and password in the value are masked, with or without a scheme.
func describe(source, v string) string {
	v = maskUserinfo(v)
	if strings.HasPrefix(source, "--") {
		return fmt.Sprintf("%s %q", source, v)
	}
	return fmt.Sprintf("%s=%q", source, v)
}

// problem records a usage problem. Its text is redacted here, once for every message: a URL's
// user and password are never printed (the Config keeps them; the HTTP layer needs them).
func (p *parser) problem(err error) {
	p.problems = append(p.problems, errors.New(redact.String(err.Error())))
}

// note records a message for the log, redacted like problems.
func (p *parser) note(level slog.Level, format string, args ...any) {
	p.notes = append(p.notes, Note{Level: level, Msg: redact.String(fmt.Sprintf(format, args...))})
}

// build derives the Config from the settings and checks combinations.
func (p *parser) build(command []string) *Config {
	r := &p.raw
	cfg := &Config{
		Mode: p.mode, Command: command, Disabled: r.disabled, Wait: !r.noWait,
		ProbeTimeout: r.probeTimeout, StartAnyway: r.onTimeout == "start-anyway",
		QuitPolicy: QuitPolicy(r.quit), QuitTimeout: r.quitTimeout,
		QuitRequestTimeout: r.quitRequestTimeout, QuitRetries: r.quitRetries,
		SignalGroup: r.signalGroup, Subreaper: r.subreaper, LogFormat: r.logFormat,
		TerminationLog: r.terminationLog, MaxRetries: r.maxRetries,
		PodInfoDir: r.podInfo, KubeAPI: r.kubeAPI, ServiceAccountDir: r.serviceAccountDir,
		RequireSidecar: r.requireSidecar,
	}
	_ = cfg.LogLevel.UnmarshalText([]byte(r.logLevel))
	p.checkRequireSidecar(cfg)
	p.buildSidecars(cfg)
	p.buildBackoff(cfg)
	p.checkMode(cfg)
	cfg.Notes = p.notes
	return cfg
}

// sourceOr names where flag name came from, or the flag itself when it kept its default.
func (p *parser) sourceOr(name string) string {
	if s, ok := p.source[name]; ok {
		return s
	}
	return "--" + name
}

// buildBackoff derives the probe policy and its limits.
func (p *parser) buildBackoff(cfg *Config) {
	r := &p.raw
	switch r.backoff {
	case backoffExponential:
		cfg.Backoff = sidecar.Exponential{Initial: r.interval, Factor: 2}
	case backoffPolly:
		cfg.Backoff = sidecar.DecorrelatedJitter{Median: r.interval, FastFirst: r.fastFirst}
	default:
		cfg.Backoff = sidecar.Constant{Delay: r.interval}
	}
	// Polly allows a zero median (all delays zero); with a retry count that is bounded, without
	// one it would probe without pause until the timeout.
	if r.interval == 0 && (r.backoff != backoffPolly || r.maxRetries < 0) {
		p.problem(fmt.Errorf("%s: must be more than 0 with the %s backoff unless a retry count is given (it would probe without pause)",
			describe(p.sourceOr(flagInterval), "0"), r.backoff))
	}
	cfg.Backoff = sidecar.Cap(cfg.Backoff, r.maxDelay)
	if r.maxRetries >= 0 {
		cfg.Backoff = sidecar.Limit(cfg.Backoff, r.maxRetries)
	}
	cfg.Timeout = r.timeout
	if !p.given(flagTimeout) && r.maxRetries >= 0 {
		cfg.Timeout = 0 // a retry count alone bounds the wait, as in the article
	}
	for _, name := range []string{flagProbeTimeout, flagQuitReqTime, "quit-timeout"} {
		if d := p.fs.Lookup(name).Value.(durationValue); *d.d == 0 {
			p.problem(fmt.Errorf("%s: must be more than 0", describe(p.sourceOr(name), "0s")))
		}
	}
}

// checkRequireSidecar refuses --require-sidecar with --disabled (or a compatibility contract that
// means no sidecar): one demands a sidecar, the other touches none.
func (p *parser) checkRequireSidecar(cfg *Config) {
	if cfg.RequireSidecar && cfg.Disabled {
		p.problem(fmt.Errorf("%s and %s contradict each other: %s fails when no sidecar is found, and %s means no sidecar; drop one",
			p.source[flagRequire], p.source[flagDisabled], p.source[flagRequire], p.source[flagDisabled]))
	}
}

// checkMode checks what depends on the subcommand.
func (p *parser) checkMode(cfg *Config) {
	switch {
	case cfg.Mode == ModeRun && len(cfg.Command) == 0:
		p.problem(fmt.Errorf("no command given: use sidesync [flags] -- CMD [ARGS...] (see sidesync --help)"))
	case cfg.Mode != ModeRun && len(cfg.Command) > 0:
		p.problem(fmt.Errorf("unexpected arguments for sidesync %s: %q", cfg.Mode, cfg.Command))
	}
}
