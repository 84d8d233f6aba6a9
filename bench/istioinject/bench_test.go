//go:build linux

package istioinject

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/testing/loadpods"
)

// injectors builds the two injectors, their log lines written to /dev/null, and returns Istio's
// for its webhook configuration.
func injectors(tb testing.TB) ([]Injector, *Istio) {
	tb.Helper()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { devnull.Close() })
	istio, err := NewIstio(os.DevNull)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(istio.Close)
	return []Injector{
		{Name: "sidesync", Handler: Sidesync(devnull), Path: admission.MutatePath, Mutated: SidesyncMutated},
		{Name: "istio", Handler: istio.Handler, Path: "/inject", Mutated: IstioMutated},
	}, istio
}

// BenchmarkAdmission is one admission of each shape's pod by each injector, in-process, on the
// same AdmissionReview bytes: ns/op (wall time of one goroutine), cpu-ns/op (the process's user
// and system CPU, getrusage, over the loop: with the garbage collector's work on the other core),
// B/op, allocs/op, and the answer's patch in bytes and operations.
func BenchmarkAdmission(b *testing.B) {
	ins, _ := injectors(b)
	b.Logf("load average %s", Loadavg())
	defer func() { b.Logf("load average %s", Loadavg()) }()
	for _, s := range Shapes {
		pod := s.Pod("orders", "")
		review := loadpods.Review("bench-"+s.String(), "orders", pod)
		for _, in := range ins {
			patch, err := in.Admit(review, pod)
			if err != nil {
				b.Fatalf("%s: %v", s, err)
			}
			b.Run(s.String()+"/"+in.Name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime(b)
				for b.Loop() {
					in.Handler.ServeHTTP(discard{}, NewRequest(in.Path, review))
				}
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(pod)), "pod-B")
				b.ReportMetric(float64(len(patch)), "patch-B")
				b.ReportMetric(float64(Ops(patch)), "patch-ops")
			})
		}
	}
}

// cpuTime is the process's user and system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
