// Command sidesync-emulator runs the emulated sidecars that sidesync's tests use, and the demo of
// sidesync's whole job. It is a test and teaching tool: the sidesync binary that goes into pods
// never contains it.
//
//	sidesync-emulator emulate PROFILE [flags]   an emulated sidecar on loopback (--help for flags)
//	sidesync-emulator demo [flags]              sidesync's main job, end to end, as a timeline
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sidesync/sidesync/internal/testing/emulator"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `sidesync-emulator runs emulated sidecars and the demo of sidesync's whole job.

Usage:
  sidesync-emulator emulate PROFILE [flags]   run an emulated sidecar that answers as the real one
                                              does; emulate --help lists the profiles
  sidesync-emulator demo [flags] [SIDESYNC FLAGS...]
                                              start an emulated Envoy, run sidesync with a small
                                              job against it, and print the timeline; flags:
                                              --sidesync PATH (default: build ./cmd/sidesync
                                              from this checkout), --ready-after D (1.5s);
                                              any other flag goes to sidesync, e.g.
                                              --backoff polly --interval 1s
`

// run dispatches the subcommands and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "emulate":
		return emulator.Main(args[1:], stdout, stderr)
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "demo-job":
		return demoJob(stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sidesync-emulator: unknown subcommand %q\n%s", args[0], usage)
	return 2
}
