package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/sidecar"
)

// The contract of the .NET job in the article sidesync started from: PROXY=true turns waiting
// and quitting on; proxyEndpoint is the admin base URL with a trailing slash ("ready" and
// "quitquitquit" are appended to it); interval is Polly's median first retry delay in whole
// seconds; maxRetries the retry count. The article compares PROXY with "true" exactly.

// article holds the article's variables, parsed.
type article struct {
	proxy       string // PROXY's value; "" when unset
	on          bool   // PROXY is exactly "true": the contract is in use
	endpoint    string // proxyEndpoint, checked; "" when unset, invalid or not in use
	interval    int
	retries     int
	hasInterval bool
	hasRetries  bool
}

// readArticle reads PROXY, and the other variables only with PROXY=true: interval, maxRetries
// and proxyEndpoint are generic names that applications use for their own purposes, so without
// PROXY=true they are neither checked nor used.
func (p *parser) readArticle() article {
	a := article{}
	a.proxy, _ = p.env("PROXY")
	a.on = a.proxy == "true"
	if !a.on {
		p.articleUnused(a.proxy)
		return a
	}
	a.interval, a.hasInterval = p.articleSeconds("interval")
	a.retries, a.hasRetries = p.articleSeconds("maxRetries")
	if v, ok := p.env("proxyEndpoint"); ok {
		u, err := parseURL(v)
		if err != nil {
			p.problem(fmt.Errorf("%s (the article's contract): %w", describe("proxyEndpoint", v), err))
		} else {
			a.endpoint = u.String()
		}
	}
	return a
}

// articleUnused says, at debug level, that the article's other variables are left alone, and
// warns about the sample's lowercase proxy.
func (p *parser) articleUnused(proxy string) {
	if v, ok := p.env("proxy"); ok && proxy == "" {
		p.note(slog.LevelWarn, "proxy=%q is set but PROXY is not: the article's sample quits on lowercase proxy, sidesync follows PROXY", v)
	}
	var set []string
	for _, name := range []string{"proxyEndpoint", "interval", "maxRetries"} {
		if _, ok := p.env(name); ok {
			set = append(set, name)
		}
	}
	if len(set) > 0 {
		p.note(slog.LevelDebug, "not using %s: the article's contract is in use only with PROXY=true, and these names are left to the application",
			strings.Join(set, ", "))
	}
}

// offLevel is the level of the note for PROXY set but not "true": a warning for values like
// "True", "1" or "yes" that look meant as true, which the article does not take for true.
func (a article) offLevel() slog.Level {
	if a.proxy == "false" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// articleBehaviour applies interval and maxRetries, each unless a flag or SIDESYNC_* variable
// set the same thing.
func (p *parser) articleBehaviour(a article) {
	if !a.on || (!a.hasInterval && !a.hasRetries) {
		return // sidesync's own fast policy
	}
	p.setDefault(flagBackoff, "interval", string(BackoffPolly))
	interval := a.interval
	if !a.hasInterval {
		interval = 1
		p.note(slog.LevelInfo, "maxRetries without interval: using Polly's policy with a 1s median first delay")
	}
	p.setDefault(flagInterval, "interval", strconv.Itoa(interval)+"s")
	if a.hasRetries {
		p.setDefault(flagMaxRetries, "maxRetries", strconv.Itoa(a.retries))
	}
}

// articleSidecar is the Envoy that PROXY=true waits for and quits: at proxyEndpoint, or at the
// article's admin address.
func (p *parser) articleSidecar(a article) {
	admin, source := a.endpoint, "proxyEndpoint"
	if admin == "" {
		admin, source = DefaultAdmin, "PROXY"
		p.note(slog.LevelInfo, "PROXY=true without proxyEndpoint: using Envoy's admin at %s, as in the article", DefaultAdmin)
	}
	q := sidecar.EnvoyQuit(admin)
	ready := &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: admin}
	p.checkLoopback(source, &q)
	p.checkReadyLoopback(source, ready)
	p.compatSidecars = append(p.compatSidecars, sidecar.Sidecar{Name: "envoy", Ready: ready, Quit: &q})
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
		p.problem(fmt.Errorf("%s (the article's contract): must be a whole number from 0 to 32767", describe(name, v)))
		return 0, false
	}
	return n, true
}
