package main

import (
	"context"
	"io"

	"github.com/sidesync/sidesync/internal/shared/config"
)

// subcmd is one of sidesync's subcommands. The table (subcommands) drives dispatch, help, the
// "did you mean" suggestions, and which configuration each accepts.
type subcmd struct {
	name    string // "" for the wrapper itself: sidesync [flags] -- CMD
	aliases []string
	args    string // what follows the name in the usage line
	summary string // one line, for the overview
	about   string // a paragraph, for "sidesync NAME --help"
	exits   string // the exit codes it returns
	// mode is the configuration it takes (config.Parse); the wrapper's needs a command.
	mode config.Mode
	// run runs it with the run's root context, the session (a validated configuration and the
	// process's surroundings) and an outcome that names it; main runs the subcommands that take
	// no configuration instead.
	run  func(context.Context, *session, outcome) int
	main func(args []string, stdout, stderr io.Writer) int
}

// lookupSubcommand returns the subcommand called name.
func lookupSubcommand(name string) (subcmd, bool) {
	for _, s := range subcommands() {
		if s.name == name {
			return s, true
		}
	}
	return subcmd{}, false
}

// subcommands is the table; the wrapper comes first. It is a function, not a variable, because
// the runners refer back to it (suggestions), which a package variable's initialiser may not.
func subcommands() []subcmd {
	return []subcmd{
		{mode: config.ModeRun, run: wrap},
		{name: "wait", args: "[flags]", summary: "only wait until the sidecars are ready", mode: config.ModeWait, run: waitOnly,
			about: "Waits until every configured or detected sidecar is ready, then exits; run it as the first step\n" +
				"of a shell script, or in an init step, when wrapping the command is not possible.",
			exits: "  0        every sidecar is ready (or --on-timeout start-anyway)\n" +
				"  69       a sidecar never became ready, or none was found with --require-sidecar\n" +
				"  128+S    stopped by signal S (TERM, INT, HUP or QUIT)\n" +
				"  2        bad flags or environment"},
		{name: "quit", args: "[flags]", summary: "only tell the sidecars to quit", mode: config.ModeQuit, run: quitOnly,
			about: "Tells every configured or detected sidecar to quit (native sidecars excepted), all at once,\n" +
				"each request bounded and retried; run it as the last step of a shell script.",
			exits: "  0        every sidecar took the request (or there was none to quit)\n" +
				"  69       a sidecar did not take it, or none was found with --require-sidecar\n" +
				"  2        bad flags or environment"},
		{name: "check", args: "[flags]", summary: "probe each sidecar once and print a table", mode: config.ModeCheck, run: check,
			about: "Probes each configured or detected sidecar once and prints a table on stdout: sidecar, ready\n" +
				"URL, state, quit URL, native. Handy in kubectl exec. Nothing is told to quit.",
			exits: "  0        every sidecar is ready (or there is none)\n" +
				"  69       a sidecar is not ready, or none was found with --require-sidecar\n" +
				"  2        bad flags or environment"},
		{name: "install", args: "DIR", summary: "copy this binary into DIR, for an init container", main: installMain,
			about: "Copies the running sidesync binary to DIR/sidesync, mode 0555, atomically: it writes\n" +
				"DIR/.sidesync.tmp-PID, syncs it and renames it over any earlier copy. It needs no shell and\n" +
				"writes nothing outside DIR, so it runs in the scratch image, on a read-only root filesystem,\n" +
				"as any user who may write DIR. DIR is the volume that the init container shares with the\n" +
				"wrapped containers (an emptyDir); it must exist, install never creates it. Logs one line.",
			exits: "  0        installed\n" +
				"  73       DIR does not exist or is not a directory, or the copy failed (EX_CANTCREAT)\n" +
				"  2        not exactly one argument"},
		{name: "signal", args: "[--timeout D] [SIGNAL [PID]]", summary: "send a signal to PID 1 and wait for it to end", main: signalMain,
			about: "Sends SIGNAL (TERM; a name or a number) to PID (1) and waits up to D (30s) for that process to end.\n" +
				"`kubectl sidesync rescue --signal NAME` runs it in an ephemeral container that shares the PID\n" +
				"namespace of a sidecar without a quit endpoint, where PID 1 is the sidecar. A namespace's init\n" +
				"gets only the signals it handles; when it ends, this process ends with it.",
			exits: "  0        the process ended\n" +
				"  69       no such process, or it still runs after D\n" +
				"  77       not permitted: the process runs as another user\n" +
				"  2        bad arguments"},
		{name: "version", aliases: []string{"--version", "-version"}, summary: "print the version and commit", main: versionMain,
			about: "Prints sidesync's version, the commit it was built from, and the Go version.", exits: "  0"},
		{name: "help", args: "[SUBCOMMAND]", summary: "print this help, or a subcommand's", main: help,
			about: "Prints the help, or a subcommand's usage and exit codes.", exits: "  0, or 2 for an unknown subcommand"},
	}
}

// versionMain is "sidesync version".
func versionMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		return help([]string{"version"}, stdout, stderr)
	}
	printVersion(stdout)
	return 0
}
