package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// microResult is one Go micro-benchmark.
type microResult struct {
	name, nsPerOp, bytesPerOp, allocsPerOp string
}

// microBenchmarks are the hot paths: a probe of a wait on a kept connection (what a long wait
// repeats; its allocs/op must stay 0) and on a new one, a one-off probe, a request of the
// client on a kept connection and on a connection of its own (quit calls), and the backoff
// computations.
var microBenchmarks = []struct{ pkg, pattern string }{
	{"./sidecar", "^(BenchmarkProbeKeepAlive|BenchmarkProbeNewConnection|BenchmarkProbe|BenchmarkDecorrelatedJitter|BenchmarkConstant)$"},
	{"./internal/pod/httpc", "^(BenchmarkClientDo|BenchmarkDo)$"},
}

// measureMicro runs the Go micro-benchmarks and collects their results.
func (s *suite) measureMicro(r *results) error {
	benchtime := "2s"
	if s.o.quick {
		benchtime = "100x"
	}
	for _, b := range microBenchmarks {
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", b.pattern, "-benchmem", "-benchtime", benchtime, b.pkg)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %v\n%s", b.pkg, err, out.String())
		}
		r.micro = append(r.micro, parseBench(b.pkg, out.String())...)
	}
	return nil
}

// parseBench reads "BenchmarkX-2  1000  1234 ns/op  56 B/op  3 allocs/op" lines.
func parseBench(pkg, out string) []microResult {
	var res []microResult
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		m := microResult{name: strings.TrimPrefix(pkg, "./") + " " + f[0]}
		for i := 2; i+1 < len(f); i += 2 {
			switch f[i+1] {
			case "ns/op":
				m.nsPerOp = f[i]
			case "B/op":
				m.bytesPerOp = f[i]
			case "allocs/op":
				m.allocsPerOp = f[i]
			}
		}
		res = append(res, m)
	}
	return res
}
