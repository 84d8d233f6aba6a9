package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
)

// inputs are the settings that only feed derived values, so they are parser state rather than
// Config fields: where the sidecars are (for Sidecars) and whether a probe or a quit may leave
// loopback.
type inputs struct {
	specs            []spec // --sidecar
	admin, readyURL  string
	quitURLs         []string
	allowRemoteQuit  bool
	allowRemoteReady bool
}

// Flag names, used where one setting refers to another.
const (
	flagSidecar      = contract.FlagSidecar
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
	flagQuitTimeout  = "quit-timeout"
	flagQuitReqTime  = "quit-request-timeout"
	flagLogLevel     = "log-level"
	flagAllowRemote  = "allow-remote-quit"
	flagAllowReady   = "allow-remote-ready"
	flagProbeTimeout = "probe-timeout"
	flagPlatformCmds = contract.FlagPlatformCommands
)

// newFlagSet defines every flag, bound to its field of cfg (or of in), whose value when called
// is the flag's default. The usage strings are the reference documentation printed by --help.
func newFlagSet(cfg *Config, in *inputs) *flag.FlagSet {
	fs := flag.NewFlagSet("sidesync", flag.ContinueOnError)
	fs.Var(specValue{&in.specs}, flagSidecar, "a `sidecar` to wait for and quit: a profile ("+strings.Join(catalog.ProfileNames(), ", ")+"), optionally with overrides, e.g. linkerd:port=4192, cloudsql:ready-port=9090,quit-port=9091 or http:ready=URL,quit=URL; repeatable, or comma-separated")
	fs.Var(urlValue{&in.admin}, flagAdmin, "Envoy admin base `URL` (OSM: http://127.0.0.1:15000): wait until GET <URL>/ready answers 200 (LIVE), quit with POST <URL>/quitquitquit")
	fs.Var(urlValue{&in.readyURL}, flagReadyURL, "wait on this `URL` instead (any 2xx answer means ready)")
	fs.Var(urlListValue{&in.quitURLs}, flagQuitURL, "POST these `URLs` to quit instead (repeat the flag or separate with commas)")
	fs.Var(boolValue{&cfg.Disabled}, flagDisabled, "touch no sidecar: just run the command (and still reap, forward signals, keep exit codes)")
	fs.Var(boolValue{&cfg.RequireSidecar}, flagRequire, "fail (exit 69, without running the command) when sidecar detection could not look (API refused, TLS failure, timeout) or found nothing; without it sidesync warns and runs the command")
	fs.Var(notValue{&cfg.Wait}, flagNoWait, "start the command at once, without waiting (the sidecar is still told to quit)")
	bp := &cfg.BackoffPolicy
	fs.Var(words(&bp.Kind, BackoffConstant, BackoffExponential, BackoffPolly), flagBackoff, "delays between probes: `constant`, exponential (doubling) or polly (the article's decorrelated jitter)")
	fs.Var(durationValue{&bp.Interval}, flagInterval, "constant: the `delay`; exponential: the first delay; polly: the median first delay")
	fs.Var(durationValue{&bp.MaxInterval}, "max-interval", "longest single `delay` between probes (0: no limit)")
	fs.Var(boolValue{&bp.FastFirst}, "fast-first", "polly: make the first retry immediate (Polly's fastFirst)")
	fs.Var(durationValue{&cfg.Timeout}, flagTimeout, "give up waiting after this `long` (0: never; default 2m unless --max-retries is given)")
	fs.Var(countValue{&bp.MaxRetries}, flagMaxRetries, "give up waiting after `N` retries (default: no limit)")
	fs.Var(durationValue{&cfg.ProbeTimeout}, flagProbeTimeout, "limit of one readiness probe")
	fs.Var(choiceValue[bool]{&cfg.StartAnyway, []string{"fail", "start-anyway"}, []bool{false, true}}, flagOnTimeout, "when the sidecar never became ready: `fail` (exit 69 without running the command; the sidecar is still told to quit) or start-anyway")
	fs.Var(words(&cfg.QuitPolicy, QuitAlways, QuitOnSuccess, QuitNever), flagQuit, "when to tell the sidecar to quit after the command: `always`, on-success (exit 0 only) or never")
	fs.Var(durationValue{&cfg.QuitTimeout}, flagQuitTimeout, "limit of the whole quit phase, retries included")
	fs.Var(durationValue{&cfg.QuitRequestTimeout}, flagQuitReqTime, "limit of one quit request")
	fs.Var(countValue{&cfg.QuitRetries}, "quit-retries", "retries of a quit request that failed")
	fs.Var(restartPolicyValue{&cfg.Restart.Policy}, contract.FlagRestartPolicy, "this container's restart `policy` (its restartPolicy, else the pod's): Never, OnFailure or Always; empty: unknown, and no restart is assumed. When the kubelet restarts the container in place after the command's exit, the sidecars are not told to quit")
	fs.Var(restartRulesValue{&cfg.Restart.Rules}, contract.FlagRestartRules, "this container's restartPolicyRules as `JSON` (Kubernetes 1.35+), e.g. [{\"action\":\"Restart\",\"exitCodes\":{\"operator\":\"In\",\"values\":[42]}}]; an exit that they restart does not quit the sidecars")
	fs.Var(peerListValue{&cfg.Peers}, flagPeers, "the pod's wrapped `containers`, this one included, comma-separated: the sidecars are told to quit once, by the last of them to end; needs --state-dir and --container (default: the pod's sidesync.io/wrapped annotation in --pod-info)")
	fs.Var(stringValue{&cfg.StateDir}, flagStateDir, "`directory` that the wrapped containers share (an emptyDir), where each marks whether it runs or has ended")
	fs.Var(containerValue{&cfg.Container}, flagContainer, "this container's `name`, among --peers; also says whose restart rules to read from the pod (POD_CONTAINER_NAME is read too)")
	fs.Var(durationValue{&cfg.PeerStartTimeout}, flagPeerStartTimeout, "how `long` the last wrapped container to end waits for peers that never started before it tells the sidecars to quit anyway (0: no wait)")
	fs.Var(boolValue{&in.allowRemoteQuit}, flagAllowRemote, "allow quit URLs on hosts other than localhost and 127.0.0.0/8 or ::1")
	fs.Var(boolValue{&in.allowRemoteReady}, flagAllowReady, "allow readiness checks (HTTP probes, tcp:// checks) on hosts other than localhost and 127.0.0.0/8 or ::1 (--allow-remote-quit allows them too)")
	fs.Var(boolValue{&cfg.SignalGroup}, "signal-group", "forward signals to the command's whole process group, not just the command")
	fs.Var(boolValue{&cfg.Subreaper}, "subreaper", "reap orphaned processes even when not PID 1 (become a child subreaper)")
	fs.Var(words(&cfg.LogFormat, "text", "json"), "log-format", "log format on stderr: `text` or json")
	fs.Var(choiceValue[slog.Level]{&cfg.LogLevel, []string{"debug", "info", "warn", "error"}, []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}}, flagLogLevel, "least important log `level` shown: debug, info, warn or error")
	fs.Var(stringValue{&cfg.PodInfoDir}, contract.FlagPodInfo, "`directory` of a downward-API volume with the pod's annotations and labels files, for detection")
	fs.Var(boolValue{&cfg.KubeAPI}, "kube-api", "detect sidecars and native sidecars from the pod in the Kubernetes API when the service account may read it")
	fs.Var(stringValue{&cfg.ServiceAccountDir}, "service-account-dir", "`directory` with the service account's token, ca.crt and namespace")
	fs.Var(platformCommandsValue{&cfg.PlatformCommands}, flagPlatformCmds, "a `JSON` object from os/arch[/variant] to the command to run when none follows --, e.g. {\"linux/amd64\":[\"/app\"],\"linux/arm64\":[\"/app-arm64\"]}; no entry for this platform exits 127")
	fs.Var(stringValue{&cfg.TerminationLog}, "termination-log", "append the summary to this `file` if it exists (Kubernetes' termination message; empty: never)")
	return fs
}

// EnvName returns the SIDESYNC_* variable that mirrors a flag: --quit-url is SIDESYNC_QUIT_URL
// (the rule is the injection contract's, contract.Env).
func EnvName(flagName string) string { return contract.Env(flagName) }

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
	fs := newFlagSet(defaultConfig(), new(inputs))
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
