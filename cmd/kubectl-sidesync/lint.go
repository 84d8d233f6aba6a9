package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/sidesync/sidesync/internal/cluster/lint"
)

// lintLong is lint's description, for --help.
const lintLong = `Says, before anything is applied, whether Pods, Jobs and CronJobs will hang or misbehave with
their sidecars, one finding per line with the fix: a classic sidecar that nothing tells to quit,
a quit endpoint that is off (Linkerd, the Cloud SQL Auth Proxy, Vault Agent), a native sidecar
without a startup probe, a podFailurePolicy that sidecars' exit codes trip, restart settings that
run the app again after its sidecars quit. Objects of other kinds are skipped; a List's items
are read. A summary goes to stderr.

The manifests are read from -f (YAML documents or JSON objects; none: stdin), or, with -n
NAMESPACE or -A (or --context or --kubeconfig), from the cluster: its Jobs and CronJobs and
their namespaces' labels.

It needs, for -n and -A, list on Jobs and CronJobs and get or list on namespaces:
deploy/lint/role.yaml.

Exit codes: 0 no error found (warnings alone: 0), 1 an error found, 2 unreadable input (a file,
or the cluster: an API error such as forbidden) or bad flags.`

const lintExample = `  kubectl sidesync lint -f job.yaml
  kubectl sidesync lint -R -f manifests/ -o json
  helm template my-release chart/ | kubectl sidesync lint
  kubectl sidesync lint -n batch`

// lintConfig is lint's command line, checked.
type lintConfig struct {
	files  filenames
	output output
	kube   *genericclioptions.ConfigFlags
	all    bool // -A
}

// newLintCmd is "kubectl sidesync lint": read, lint, print, and the exit code.
func newLintCmd(e env) *cobra.Command {
	cfg := lintConfig{kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:     "lint [-f FILENAME | -n NAMESPACE | -A]",
		Short:   "Find what will hang or misbehave with sidecars",
		Long:    lintLong,
		Example: lintExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(noArgs(args, "give manifests with -f FILENAME"), cfg.check(cmd)); err != nil {
				return usageErrorf(cmd, err)
			}
			return exitOf(runLint(cmd, cfg, e))
		},
	}
	cfg.files.addFlags(cmd, "the manifests to lint")
	addOutputFlag(cmd, &cfg.output, "text", "text", "json", "yaml")
	cmd.Flags().BoolVarP(&cfg.all, "all-namespaces", "A", false, "lint the Jobs and CronJobs of every namespace of the cluster")
	cfg.kube.AddFlags(cmd.Flags())
	return cmd
}

// check checks what the flags library cannot, every problem at once.
func (c lintConfig) check(cmd *cobra.Command) error {
	var errs []error
	if err := c.output.check(); err != nil {
		errs = append(errs, err)
	}
	if c.live(cmd) && len(c.files.names) > 0 {
		errs = append(errs, errors.New("-f reads files and -n, -A, --context or --kubeconfig the cluster: give one"))
	}
	if c.all && cmd.Flags().Changed("namespace") {
		errs = append(errs, errors.New("--all-namespaces (-A) and --namespace (-n): give one"))
	}
	if c.files.recursive && c.live(cmd) {
		errs = append(errs, errors.New("--recursive (-R) is for -f"))
	}
	return errors.Join(errs...)
}

// live reports whether lint reads the cluster: -n, -A, --context or --kubeconfig was given.
func (c lintConfig) live(cmd *cobra.Command) bool {
	return c.all || cmd.Flags().Changed("namespace") || cmd.Flags().Changed("context") || cmd.Flags().Changed("kubeconfig")
}

// runLint reads the objects, lints them, prints the findings and returns the exit code.
func runLint(cmd *cobra.Command, cfg lintConfig, e env) int {
	var objs []lint.Object
	var err error
	if cfg.live(cmd) {
		objs, err = readCluster(cmd.Context(), cfg, e)
		if err != nil { // the cluster could not be read: as unreadable input, nothing linted
			fmt.Fprintf(e.stderr, "kubectl sidesync lint: %v\n", err)
			return 2
		}
	} else {
		objs, err = readObjects(cfg.files, e.stdin)
		if err != nil {
			fmt.Fprintf(e.stderr, "kubectl sidesync lint: %v\n", err)
			return 2
		}
	}
	findings := []lint.Finding{}
	for _, o := range objs {
		findings = append(findings, lint.Lint(o)...)
	}
	counts := lint.Count(len(objs), findings)
	if err := printFindings(e.stdout, cfg.output.value, findings, counts); err != nil {
		fmt.Fprintf(e.stderr, "kubectl sidesync lint: writing the findings: %v\n", err)
		return 2
	}
	fmt.Fprintln(e.stderr, counts)
	if counts.Errors > 0 {
		return 1
	}
	return 0
}

// readObjects reads and decodes every file that -f names, in turn; an error names the file.
func readObjects(files filenames, stdin io.Reader) ([]lint.Object, error) {
	paths, err := files.paths()
	if err != nil {
		return nil, err
	}
	var objs []lint.Object
	for _, path := range paths {
		got, err := readFile(path, stdin)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// readFile reads and decodes one file ("-" is stdin) through lint.Read, which stops reading at
// its size bound: an endless stdin or a huge file is refused, not read into memory.
func readFile(path string, stdin io.Reader) ([]lint.Object, error) {
	r, closeFn, err := open(path, stdin)
	if err != nil {
		return nil, err
	}
	name := path
	if path == stdinName {
		name = "stdin"
	}
	defer closeFn()
	objs, err := lint.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return objs, nil
}

// printFindings writes the findings: a line each, or one JSON or YAML document with the counts.
func printFindings(w io.Writer, output string, findings []lint.Finding, counts lint.Counts) error {
	if output != "text" {
		return printDoc(w, output, struct {
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
