package sidecar

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"time"
)

// A Backoff is a retry-delay policy. Delays returns the delays to sleep before retry 1, 2, 3, ...;
// the sequence ends when no more retries are allowed (an endless sequence means "retry until
// something else stops you", such as a timeout).
//
// A Backoff is a pure function of its fields and of the uniform samples that rand supplies:
// the same samples give the same delays, and every call to Delays starts a fresh sequence, like
// enumerating Polly's IEnumerable again. rand must return samples in [0, 1); nil means
// math/rand/v2's Float64. Policies without jitter never call rand.
type Backoff interface {
	Delays(rand func() float64) iter.Seq[time.Duration]
	String() string
}

// maxDelay is the largest delay any policy returns: the longest time.Duration.
const maxDelay = time.Duration(math.MaxInt64)

// Constant waits the same Delay before every retry; a negative Delay counts as zero.
type Constant struct {
	Delay time.Duration
}

// Delays implements Backoff.
func (c Constant) Delays(func() float64) iter.Seq[time.Duration] {
	d := max(c.Delay, 0)
	return func(yield func(time.Duration) bool) {
		for yield(d) {
		}
	}
}

func (c Constant) String() string { return "constant " + c.Delay.String() }

// Exponential waits Initial before the first retry and multiplies the delay by Factor (2 when
// zero or less than 1) after each one, never exceeding Max (no cap when zero).
type Exponential struct {
	Initial time.Duration
	Factor  float64
	Max     time.Duration
}

// Delays implements Backoff.
func (e Exponential) Delays(func() float64) iter.Seq[time.Duration] {
	factor := e.Factor
	if factor < 1 || math.IsNaN(factor) {
		factor = 2
	}
	limit := maxDelay
	if e.Max > 0 {
		limit = e.Max
	}
	return func(yield func(time.Duration) bool) {
		d := float64(max(e.Initial, 0))
		for {
			if !yield(durationOf(d, limit)) {
				return
			}
			d *= factor
		}
	}
}

func (e Exponential) String() string {
	s := fmt.Sprintf("exponential %v x%g", e.Initial, e.Factor)
	if e.Max > 0 {
		s += " max " + e.Max.String()
	}
	return s
}

// durationOf converts nanoseconds held in a float64 to a Duration no larger than limit. It checks
// the range first because Go's float-to-int conversion of out-of-range values is undefined.
func durationOf(ns float64, limit time.Duration) time.Duration {
	if math.IsNaN(ns) || ns >= float64(limit) {
		return limit
	}
	return time.Duration(max(ns, 0))
}

// Limit allows at most retries delays of b: Limit(b, 0) never retries.
func Limit(b Backoff, retries int) Backoff { return limited{b, retries} }

type limited struct {
	b Backoff
	n int
}

func (l limited) Delays(rand func() float64) iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		if l.n <= 0 {
			return
		}
		i := 0
		for d := range l.b.Delays(rand) {
			if !yield(d) {
				return
			}
			if i++; i >= l.n {
				return
			}
		}
	}
}

func (l limited) String() string { return fmt.Sprintf("%v, %d retries", l.b, l.n) }

// Cap limits every delay of b to at most max (no cap when max <= 0). Like Polly v8's MaxDelay,
// it changes only what is returned: b's own state keeps growing uncapped.
func Cap(b Backoff, max time.Duration) Backoff {
	if max <= 0 {
		return b
	}
	return capped{b, max}
}

type capped struct {
	b   Backoff
	max time.Duration
}

func (c capped) Delays(rand func() float64) iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		for d := range c.b.Delays(rand) {
			if !yield(min(d, c.max)) {
				return
			}
		}
	}
}

func (c capped) String() string { return fmt.Sprintf("%v, each at most %v", c.b, c.max) }

// randOrDefault returns rand, or the process-wide generator of math/rand/v2 when rand is nil.
func randOrDefault(r func() float64) func() float64 {
	if r == nil {
		return rand.Float64
	}
	return r
}
