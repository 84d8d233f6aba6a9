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
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || a == "help" {
		fmt.Fprintf(stdout, "usage: emulate PROFILE [flags]\n\nRuns an emulated sidecar that answers as the real one does, to the status code and body.\n"+
			"Events go to stdout, one line each. Profiles: %s.\nemulate PROFILE --help lists a profile's listeners and flags.\n", profileNames())
		return 0
	}
	p, ok := LookupProfile(args[0])
	if !ok {
		fmt.Fprintf(stderr, "emulate: unknown profile %q; profiles: %s\n", args[0], profileNames())
		return 2
	}
	opts, code, ok := parseFlags(p, args[1:], stderr)
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

// parseFlags parses the knobs shared by every profile and then those of
// profile p. It returns ok false with the code to exit with when the
// program should stop: 0 after -h, 2 for a bad flag, whose message names
// the flag.
func parseFlags(p Profile, args []string, stderr io.Writer) (Options, int, bool) {
	fs := flag.NewFlagSet("emulate "+p.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: emulate %s [flags]\nlisteners (main first):\n", p.Name)
		for _, l := range p.Listeners {
			fmt.Fprintf(stderr, "  %s: %s; real port %d\n", l.Name, l.Help, l.Port)
		}
		fs.PrintDefaults()
	}
	opts := Options{Listen: defaultListen, ReadyBehaviour: BehaviourOK, QuitBehaviour: BehaviourOK}
	sharedFlags(fs, p, &opts)
	if p.Flags != nil {
		p.Flags(fs, &opts)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, 0, false
		}
		return opts, 2, false // the flag package has printed the error and usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "emulate %s: unexpected argument %q\n", p.Name, fs.Arg(0))
		return opts, 2, false
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "emulate %s: invalid value for flag %v\n", p.Name, err)
		return opts, 2, false
	}
	return opts, 0, true
}

// sharedFlags registers the knobs every profile has (ref §12 item 7).
func sharedFlags(fs *flag.FlagSet, p Profile, opts *Options) {
	fs.Func("listen", "listen on `[NAME=]ADDR` (repeatable); without NAME the main listener ("+
		p.Listeners[0].Name+"); listeners: "+p.listenerNames()+"; default "+defaultListen+" for each",
		listenFlag(p, opts))
	fs.DurationVar(&opts.ReadyAfter, "ready-after", 0, "time until ready; half-way state after half of it")
	fs.BoolVar(&opts.NeverReady, "never-ready", false, "never become ready")
	fs.IntVar(&opts.ReadyAfterProbes, "ready-after-probes", 0, "become ready after answering `N` readiness requests (not ready), whatever the time")
	fs.DurationVar(&opts.ListenAfter, "listen-after", 0, "report the ports at once but listen (on all) only after this long")
	fs.Func("ready-behaviour", "how readiness endpoints answer: "+joinBehaviours(ReadyBehaviours())+" (default ok)",
		behaviourFlag(&opts.ReadyBehaviour, ReadyBehaviours()))
	fs.Func("quit-behaviour", "how shutdown endpoints answer: "+joinBehaviours(QuitBehaviours())+" (default ok)",
		behaviourFlag(&opts.QuitBehaviour, QuitBehaviours()))
	fs.IntVar(&opts.QuitLost, "quit-lost", 0, "close the connection of the first `N` shutdown requests with no answer and run on (Istio's agent before its Envoy starts)")
	fs.DurationVar(&opts.SlowBy, "slow-by", DefaultSlowBy, "how long the \"slow\" behaviour holds each answer")
	fs.IntVar(&opts.ExitCode, "exit-code", 0, "exit `code` after an accepted shutdown request")
	fs.DurationVar(&opts.ExitDelay, "exit-delay", 0, "time between answering the shutdown request and exiting")
}

// listenFlag parses one --listen value: "ADDR" for the main listener, or
// "NAME=ADDR" for the listener called NAME (addresses never contain "=").
func listenFlag(p Profile, opts *Options) func(string) error {
	return func(v string) error {
		name, addr, named := strings.Cut(v, "=")
		if !named {
			opts.Listen = v
			return nil
		}
		if !p.hasListener(name) {
			return fmt.Errorf("profile %s has no listener %q (listeners: %s)", p.Name, name, p.listenerNames())
		}
		if opts.Addrs == nil {
			opts.Addrs = make(map[string]string)
		}
		opts.Addrs[name] = addr
		return nil
	}
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
