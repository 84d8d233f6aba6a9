package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/emulator"
	"github.com/sidesync/sidesync/internal/logfmt"
	"github.com/sidesync/sidesync/internal/redact"
)

// Exit codes of sidesync's own (the command's codes pass through; see the README's table).
const (
	exitUsage       = 2  // bad flags or environment
	exitUnavailable = 69 // EX_UNAVAILABLE: the sidecar never became ready (and the policy is to fail)
	exitSoftware    = 70 // EX_SOFTWARE: sidesync itself failed
)

// version and commit are set by a release build (scripts/release.sh) with
// -ldflags "-X main.version=v1.2.3 -X main.commit=<git commit>"; otherwise buildVersion reads
// what the Go toolchain recorded.
var version, commit string

// run is sidesync: it takes the arguments, the environment and the standard files, and returns
// the exit code. Only main exits.
func run(args []string, lookupEnv func(string) (string, bool), stdin, stdout, stderr *os.File) int {
	survivePipes()
	name, rest := subcommand(args)
	switch name {
	case "version":
		if len(rest) > 0 && isHelp(rest[0]) {
			return help([]string{name}, stdout, stderr)
		}
		printVersion(stdout)
		return 0
	case "help":
		return help(rest, stdout, stderr)
	case "emulate":
		return emulator.Main(rest, stdout, stderr)
	case "demo-job":
		return demoJob(stdout)
	}
	cfg, err := config.Parse(config.Mode(name), rest, lookupEnv)
	if errors.Is(err, config.ErrHelp) {
		if name == string(config.ModeRun) {
			printHelp(stdout)
			return 0
		}
		return help([]string{name}, stdout, stderr)
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
	if _, ok := lookupSubcommand(args[0]); ok {
		return args[0], args[1:]
	}
	switch args[0] {
	case "--version", "-version":
		return "version", nil
	}
	return string(config.ModeRun), args
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// usageError prints every configuration problem and returns exit code 2.
func usageError(stderr *os.File, err error) int {
	var ue *config.UsageError
	if errors.As(err, &ue) {
		for _, p := range ue.Problems {
			fmt.Fprintf(stderr, "sidesync: %s\n", redact.String(p.Error()))
		}
	} else {
		fmt.Fprintf(stderr, "sidesync: %s\n", redact.String(err.Error()))
	}
	fmt.Fprintln(stderr, "sidesync: run 'sidesync --help' for usage")
	return exitUsage
}

// survivePipes keeps sidesync alive when the reader of its stderr (or stdout) goes away. By
// default the Go runtime dies of SIGPIPE on a write to a broken pipe on fd 1 or 2, so the next
// log line would kill sidesync before it quits the sidecar, and the pod would never complete
// (issue 7, fault 2). With SIGPIPE caught, such a write fails with EPIPE instead, and the log
// line is lost, nothing else. It is caught, not ignored: an ignored signal stays ignored across
// exec, and the command must start with SIGPIPE at its default disposition.
func survivePipes() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// printVersion prints "sidesync VERSION (commit COMMIT, go1.26.8 linux/amd64)".
func printVersion(w io.Writer) {
	v, c := buildVersion()
	fmt.Fprintf(w, "sidesync %s (commit %s, %s %s/%s)\n", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildVersion returns the version and commit sidesync was built from: those a release build
// stamps with -ldflags (scripts/release.sh), else what the Go toolchain recorded (the module
// version of "go install ...@vX", and the commit of a build inside a git checkout).
func buildVersion() (string, string) {
	v, c := version, commit
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return or(v, "(devel)"), or(c, "unknown")
	}
	if v == "" && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if c == "" && rev != "" {
		c = rev
		if modified == "true" {
			c += "-dirty"
		}
	}
	return or(v, "(devel)"), or(c, "unknown")
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
