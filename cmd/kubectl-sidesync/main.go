// Command kubectl-sidesync is sidesync's kubectl plugin: with it on PATH, `kubectl sidesync ...`
// works. It puts sidesync into Pods, Jobs and CronJobs without rebuilding their images
// (`inject`), says before anything is applied whether a workload will hang or misbehave with
// its sidecars (`lint`), and frees the pods of Jobs that already hang on them (`rescue`). It is
// its own binary: the sidesync binary that goes into pods links no Kubernetes or registry code.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:], buildinfo.Current(), os.Stdin, os.Stdout, os.Stderr))
}

const usage = `kubectl sidesync puts sidesync into workloads and checks them.

Usage:
  kubectl sidesync inject [-f FILE|-] [flags]   wrap the containers of Pods, Jobs and CronJobs
  kubectl sidesync lint [-f FILE|-]             find what will hang or misbehave with sidecars
  kubectl sidesync policy [flags]               print the webhook-less injector (admission policies)
  kubectl sidesync rescue [-n NS|-A] [POD...]   free the Jobs' pods that hang on their sidecars
  kubectl sidesync version                      print the version

Run 'kubectl sidesync COMMAND --help' for a command's flags.
`

// run dispatches the subcommands and returns the exit code; build is what this program was built
// as (its version names the image inject puts into pods). Only main exits.
func run(args []string, build buildinfo.Info, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "inject":
		return runInject(args[1:], build, stdin, stdout, stderr)
	case "lint":
		return runLint(args[1:], stdin, stdout, stderr)
	case "policy":
		return runPolicy(args[1:], build, stdout, stderr)
	case "rescue":
		return runRescue(args[1:], build, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, build.Line("kubectl-sidesync"))
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "kubectl sidesync: unknown command %q\n%s", args[0], usage)
	return 2
}
