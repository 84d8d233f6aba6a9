// Command bench is sidesync's benchmark suite: real processes, the emulated Envoy on loopback,
// the release build of the binary. It prints a table and, with -write, rewrites the generated
// part of BENCHMARKS.md. Run it from the repository root:
//
//	go run ./bench                # the full suite, about 7 minutes on 2 cores
//	go run ./bench -write         # and update BENCHMARKS.md
//	go run ./bench -quick         # a smoke run of every measurement, about a minute
//	go run ./bench -only memory   # some measurements only (never with -write)
//
// Nothing here is a test: no number can fail anything; the targets are printed beside the
// numbers for people to read.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// options are the suite's flags.
type options struct {
	runs     int     // lag runs per policy
	quitRuns int     // quit runs per sidecar count
	pairs    int     // overhead pairs
	seed     uint64  // seeds the sidecars' ready delays
	minReady float64 // ready delay range, seconds
	maxReady float64
	longWait time.Duration   // the long waits' timeout; zero skips them
	only     map[string]bool // the measurements to run; nil means all
	write    string          // BENCHMARKS.md to update, or ""
	quick    bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == stampArg {
		os.Exit(stamp(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	dir, err := os.MkdirTemp("", "sidesync-bench-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s := &suite{o: o, dir: dir, log: stderr}
	if err := s.prepare(); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	r, err := s.measure()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	report := r.markdown(o)
	fmt.Fprint(stdout, report)
	if o.write != "" {
		if err := writeBenchmarks(o.write, report); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(stderr, "bench: updated", o.write)
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var write bool
	fs.IntVar(&o.runs, "runs", 30, "ready-to-start runs per policy")
	fs.IntVar(&o.quitRuns, "quit-runs", 20, "quit-latency runs per sidecar count")
	fs.IntVar(&o.pairs, "pairs", 300, "overhead pairs (sidesync -- true, true)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the sidecars' ready delays")
	fs.BoolVar(&write, "write", false, "rewrite the generated part of BENCHMARKS.md")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: few runs of everything")
	fs.DurationVar(&o.longWait, "long-wait", time.Minute, "how long the long waits for a never-ready sidecar last (0: skip them)")
	only := fs.String("only", "", "run only these measurements, comma-separated: "+strings.Join(stepNames(), ", "))
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.minReady, o.maxReady = 0.3, 6.0
	if o.quick {
		o.runs, o.quitRuns, o.pairs, o.maxReady = 3, 3, 20, 1.0
		o.longWait = min(o.longWait, 5*time.Second)
	}
	if *only != "" {
		o.only = map[string]bool{}
		for name := range strings.SplitSeq(*only, ",") {
			if !slices.Contains(stepNames(), name) {
				err := fmt.Errorf("-only: no measurement %q (there are %s)", name, strings.Join(stepNames(), ", "))
				fmt.Fprintln(stderr, err)
				return o, err
			}
			o.only[name] = true
		}
		if write {
			err := errors.New("-only and -write: a partial report would replace the whole one")
			fmt.Fprintln(stderr, err)
			return o, err
		}
	}
	if write {
		o.write = filepath.Join(".", "BENCHMARKS.md")
	}
	return o, nil
}
