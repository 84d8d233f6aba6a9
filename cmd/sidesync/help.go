package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
)

const helpIntro = `sidesync keeps a command in step with the sidecars of its Kubernetes pod.

Usage:
  sidesync [flags] -- CMD [ARGS...]   wait for the sidecars, run CMD, tell the sidecars to quit,
                                      exit with CMD's exit code
`

const helpSidecars = `
Sidecars: --sidecar istio --sidecar cloudsql (or SIDESYNC_SIDECARS=istio,cloudsql) names them by
profile: %s.
Overrides follow a colon: cloudsql:ready-port=9090,quit-port=9091; http:ready=URL,quit=URL;
tcp:ready=tcp://127.0.0.1:5432; keys: name, ready, quit, port, ready-port, quit-port, host, method,
status, native, startup-probe (port= only where the sidecar's readiness and quit share a port).
With no sidecar configured, sidesync detects them from the pod's annotations (a downward-API
volume at --pod-info) or from the pod in the Kubernetes API; if it finds none it runs CMD at once
and says so (a warning when it could not look; --require-sidecar makes that fatal, exit 69).
Native sidecars (init containers with restartPolicy: Always) are never told to quit, and are
waited for unless they have a startup probe.

Waiting probes every 20ms until the sidecar answers ready, for at most 2 minutes; quitting is
retried and ends within 10s. Every flag has a SIDESYNC_* environment variable (in brackets); a
flag wins over its variable, and both win over the article's and scuttle's variables.
`

const helpContracts = `
Environment contracts of other tools, accepted unchanged (sidesync's own settings win over them):
  the article's job   PROXY=true turns waiting and quitting on (anything else: no sidecar);
                      proxyEndpoint is the admin base URL ("http://127.0.0.1:15000/");
                      interval is Polly's median first retry delay in whole seconds;
                      maxRetries is the retry count. Without PROXY=true these three are
                      ignored (they are common names).
  scuttle             ENVOY_ADMIN_API, START_WITHOUT_ENVOY, WAIT_FOR_ENVOY_TIMEOUT,
                      QUIT_WITHOUT_ENVOY_TIMEOUT, ISTIO_QUIT_API, NEVER_KILL_ISTIO,
                      NEVER_KILL_ISTIO_ON_FAILURE, GENERIC_QUIT_ENDPOINTS, GENERIC_QUIT_ONLY,
                      QUIT_REQUEST_TIMEOUT, SCUTTLE_LOGGING, with scuttle's meanings; but no
                      pkill, and invalid values are errors rather than ignored.
  A sidecar named by a flag or SIDESYNC_* variable replaces the sidecars these variables name,
  for waiting and quitting alike; PROXY=true together with scuttle's sidecar variables is an
  error.

Exit codes:
  N        CMD exited with N
  128+S    CMD was killed by signal S (or sidesync got S while waiting)
  126/127  CMD could not be executed / was not found
  2        bad flags or environment (every problem is listed)
  69       the sidecar never became ready and --on-timeout is fail, or none was found with
           --require-sidecar (CMD did not run)
  70       sidesync failed internally

Signals TERM, INT, HUP, QUIT, USR1, USR2 and WINCH are forwarded to CMD (never URG or CHLD).
TERM, INT, HUP or QUIT before CMD starts stop sidesync: CMD does not run, the sidecar is still
told to quit (per --quit), and sidesync exits 128+S. Logs go to stderr; stdout is CMD's alone.
`

// printHelp writes the whole help: usage, subcommands, sidecars, flags, contracts, exit codes.
func printHelp(w io.Writer) {
	fmt.Fprint(w, helpIntro)
	for _, s := range subcommands() {
		if s.name == "" {
			continue
		}
		fmt.Fprintf(w, "  %-34s%s\n", strings.TrimSpace("sidesync "+s.name+" "+s.args), s.summary)
	}
	fmt.Fprintf(w, helpSidecars, strings.Join(catalog.ProfileNames(), ", "))
	fmt.Fprintln(w, "\nFlags:")
	config.PrintFlags(w)
	fmt.Fprint(w, helpContracts)
}

// printSubcommandHelp writes one subcommand's usage: what it does, its exit codes, its flags.
func printSubcommandHelp(w io.Writer, s subcmd) {
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s\n", strings.TrimSpace("sidesync "+s.name+" "+s.args), s.about)
	fmt.Fprintf(w, "\nExit codes:\n%s\n", s.exits)
	if s.run != nil {
		fmt.Fprintln(w, "\nFlags (each also a SIDESYNC_* variable, in brackets):")
		config.PrintFlags(w)
	}
	fmt.Fprintln(w, "\nRun 'sidesync --help' for sidecars, environment contracts and the wrapper itself.")
}

// help is "sidesync help [SUBCOMMAND]".
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "" {
		printHelp(stdout)
		return 0
	}
	s, ok := lookupSubcommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "sidesync: no subcommand %q%s\n", args[0], didYouMean(args[0]))
		return exitUsage
	}
	printSubcommandHelp(stdout, s)
	return 0
}

// didYouMean suggests the subcommand that word is probably a misspelling of, or "".
func didYouMean(word string) string {
	if s := nearSubcommand(word); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", "sidesync "+s)
	}
	return ""
}

// nearSubcommand returns the visible subcommand within two edits (a swap of neighbours counts
// as one) of word, or "". Words shorter than 3 letters are too short to guess from.
func nearSubcommand(word string) string {
	if len(word) < 3 || strings.ContainsAny(word, "/.") {
		return ""
	}
	best, bestDist := "", 3
	for _, s := range subcommands() {
		if s.name == "" {
			continue
		}
		if d := editDistance(strings.ToLower(word), s.name); d < bestDist && d < len(s.name)/2+1 {
			best, bestDist = s.name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions, substitutions
// and swaps of adjacent letters each cost one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
