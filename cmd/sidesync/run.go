package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/emulator"
	"github.com/sidesync/sidesync/internal/logfmt"
)

// Exit codes of sidesync's own (the command's codes pass through; see the README's table).
const (
	exitUsage       = 2  // bad flags or environment
	exitUnavailable = 69 // EX_UNAVAILABLE: the sidecar never became ready (and the policy is to fail)
	exitSoftware    = 70 // EX_SOFTWARE: sidesync itself failed
)

// version is set at release time with -ldflags "-X main.version=v1.2.3"; otherwise the module
// version from the build information is used.
var version = ""

// run is sidesync: it takes the arguments, the environment and the standard files, and returns
// the exit code. Only main exits.
func run(args []string, lookupEnv func(string) (string, bool), stdin, stdout, stderr *os.File) int {
	name, rest := subcommand(args)
	switch name {
	case "version":
		fmt.Fprintln(stdout, "sidesync", versionString())
		return 0
	case "help":
		printHelp(stdout)
		return 0
	case "emulate":
		return emulator.Main(rest, stdout, stderr)
	case "demo-job":
		return demoJob(stdout)
	}
	cfg, err := config.Parse(config.Mode(name), rest, lookupEnv)
	if errors.Is(err, config.ErrHelp) {
		printHelp(stdout)
		return 0
	}
	if err != nil {
		return usageError(stderr, err)
	}
	start := time.Now()
	format := cfg.LogFormat
	if cfg.Mode == config.ModeDemo && format == "text" {
		format = "timeline"
	}
	log := logfmt.New(stderr, format, cfg.LogLevel, start)
	for _, n := range cfg.Notes {
		log.Log(context.Background(), n.Level, n.Msg)
	}
	a := &app{cfg: cfg, log: log, stdin: stdin, stdout: stdout, stderr: stderr, start: start, lookupEnv: lookupEnv}
	switch cfg.Mode {
	case config.ModeWait:
		return a.waitOnly()
	case config.ModeQuit:
		return a.quitOnly()
	case config.ModeDemo:
		return a.demo()
	case config.ModeCheck:
		return a.check()
	default:
		return a.run()
	}
}

// subcommand splits off the subcommand; anything else is the wrapper's flags and command.
func subcommand(args []string) (string, []string) {
	if len(args) == 0 {
		return string(config.ModeRun), args
	}
	switch args[0] {
	case "wait", "quit", "check", "demo", "version", "help", "emulate", "demo-job":
		return args[0], args[1:]
	case "--version", "-version":
		return "version", nil
	}
	return string(config.ModeRun), args
}

// usageError prints every configuration problem and returns exit code 2.
func usageError(stderr *os.File, err error) int {
	var ue *config.UsageError
	if errors.As(err, &ue) {
		for _, p := range ue.Problems {
			fmt.Fprintf(stderr, "sidesync: %v\n", p)
		}
	} else {
		fmt.Fprintf(stderr, "sidesync: %v\n", err)
	}
	fmt.Fprintln(stderr, "sidesync: run 'sidesync --help' for usage")
	return exitUsage
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
