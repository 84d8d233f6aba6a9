package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"

	"golang.org/x/sys/unix"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/pod/logfmt"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/redact"
)

// Exit codes of sidesync's own (the command's codes pass through; see the README's table).
const (
	exitUsage       = 2  // bad flags or environment
	exitUnavailable = 69 // EX_UNAVAILABLE: the sidecar never became ready (and the policy is to fail)
	exitSoftware    = 70 // EX_SOFTWARE: sidesync itself failed
)

// run is sidesync: it takes the arguments, the environment and the standard files, and returns
// the exit code. Only main exits. The subcommand table (subcommands.go) says what to do; the
// wrapper's own story is wrap (lifecycle.go).
func run(args []string, lookupEnv func(string) (string, bool), stdin, stdout, stderr *os.File) int {
	if _, set := lookupEnv("GOMAXPROCS"); !set {
		// sidesync waits on I/O and runs a few goroutines: one processor is plenty, and each one
		// more makes the runtime start threads to run them in parallel, which costs about a
		// millisecond of start-up on a small VM (measured in BENCHMARKS.md). The command is not
		// affected: this sets no environment variable.
		runtime.GOMAXPROCS(1)
	}
	// The one root context: a stop signal cancels it, with the signal as its cause.
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	s := &session{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: lookupEnv, start: time.Now()}
	s.signals = listen(stop)
	s.reaper = child.NewReaper(nil)
	errOut := ownStderr(stderr)
	sub, rest := subcommandOf(args)
	if sub.main != nil {
		return sub.main(rest, stdout, errOut)
	}
	cfg, err := config.Parse(sub.mode, rest, lookupEnv)
	switch {
	case errors.Is(err, config.ErrHelp):
		return help([]string{sub.name}, stdout, errOut)
	case err != nil:
		return usageError(errOut, err)
	}
	s.cfg, s.log = cfg, logfmt.New(errOut, cfg.LogFormat, cfg.LogLevel, s.start)
	s.reaper.SetLogger(s.log)
	s.signals.configure(s.log, cfg.SignalGroup)
	for _, n := range cfg.Notes {
		s.log.Log(ctx, n.Level, n.Msg)
	}
	return sub.run(ctx, s, outcome{sub: sub})
}

// ownStderr is where sidesync writes its own messages: a duplicate of stderr. When the reader of
// stderr goes away, the Go runtime kills a program that writes to descriptor 2 with SIGPIPE, so
// the next log line would kill sidesync before it quits the sidecar and the pod would never
// complete (issue 7, fault 2). On a duplicate, the write fails with EPIPE and the line is lost,
// nothing else; the command still gets the original stderr, with SIGPIPE at its default.
func ownStderr(stderr *os.File) *os.File {
	fd, err := unix.FcntlInt(stderr.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return stderr // out of descriptors already: logs share the command's fate
	}
	return os.NewFile(uintptr(fd), "stderr")
}

// subcommandOf finds the subcommand that args start with; anything else is the wrapper's flags
// and command.
func subcommandOf(args []string) (subcmd, []string) {
	table := subcommands()
	if len(args) > 0 {
		for _, s := range table {
			if s.name != "" && (args[0] == s.name || slices.Contains(s.aliases, args[0])) {
				return s, args[1:]
			}
		}
	}
	return table[0], args
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// usageError prints every configuration problem and returns exit code 2.
func usageError(stderr io.Writer, err error) int {
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

// printVersion prints "sidesync VERSION (commit COMMIT, go1.26.8 linux/amd64)": what a release
// build stamped (scripts/release.sh), else what the Go toolchain recorded.
func printVersion(w io.Writer) {
	fmt.Fprintln(w, buildinfo.Current().Line("sidesync"))
}
