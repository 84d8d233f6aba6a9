package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/redact"
	"github.com/sidesync/sidesync/sidecar"
)

// parser accumulates settings from the three layers and every problem found on the way.
type parser struct {
	lookupEnv func(string) (string, bool)
	fs        *flag.FlagSet // its flags set cfg's fields and in directly
	cfg       *Config       // the Config being built, defaults first
	in        inputs
	source    map[string]string // flag name -> where its value came from ("--timeout", "SIDESYNC_TIMEOUT", ...)
	// compatSidecars are the sidecars the article's or scuttle's variables locate, used only
	// when no flag or SIDESYNC_* variable names one; their quit calls are checked already.
	compatSidecars []sidecar.Sidecar
	problems       []error
	notes          []Note
}

func newParser(mode Mode, lookupEnv func(string) (string, bool)) *parser {
	p := &parser{lookupEnv: lookupEnv, cfg: defaultConfig(), source: make(map[string]string)}
	p.cfg.Mode = mode
	p.fs = newFlagSet(p.cfg, &p.in)
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
	before := len(p.in.specs)
	if err := p.fs.Lookup(name).Value.Set(v); err != nil {
		p.problem(fmt.Errorf("%s: %w", describe(source, v), err))
		return
	}
	p.source[name] = source
	for i := before; i < len(p.in.specs); i++ {
		p.in.specs[i].source = source // so that a bad override names where it came from
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

// build completes the Config: the command, the derived values (Sidecars, Detect, Backoff, the
// lifted Timeout) and the checks of combinations. Every other field was set by its flag.
func (p *parser) build(command []string) *Config {
	cfg := p.cfg
	cfg.Command = command
	p.checkRequireSidecar(cfg)
	p.buildSidecars(cfg)
	p.buildBackoff(cfg)
	p.checkMode(cfg)
	p.checkPeers(cfg)
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

// checkRequireSidecar refuses --require-sidecar with --disabled (or a compatibility contract that
// means no sidecar): one demands a sidecar, the other touches none.
func (p *parser) checkRequireSidecar(cfg *Config) {
	if cfg.RequireSidecar && cfg.Disabled {
		p.problem(fmt.Errorf("%s and %s contradict each other: %s fails when no sidecar is found, and %s means no sidecar; drop one",
			p.source[flagRequire], p.source[flagDisabled], p.source[flagRequire], p.source[flagDisabled]))
	}
}

// checkMode checks what depends on the subcommand. The wrapper needs a command, after "--" or
// in --platform-commands; a command after "--" wins over the platform commands.
func (p *parser) checkMode(cfg *Config) {
	switch {
	case cfg.Mode == ModeRun && len(cfg.Command) == 0 && cfg.PlatformCommands == nil:
		p.problem(fmt.Errorf("no command given: use sidesync [flags] -- CMD [ARGS...] (see sidesync --help)"))
	case cfg.Mode != ModeRun && len(cfg.Command) > 0:
		p.problem(fmt.Errorf("unexpected arguments for sidesync %s: %q", cfg.Mode, cfg.Command))
	case cfg.Mode == ModeRun && len(cfg.Command) > 0 && cfg.PlatformCommands != nil:
		p.note(slog.LevelDebug, "%s is ignored: a command follows --", p.sourceOr(flagPlatformCmds))
	}
}
