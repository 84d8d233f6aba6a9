package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sidesync/sidesync/internal/cluster/lint"
)

const lintUsage = `Usage: kubectl sidesync lint [-f FILE|-]... [-o text|json]

Says, before anything is applied, whether Pods, Jobs and CronJobs will hang or misbehave with
their sidecars, one finding per line with the fix: a classic sidecar that nothing tells to quit,
a quit endpoint that is off (Linkerd, the Cloud SQL Auth Proxy, Vault Agent), a native sidecar
without a startup probe, a podFailurePolicy that sidecars' exit codes trip, restart settings that
run the app again after its sidecars quit. Objects of other kinds are skipped; a List's items
are read. A summary goes to stderr.

Flags:
  -f, --filename FILE   a manifest (YAML documents or JSON objects); - or none: stdin; repeatable
  -o, --output FORMAT   text (one line per finding) or json

Exit codes: 0 no error found (warnings alone: 0), 1 an error found, 2 unreadable input or bad
flags.
`

// lintConfig is lint's command line, checked.
type lintConfig struct {
	files  []string // "-" is stdin
	output string   // "text" or "json"
}

// runLint is "kubectl sidesync lint": read, lint, print, and the exit code.
func runLint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseLintFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, lintUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync lint: %v\n\n%s", err, lintUsage)
		return 2
	}
	objs, err := readObjects(cfg.files, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync lint: %v\n", err)
		return 2
	}
	findings := []lint.Finding{}
	for _, o := range objs {
		findings = append(findings, lint.Lint(o)...)
	}
	counts := lint.Count(len(objs), findings)
	if err := printFindings(stdout, cfg.output, findings, counts); err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync lint: writing the findings: %v\n", err)
		return 2
	}
	fmt.Fprintln(stderr, counts)
	if counts.Errors > 0 {
		return 1
	}
	return 0
}

// parseLintFlags parses and checks the flags, every problem at once.
func parseLintFlags(args []string) (lintConfig, error) {
	cfg := lintConfig{output: "text"}
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("f", "", func(v string) error { cfg.files = append(cfg.files, v); return nil })
	fs.Func("filename", "", func(v string) error { cfg.files = append(cfg.files, v); return nil })
	fs.StringVar(&cfg.output, "o", cfg.output, "")
	fs.StringVar(&cfg.output, "output", cfg.output, "")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q: give manifests with -f FILE", fs.Arg(0)))
	}
	if cfg.output != "text" && cfg.output != "json" {
		errs = append(errs, fmt.Errorf("--output %q: must be text or json", cfg.output))
	}
	if len(cfg.files) == 0 {
		cfg.files = []string{"-"}
	}
	return cfg, errors.Join(errs...)
}

// readObjects reads and decodes every file in turn ("-" is stdin); an error names the file.
func readObjects(files []string, stdin io.Reader) ([]lint.Object, error) {
	var objs []lint.Object
	for _, name := range files {
		got, err := readFile(name, stdin)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// readFile reads and decodes one file ("-" is stdin) through lint.Read, which stops reading at
// its size bound: an endless stdin or a huge file is refused, not read into memory.
func readFile(name string, stdin io.Reader) ([]lint.Object, error) {
	r := stdin
	if name == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		defer f.Close()
		r = f
	}
	objs, err := lint.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return objs, nil
}

// printFindings writes the findings: a line each, or one JSON document with the counts.
func printFindings(w io.Writer, output string, findings []lint.Finding, counts lint.Counts) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Findings []lint.Finding `json:"findings"`
			Errors   int            `json:"errors"`
			Warnings int            `json:"warnings"`
			Objects  int            `json:"objects"`
		}{findings, counts.Errors, counts.Warnings, counts.Objects})
	}
	var b strings.Builder
	for _, f := range findings {
		b.WriteString(f.String() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
