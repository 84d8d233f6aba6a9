package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// raw holds the settings as given, before defaults are derived and combinations checked.
type raw struct {
	admin, readyURL    string
	quitURLs           []string
	disabled, noWait   bool
	requireSidecar     bool
	backoff            string
	interval, maxDelay time.Duration
	fastFirst          bool
	timeout            time.Duration
	maxRetries         int
	probeTimeout       time.Duration
	onTimeout          string
	quit               string
	quitTimeout        time.Duration
	quitRequestTimeout time.Duration
	quitRetries        int
	allowRemoteQuit    bool
	signalGroup        bool
	subreaper          bool
	logFormat          string
	logLevel           string
	terminationLog     string
	podInfo            string
	specs              []spec
	kubeAPI            bool
	serviceAccountDir  string
}

// Flag names, used where one setting refers to another.
const (
	flagSidecar      = "sidecar"
	flagAdmin        = "admin"
	flagReadyURL     = "ready-url"
	flagQuitURL      = "quit-url"
	flagDisabled     = "disabled"
	flagRequire      = "require-sidecar"
	flagNoWait       = "no-wait"
	flagBackoff      = "backoff"
	flagInterval     = "interval"
	flagTimeout      = "timeout"
	flagMaxRetries   = "max-retries"
	flagOnTimeout    = "on-timeout"
	flagQuit         = "quit"
	flagQuitReqTime  = "quit-request-timeout"
	flagLogLevel     = "log-level"
	flagAllowRemote  = "allow-remote-quit"
	flagProbeTimeout = "probe-timeout"
)

// Backoff kinds accepted by --backoff.
const (
	backoffConstant    = "constant"
	backoffExponential = "exponential"
	backoffPolly       = "polly"
)

// newFlagSet defines every flag, bound to r, with its default. The usage strings are the
// reference documentation printed by --help.
func newFlagSet(r *raw) *flag.FlagSet {
	fs := flag.NewFlagSet("sidesync", flag.ContinueOnError)
	*r = raw{
		backoff: backoffConstant, interval: 20 * time.Millisecond,
		timeout: DefaultTimeout, maxRetries: -1, probeTimeout: time.Second, onTimeout: "fail",
		quit: string(QuitAlways), quitTimeout: 10 * time.Second, quitRequestTimeout: 2 * time.Second,
		quitRetries: DefaultQuitRetries, logFormat: "text", logLevel: "info",
		terminationLog: DefaultTerminationLog, podInfo: DefaultPodInfoDir, kubeAPI: true,
		serviceAccountDir: DefaultServiceAccountDir,
	}
	fs.Var(specValue{&r.specs}, flagSidecar, "a `sidecar` to wait for and quit: a profile ("+strings.Join(sidecar.ProfileNames(), ", ")+"), optionally with overrides, e.g. linkerd:port=4192, cloudsql:ready-port=9090,quit-port=9091 or http:ready=URL,quit=URL; repeatable, or comma-separated")
	fs.Var(urlValue{&r.admin}, flagAdmin, "Envoy admin base `URL` (OSM: http://127.0.0.1:15000): wait until GET <URL>/ready answers 200 (LIVE), quit with POST <URL>/quitquitquit")
	fs.Var(urlValue{&r.readyURL}, flagReadyURL, "wait on this `URL` instead (any 2xx answer means ready)")
	fs.Var(urlListValue{&r.quitURLs}, flagQuitURL, "POST these `URLs` to quit instead (repeat the flag or separate with commas)")
	fs.Var(boolValue{&r.disabled}, flagDisabled, "touch no sidecar: just run the command (and still reap, forward signals, keep exit codes)")
	fs.Var(boolValue{&r.requireSidecar}, flagRequire, "fail (exit 69, without running the command) when sidecar detection could not look (API refused, TLS failure, timeout) or found nothing; without it sidesync warns and runs the command")
	fs.Var(boolValue{&r.noWait}, flagNoWait, "start the command at once, without waiting (the sidecar is still told to quit)")
	fs.Var(choiceValue{&r.backoff, []string{backoffConstant, backoffExponential, backoffPolly}}, flagBackoff, "delays between probes: `constant`, exponential (doubling) or polly (the article's decorrelated jitter)")
	fs.Var(durationValue{&r.interval}, flagInterval, "constant: the `delay`; exponential: the first delay; polly: the median first delay")
	fs.Var(durationValue{&r.maxDelay}, "max-interval", "longest single `delay` between probes (0: no limit)")
	fs.Var(boolValue{&r.fastFirst}, "fast-first", "polly: make the first retry immediate (Polly's fastFirst)")
	fs.Var(durationValue{&r.timeout}, flagTimeout, "give up waiting after this `long` (0: never; default 2m unless --max-retries is given)")
	fs.Var(countValue{&r.maxRetries}, flagMaxRetries, "give up waiting after `N` retries (default: no limit)")
	fs.Var(durationValue{&r.probeTimeout}, flagProbeTimeout, "limit of one readiness probe")
	fs.Var(choiceValue{&r.onTimeout, []string{"fail", "start-anyway"}}, flagOnTimeout, "when the sidecar never became ready: `fail` (exit 69 without running the command; the sidecar is still told to quit) or start-anyway")
	fs.Var(choiceValue{&r.quit, []string{string(QuitAlways), string(QuitOnSuccess), string(QuitNever)}}, flagQuit, "when to tell the sidecar to quit after the command: `always`, on-success (exit 0 only) or never")
	fs.Var(durationValue{&r.quitTimeout}, "quit-timeout", "limit of the whole quit phase, retries included")
	fs.Var(durationValue{&r.quitRequestTimeout}, flagQuitReqTime, "limit of one quit request")
	fs.Var(countValue{&r.quitRetries}, "quit-retries", "retries of a quit request that failed")
	fs.Var(boolValue{&r.allowRemoteQuit}, flagAllowRemote, "allow quit URLs on hosts other than localhost and 127.0.0.0/8 or ::1")
	fs.Var(boolValue{&r.signalGroup}, "signal-group", "forward signals to the command's whole process group, not just the command")
	fs.Var(boolValue{&r.subreaper}, "subreaper", "reap orphaned processes even when not PID 1 (become a child subreaper)")
	fs.Var(choiceValue{&r.logFormat, []string{"text", "json"}}, "log-format", "log format on stderr: `text` or json")
	fs.Var(choiceValue{&r.logLevel, []string{"debug", "info", "warn", "error"}}, flagLogLevel, "least important log `level` shown: debug, info, warn or error")
	fs.Var(stringValue{&r.podInfo}, "pod-info", "`directory` of a downward-API volume with the pod's annotations and labels files, for detection")
	fs.Var(boolValue{&r.kubeAPI}, "kube-api", "detect sidecars and native sidecars from the pod in the Kubernetes API when the service account may read it")
	fs.Var(stringValue{&r.serviceAccountDir}, "service-account-dir", "`directory` with the service account's token, ca.crt and namespace")
	fs.Var(stringValue{&r.terminationLog}, "termination-log", "append the summary to this `file` if it exists (Kubernetes' termination message; empty: never)")
	return fs
}

// EnvName returns the SIDESYNC_* variable that mirrors a flag: --quit-url is SIDESYNC_QUIT_URL.
func EnvName(flagName string) string {
	return "SIDESYNC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// isBoolFlag reports whether f may be given without a value.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseArgs sets the flags found in args, up to "--" or the first argument that is not a flag,
// and returns the rest (the command). Unlike flag.FlagSet.Parse it does not stop at the first
// bad flag: every problem is collected.
func (p *parser) parseArgs(args []string) (rest []string, help bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args[i+1:], false
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return args[i:], false
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == "h" || name == "help" {
			return nil, true
		}
		f := p.fs.Lookup(name)
		if f == nil {
			p.problem(fmt.Errorf("unknown flag %s (see sidesync --help)", a))
			continue
		}
		if !hasValue && !isBoolFlag(f) {
			if i+1 >= len(args) {
				p.problem(fmt.Errorf("flag --%s needs a value", name))
				continue
			}
			i++
			value = args[i]
		} else if !hasValue {
			value = "true"
		}
		p.set(name, "--"+name, value)
	}
	return nil, false
}

// applyEnv sets each flag not given on the command line from its SIDESYNC_* variable.
func (p *parser) applyEnv() {
	p.fs.VisitAll(func(f *flag.Flag) {
		if _, done := p.source[f.Name]; done {
			return
		}
		if v, ok := p.env(EnvName(f.Name)); ok {
			p.set(f.Name, EnvName(f.Name), v)
		} else if v, ok := p.env(EnvName(f.Name) + "S"); ok && f.Name == flagSidecar {
			p.set(f.Name, EnvName(f.Name)+"S", v) // SIDESYNC_SIDECARS, the list form
		}
	})
}

// PrintFlags writes one entry per flag, with its SIDESYNC_* variable and default, for --help.
func PrintFlags(w io.Writer) {
	var r raw
	fs := newFlagSet(&r)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if name != "" && !isBoolFlag(f) {
			head += " " + name
		}
		def := f.DefValue
		switch {
		case isBoolFlag(f) || def == "":
			def = ""
		default:
			def = " (default " + def + ")"
		}
		env := EnvName(f.Name)
		if f.Name == flagSidecar {
			env += ", " + env + "S"
		}
		fmt.Fprintf(w, "%s\n      %s%s [%s]\n", head, usage, def, env)
	})
}
