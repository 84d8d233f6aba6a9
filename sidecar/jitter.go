package sidecar

import (
	"fmt"
	"iter"
	"math"
	"time"
)

// DecorrelatedJitter is Polly's decorrelated-jitter backoff "V2"
// (Polly.Contrib.WaitAndRetry Backoff.DecorrelatedJitterBackoffV2, adopted unchanged by Polly v8),
// the policy of the article sidesync started from. Retry i (0-based) waits
//
//	(f(i+U_i) - f(i-1+U_{i-1})) / 1.4 * Median,   f(t) = 2^t * tanh(sqrt(4t)),  f(t_{-1}) = 0,
//
// with U_i uniform in [0, 1), computed in 100 ns ticks and truncated like the C# original, so the
// cumulative wait before retry i has a median of about 2^i * Median. The sequence is endless; wrap
// it in Limit to get Polly's retryCount (see Polly). Reference: docs/SIDECARS.md section 13.
type DecorrelatedJitter struct {
	// Median is Polly's medianFirstRetryDelay; negative counts as zero.
	Median time.Duration
	// FastFirst makes the first delay zero, as Polly's fastFirst: the next delay then uses the
	// whole f(1+U) rather than a difference, exactly as the C# code does.
	FastFirst bool
	// MaxDelay caps each returned delay, as Polly v8's MaxDelay; zero means no cap. The internal
	// state keeps the uncapped value, so later delays stay capped rather than shrinking.
	MaxDelay time.Duration
}

// Polly returns the article's policy, DecorrelatedJitterBackoffV2(median, retryCount, fastFirst):
// at most retryCount delays.
func Polly(median time.Duration, retryCount int, fastFirst bool) Backoff {
	return Limit(DecorrelatedJitter{Median: median, FastFirst: fastFirst}, retryCount)
}

const (
	nsPerTick        = 100          // a .NET TimeSpan tick is 100 ns
	pFactor          = 4.0          // "helps smooth the first calculated delay"
	onePointFour     = 1.4          // rpScalingFactor = 1/1.4: medians near 1, 2, 4, ... rather than 1.4, 2.8, ...
	maxTimeSpanTicks = 1<<63 - 1024 // (double)TimeSpan.MaxValue.Ticks - 1000, as the C# double rounds it
)

// Delays implements Backoff.
func (j DecorrelatedJitter) Delays(rand func() float64) iter.Seq[time.Duration] {
	rand = randOrDefault(rand)
	rpScalingFactor := 1 / float64(onePointFour) // as in C#: one division of two doubles
	targetTicks := float64(max(j.Median, 0) / nsPerTick)
	return func(yield func(time.Duration) bool) {
		i := 0
		if j.FastFirst {
			i++
			if !yield(0) {
				return
			}
		}
		prev := 0.0
		for ; ; i++ {
			t := float64(i) + rand()
			next := math.Pow(2, t) * math.Tanh(math.Sqrt(pFactor*t))
			d := j.fromTicks((next - prev) * rpScalingFactor * targetTicks)
			if !yield(d) {
				return
			}
			prev = next
		}
	}
}

// fromTicks converts a delay in ticks to a Duration the way the C# code does (min with the
// TimeSpan overflow cap, then truncation), with Polly v8's guard for +Inf and NaN (which appear
// once 2^t overflows, t >= 1024) and a cap at the longest Duration, which is far shorter than
// the longest TimeSpan.
func (j DecorrelatedJitter) fromTicks(ticks float64) time.Duration {
	if math.IsNaN(ticks) || ticks > maxTimeSpanTicks {
		ticks = maxTimeSpanTicks
	}
	d := maxDelay
	if whole := int64(ticks); whole <= int64(maxDelay)/nsPerTick {
		d = time.Duration(whole) * nsPerTick
	}
	if j.MaxDelay > 0 {
		d = min(d, j.MaxDelay)
	}
	return max(d, 0)
}

func (j DecorrelatedJitter) String() string {
	s := fmt.Sprintf("decorrelated jitter (Polly V2), median first delay %v", j.Median)
	if j.FastFirst {
		s += ", fast first"
	}
	if j.MaxDelay > 0 {
		s += ", each at most " + j.MaxDelay.String()
	}
	return s
}
