// Command kubectl-sidesync is sidesync's kubectl plugin: with it on PATH, `kubectl sidesync ...`
// works. It puts sidesync into Pods, Jobs and CronJobs without rebuilding their images
// (`inject`), says before anything is applied whether a workload will hang or misbehave with
// its sidecars (`lint`), and frees the pods of Jobs that already hang on them (`rescue`). It is
// its own binary: the sidesync binary that goes into pods links no Kubernetes or registry code.
//
// Its command line is kubectl's: cobra and pflag (kubectl's own libraries), the connection flags
// of k8s.io/cli-runtime (--kubeconfig, --context, -n, ...) as every kubectl plugin gets them, and
// kubectl's wording for a bad command line.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:], buildinfo.Current(), os.Stdin, os.Stdout, os.Stderr))
}

// env is what every command works with: the build it is and its streams.
type env struct {
	build  buildinfo.Info
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// exitCode is a command's result when it is not 0: the command has said why on stderr.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// usageError is a bad command line (exit 2), worded as kubectl words it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usageErrorf is kubectl's UsageErrorf (k8s.io/kubectl/pkg/cmd/util/helpers.go): the problem,
// then where the help is. It is for what the flags library cannot check (a bad value, flags
// that exclude each other).
func usageErrorf(cmd *cobra.Command, err error) error {
	return &usageError{fmt.Sprintf("%v\nSee '%s -h' for help and examples", err, cmd.CommandPath())}
}

// flagError is kubectl's flag error (the templater's FlagErrorFunc, k8s.io/kubectl/pkg/util/
// templates/templater.go): an unknown flag, a value pflag cannot parse, a flag without its value.
func flagError(cmd *cobra.Command, err error) error {
	return &usageError{fmt.Sprintf("%v\nSee '%s --help' for usage.", err, cmd.CommandPath())}
}

// run builds the command tree, runs it and returns the exit code; build is what this program
// was built as (its version names the image inject puts into pods). Only main exits.
func run(args []string, build buildinfo.Info, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{build: build, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(e)
	root.SetArgs(args)
	err := root.Execute()
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	// A usage error: ours, or cobra's own (an unknown command, with its suggestions). kubectl
	// prints every error with "error: " first (cmdutil.CheckErr).
	fmt.Fprintf(stderr, "error: %v\n", err)
	return 2
}

// newRoot is `kubectl sidesync` and its subcommands.
func newRoot(e env) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-sidesync",
		Short: "Put sidesync into workloads and check them",
		Long: `kubectl sidesync puts sidesync into Pods, Jobs and CronJobs (inject), finds what will hang or
misbehave with sidecars (lint), prints the webhook-less injector (policy), and frees the Jobs'
pods that hang on their sidecars (rescue).`,
		// kubectl plugins show as "kubectl NAME" in their usage and errors.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sidesync"},
		SilenceErrors: true,
		SilenceUsage:  true,
		// No command is a usage error, the usage on stderr.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			_ = cmd.Usage()
			return exitCode(2)
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newInjectCmd(e), newLintCmd(e), newPolicyCmd(e), newRescueCmd(e), newVersionCmd(e))
	return root
}

// noArgs refuses arguments to a command that takes none, saying how to give what was meant.
// It is checked with the flags (not as cobra's Args) so that every problem is said at once.
func noArgs(args []string, hint string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", args, hint)
	}
	return nil
}

// exitOf is a command's exit code as RunE returns it.
func exitOf(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}
