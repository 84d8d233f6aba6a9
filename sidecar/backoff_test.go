package sidecar

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// samples returns a rand func that hands out us in order, and fails the test if more are asked.
func samples(t *testing.T, us ...float64) func() float64 {
	t.Helper()
	i := 0
	return func() float64 {
		if i >= len(us) {
			t.Fatalf("policy asked for sample %d, only %d given", i+1, len(us))
		}
		i++
		return us[i-1]
	}
}

func repeat(u float64, n int) []float64 {
	us := make([]float64, n)
	for i := range us {
		us[i] = u
	}
	return us
}

// take returns the first n delays of b (fewer if the sequence ends).
func take(b Backoff, rand func() float64, n int) []time.Duration {
	var got []time.Duration
	if n <= 0 {
		return got
	}
	for d := range b.Delays(rand) {
		if got = append(got, d); len(got) == n {
			break
		}
	}
	return got
}

// TestDecorrelatedJitterVectors checks the Go port against the deterministic vectors of
// docs/SIDECARS.md section 13.2 (b = 1 s, values in 100 ns ticks). The reference allows one
// tick of difference for last-ulp differences between math libraries.
func TestDecorrelatedJitterVectors(t *testing.T) {
	tests := []struct {
		name      string
		us        []float64
		fastFirst bool
		wantTicks []int64
	}{
		{"U=0.5", repeat(0.5, 6), false, []int64{8974049, 10930035, 20357479, 40459794, 80836316, 161636628}},
		{"U=0", repeat(0, 6), false, []int64{0, 13771822, 14600673, 28658498, 57178068, 114302724}},
		{"U=0.999999", repeat(0.999999, 6), false, []int64{13771812, 14600663, 28658478, 57178029, 114302645, 228580112}},
		{"U mixed", []float64{0.25, 0.75, 0.1, 0.9, 0.5, 0.3}, false, []int64{6469237, 17315687, 6651677, 76116653, 55004420, 119790394}},
		{"fastFirst U=0.5", repeat(0.5, 5), true, []int64{0, 19904084, 20357479, 40459794, 80836316, 161636628}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Polly(time.Second, 6, tt.fastFirst)
			got := take(b, samples(t, tt.us...), 100)
			if len(got) != len(tt.wantTicks) {
				t.Fatalf("got %d delays, want %d", len(got), len(tt.wantTicks))
			}
			for i, d := range got {
				ticks := int64(d / nsPerTick)
				if d%nsPerTick != 0 {
					t.Errorf("delay %d = %v is not a whole number of ticks", i, d)
				}
				if diff := ticks - tt.wantTicks[i]; diff < -1 || diff > 1 {
					t.Errorf("delay %d = %d ticks, want %d (±1)", i, ticks, tt.wantTicks[i])
				}
			}
		})
	}
}

// TestDecorrelatedJitterMedians draws many sequences and compares the median of each delay with
// the 200 000-run simulation in section 13.2 (b = 1 s), within 3 %, and checks the hard bounds
// (f(i+1) - f(i-1)) / 1.4 that no delay may exceed.
func TestDecorrelatedJitterMedians(t *testing.T) {
	const runs = 20000
	wantMedian := []float64{0.898, 1.139, 2.021, 4.011, 7.993, 15.97}
	upper := []float64{1.3772, 2.8372, 4.3262, 8.5836, 17.1498, 34.2864}
	r := rand.New(rand.NewPCG(1, 2))
	cols := make([][]float64, len(wantMedian))
	b := Polly(time.Second, len(wantMedian), false)
	for range runs {
		i := 0
		for d := range b.Delays(r.Float64) {
			s := d.Seconds()
			if s < 0 || s > upper[i] {
				t.Fatalf("delay %d = %v, outside [0, %v]", i, d, upper[i])
			}
			cols[i] = append(cols[i], s)
			i++
		}
	}
	for i, col := range cols {
		slices.Sort(col)
		got := col[len(col)/2]
		if math.Abs(got-wantMedian[i])/wantMedian[i] > 0.03 {
			t.Errorf("median of delay %d = %.3fs, want %.3fs ± 3%%", i, got, wantMedian[i])
		}
	}
}

// TestDecorrelatedJitterCumulativeMedian checks the property that makes the policy useful: the
// cumulative wait before retry i has a median of about 2^i * b (1.01 * 2^i in the simulation).
func TestDecorrelatedJitterCumulativeMedian(t *testing.T) {
	const runs = 20000
	want := []float64{0.898, 1.991, 4.027, 8.077, 16.15}
	r := rand.New(rand.NewPCG(3, 4))
	cums := make([][]float64, len(want))
	for range runs {
		var sum time.Duration
		for i, d := range take(DecorrelatedJitter{Median: time.Second}, r.Float64, len(want)) {
			sum += d
			cums[i] = append(cums[i], sum.Seconds())
		}
	}
	for i, col := range cums {
		slices.Sort(col)
		if got := col[len(col)/2]; math.Abs(got-want[i])/want[i] > 0.03 {
			t.Errorf("median cumulative wait before retry %d = %.3fs, want %.3fs ± 3%%", i+1, got, want[i])
		}
	}
}

// TestDecorrelatedJitterOverflow runs far past t = 1024, where 2^t is +Inf and Inf - Inf is NaN:
// every delay must stay a valid, non-negative Duration, and the late ones must be the cap.
func TestDecorrelatedJitterOverflow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	got := take(DecorrelatedJitter{Median: time.Second}, r.Float64, 1100)
	for i, d := range got {
		if d < 0 {
			t.Fatalf("delay %d = %v is negative", i, d)
		}
	}
	for i := 1030; i < len(got); i++ {
		if got[i] != maxDelay {
			t.Fatalf("delay %d = %v, want the cap %v", i, got[i], maxDelay)
		}
	}
}

// TestDecorrelatedJitterMaxDelay follows Polly v8's documented example shape: with MaxDelay the
// delays stop at the cap and stay there, because the uncapped state keeps growing.
func TestDecorrelatedJitterMaxDelay(t *testing.T) {
	b := DecorrelatedJitter{Median: time.Second, MaxDelay: 15 * time.Second}
	got := take(b, samples(t, repeat(0.5, 8)...), 8)
	uncapped := take(DecorrelatedJitter{Median: time.Second}, samples(t, repeat(0.5, 8)...), 8)
	for i := range got {
		want := min(uncapped[i], 15*time.Second)
		if got[i] != want {
			t.Errorf("delay %d = %v, want %v", i, got[i], want)
		}
	}
	if got[7] != 15*time.Second {
		t.Errorf("delay 7 = %v, want the cap", got[7])
	}
	if diff := cmp.Diff(take(Cap(DecorrelatedJitter{Median: time.Second}, 15*time.Second), samples(t, repeat(0.5, 8)...), 8), got); diff != "" {
		t.Errorf("Cap wrapper differs from MaxDelay (-cap +maxdelay):\n%s", diff)
	}
}

func TestDecorrelatedJitterZeroMedian(t *testing.T) {
	got := take(DecorrelatedJitter{}, samples(t, repeat(0.7, 4)...), 4)
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 0}, got); diff != "" {
		t.Errorf("zero median (-want +got):\n%s", diff)
	}
}

func TestPollyRetryCount(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		got := take(Polly(time.Second, n, false), rand.Float64, 100)
		if len(got) != n {
			t.Errorf("Polly(1s, %d) gave %d delays", n, len(got))
		}
		got = take(Polly(time.Second, n, true), rand.Float64, 100)
		if len(got) != n {
			t.Errorf("Polly(1s, %d, fastFirst) gave %d delays", n, len(got))
		}
	}
}

// TestSequencesRestart checks that Delays is pure: a second enumeration with the same samples
// repeats the first, as re-enumerating Polly's IEnumerable with a seed does.
func TestSequencesRestart(t *testing.T) {
	b := Polly(time.Second, 5, false)
	first := take(b, rand.New(rand.NewPCG(7, 8)).Float64, 5)
	second := take(b, rand.New(rand.NewPCG(7, 8)).Float64, 5)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second enumeration differs (-first +second):\n%s", diff)
	}
}

func TestConstantAndExponential(t *testing.T) {
	noRand := func() float64 { t.Fatal("policy without jitter called rand"); return 0 }
	ms := time.Millisecond
	tests := []struct {
		name string
		b    Backoff
		want []time.Duration
	}{
		{"constant", Constant{20 * ms}, []time.Duration{20 * ms, 20 * ms, 20 * ms}},
		{"constant negative", Constant{-ms}, []time.Duration{0, 0, 0}},
		{"exponential x2", Exponential{Initial: 10 * ms}, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms}},
		{"exponential x1.5 capped", Exponential{Initial: 100 * ms, Factor: 1.5, Max: 200 * ms}, []time.Duration{100 * ms, 150 * ms, 200 * ms, 200 * ms}},
		{"exponential limited", Limit(Exponential{Initial: ms}, 2), []time.Duration{ms, 2 * ms}},
		{"limit zero", Limit(Constant{ms}, 0), nil},
		{"cap", Cap(Exponential{Initial: 300 * ms}, 500*ms), []time.Duration{300 * ms, 500 * ms, 500 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := take(tt.b, noRand, len(tt.want))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExponentialOverflow runs an uncapped exponential long enough to overflow a Duration.
func TestExponentialOverflow(t *testing.T) {
	got := take(Exponential{Initial: time.Second}, nil, 200)
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("delay %d = %v < delay %d = %v", i, got[i], i-1, got[i-1])
		}
	}
	if got[len(got)-1] != maxDelay {
		t.Errorf("last delay %v, want the cap %v", got[len(got)-1], maxDelay)
	}
}

func BenchmarkDecorrelatedJitter(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := DecorrelatedJitter{Median: time.Second}
	for b.Loop() {
		for range take(p, r.Float64, 10) {
		}
	}
}

func BenchmarkConstant(b *testing.B) {
	for b.Loop() {
		for range take(Constant{20 * time.Millisecond}, nil, 10) {
		}
	}
}
