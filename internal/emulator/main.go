package emulator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Main runs one emulated sidecar as a program: `PROFILE [flags]`, e.g.
// `envoy --ready-after 2s`. Events go to stdout, problems to stderr. It
// returns the exit code for the caller to exit with: the sidecar's exit
// code after it stops (SIGTERM and SIGINT stop it with 0, like Envoy),
// 2 for bad usage, 1 when it cannot listen, 0 after -h.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return run(ctx, args, stdout, stderr)
}

// run is Main with the stop signal supplied as ctx.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: emulate PROFILE [flags]; profiles: %s\n", profileNames())
		return 2
	}
	p, ok := LookupProfile(args[0])
	if !ok {
		fmt.Fprintf(stderr, "emulate: unknown profile %q; profiles: %s\n", args[0], profileNames())
		return 2
	}
	opts, code, ok := parseFlags(p.Name, args[1:], stderr)
	if !ok {
		return code
	}
	opts.Events, opts.Diagnostics = stdout, stderr
	sc := New(p, opts)
	if err := sc.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "emulate %s: %v\n", p.Name, err)
		return sc.ExitCode()
	}
	<-sc.Done()
	return sc.ExitCode()
}

// parseFlags parses the knobs. It returns ok false with the code to exit
// with when the program should stop: 0 after -h, 2 for a bad flag, whose
// message names the flag.
func parseFlags(profile string, args []string, stderr io.Writer) (Options, int, bool) {
	fs := flag.NewFlagSet("emulate "+profile, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: emulate %s [flags]\n", profile)
		fs.PrintDefaults()
	}
	opts := Options{Listen: "127.0.0.1:0", ReadyBehaviour: BehaviourOK, QuitBehaviour: BehaviourOK}
	fs.StringVar(&opts.Listen, "listen", opts.Listen, "`address` to listen on")
	fs.DurationVar(&opts.ReadyAfter, "ready-after", 0, "time until ready; half-way state after half of it")
	fs.BoolVar(&opts.NeverReady, "never-ready", false, "never become ready")
	fs.DurationVar(&opts.ListenAfter, "listen-after", 0, "report the port at once but listen only after this long")
	fs.Func("ready-behaviour", "how readiness endpoints answer: "+joinBehaviours(ReadyBehaviours())+" (default ok)",
		behaviourFlag(&opts.ReadyBehaviour, ReadyBehaviours()))
	fs.Func("quit-behaviour", "how the shutdown endpoint answers: "+joinBehaviours(QuitBehaviours())+" (default ok)",
		behaviourFlag(&opts.QuitBehaviour, QuitBehaviours()))
	fs.IntVar(&opts.ExitCode, "exit-code", 0, "exit `code` after an accepted shutdown request")
	fs.DurationVar(&opts.ExitDelay, "exit-delay", 0, "time between answering the shutdown request and exiting")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, 0, false
		}
		return opts, 2, false // the flag package has printed the error and usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "emulate %s: unexpected argument %q\n", profile, fs.Arg(0))
		return opts, 2, false
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "emulate %s: invalid value for flag %v\n", profile, err)
		return opts, 2, false
	}
	return opts, 0, true
}

func behaviourFlag(dst *Behaviour, allowed []Behaviour) func(string) error {
	return func(s string) error {
		b, err := ParseBehaviour(s, allowed)
		if err == nil {
			*dst = b
		}
		return err
	}
}

func joinBehaviours(bs []Behaviour) string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = string(b)
	}
	return strings.Join(names, "|")
}

func profileNames() string {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
