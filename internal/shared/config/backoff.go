package config

import (
	"fmt"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// BackoffKind is the shape of the delays between probes, as --backoff names it.
type BackoffKind string

// Backoff kinds accepted by --backoff.
const (
	BackoffConstant    BackoffKind = "constant"    // sidecar.Constant
	BackoffExponential BackoffKind = "exponential" // sidecar.Exponential, doubling
	BackoffPolly       BackoffKind = "polly"       // sidecar.DecorrelatedJitter, the article's policy
)

// NoRetryLimit is BackoffPolicy.MaxRetries when no retry count was given.
const NoRetryLimit = -1

// BackoffPolicy is the probe policy as given by --backoff, --interval, --max-interval,
// --fast-first and --max-retries (or the article's interval and maxRetries).
type BackoffPolicy struct {
	Kind        BackoffKind
	Interval    time.Duration // constant: the delay; exponential: the first; polly: the median first
	MaxInterval time.Duration // longest single delay; zero means no limit
	FastFirst   bool          // polly: the first retry is immediate
	MaxRetries  int           // retries before giving up; NoRetryLimit means none
}

// Backoff returns the delays the policy describes, capped by MaxInterval and limited to
// MaxRetries.
func (p BackoffPolicy) Backoff() sidecar.Backoff {
	var b sidecar.Backoff
	switch p.Kind {
	case BackoffExponential:
		b = sidecar.Exponential{Initial: p.Interval, Factor: 2}
	case BackoffPolly:
		b = sidecar.DecorrelatedJitter{Median: p.Interval, FastFirst: p.FastFirst}
	default:
		b = sidecar.Constant{Delay: p.Interval}
	}
	b = sidecar.Cap(b, p.MaxInterval)
	if p.MaxRetries != NoRetryLimit {
		b = sidecar.Limit(b, p.MaxRetries)
	}
	return b
}

// buildBackoff derives Backoff from BackoffPolicy and lifts the default timeout when a retry
// count alone bounds the wait; it checks the values that are valid alone but not together.
func (p *parser) buildBackoff(cfg *Config) {
	bp := cfg.BackoffPolicy
	// Polly allows a zero median (all delays zero); with a retry count that is bounded, without
	// one it would probe without pause until the timeout.
	if bp.Interval == 0 && (bp.Kind != BackoffPolly || bp.MaxRetries == NoRetryLimit) {
		p.problem(fmt.Errorf("%s: must be more than 0 with the %s backoff unless a retry count is given (it would probe without pause)",
			describe(p.sourceOr(flagInterval), "0"), bp.Kind))
	}
	cfg.Backoff = bp.Backoff()
	if !p.given(flagTimeout) && bp.MaxRetries != NoRetryLimit {
		cfg.Timeout = 0 // a retry count alone bounds the wait, as in the article
	}
	for _, name := range []string{flagProbeTimeout, flagQuitReqTime, flagQuitTimeout} {
		if d := p.fs.Lookup(name).Value.(durationValue); *d.d == 0 {
			p.problem(fmt.Errorf("%s: must be more than 0", describe(p.sourceOr(name), "0s")))
		}
	}
}
