// Package config turns sidesync's flags, its SIDESYNC_* environment variables and the
// environment variables of the tools it replaces (the article's PROXY/proxyEndpoint/interval/
// maxRetries and scuttle's ENVOY_ADMIN_API family) into one validated Config.
//
// Precedence, the same for waiting and for quitting: a flag, then its SIDESYNC_* variable, then
// the article's and scuttle's variables, then the default. Settings are of two kinds:
//
//   - Where the sidecars are. sidesync's own --sidecar, --admin, --ready-url, --quit-url and
//     --disabled (or their SIDESYNC_* variables) decide it whenever any of them is set; the
//     other tools' location variables (PROXY with proxyEndpoint, ENVOY_ADMIN_API with the
//     Istio agent quit derived from it, ISTIO_QUIT_API, GENERIC_QUIT_ENDPOINTS) are then
//     ignored, for the wait and the quit alike, and a Note says so. Otherwise PROXY=true
//     locates the sidecar at proxyEndpoint (default DefaultAdmin), PROXY set to anything else
//     means no sidecar, scuttle's variables without ENVOY_ADMIN_API or GENERIC_QUIT_ENDPOINTS
//     mean no sidecar, and both contracts locating (or one refusing) the sidecar is a usage
//     error. With none of these, sidesync detects the sidecars.
//   - How to wait and quit (timeouts, retries, policies, logging). Each of the other tools'
//     behaviour variables sets its one setting unless a flag or SIDESYNC_* variable sets it.
//
// The article's variables count only with PROXY exactly "true" (its own comparison): interval,
// maxRetries and proxyEndpoint are common names that applications use for their own purposes.
//
// Every problem is reported, all at once, naming the flag or variable (a *UsageError); values
// are validated even where they end up unused (--disabled). No problem or Note ever shows a
// URL's user or password.
package config

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/sidecar"
)

// Mode is what sidesync was asked to do; validation depends on it.
type Mode string

// The modes that take sidecar configuration.
const (
	ModeRun   Mode = "run"   // sidesync [flags] -- CMD [ARGS...]
	ModeWait  Mode = "wait"  // sidesync wait [flags]
	ModeQuit  Mode = "quit"  // sidesync quit [flags]
	ModeCheck Mode = "check" // sidesync check [flags]
)

// QuitPolicy says when the sidecar is told to quit after the command ends.
type QuitPolicy string

// Quit policies.
const (
	QuitAlways    QuitPolicy = "always"
	QuitOnSuccess QuitPolicy = "on-success" // only when the command exited 0
	QuitNever     QuitPolicy = "never"
)

// Defaults that are not the sidecar package's own (those are sidecar.DefaultInterval,
// sidecar.DefaultProbeTimeout, sidecar.DefaultQuitTimeout, sidecar.DefaultQuitRequestTimeout and
// sidecar.DefaultQuitRetries). Every default is applied in one place, defaultConfig.
const (
	// DefaultAdmin is Envoy's admin address in Open Service Mesh pods, the article's setting.
	DefaultAdmin = "http://127.0.0.1:15000"
	// DefaultTimeout bounds the wait when neither a timeout nor a retry count is given, so that
	// nothing waits forever unless asked to (--timeout 0). Two minutes covers a sidecar whose
	// image is pulled after the app container started, as linkerd's own await does.
	DefaultTimeout = 2 * time.Minute
	// DefaultTerminationLog is Kubernetes' default terminationMessagePath.
	DefaultTerminationLog = "/dev/termination-log"
	// DefaultPodInfoDir is where a downward-API volume with the pod's annotations and labels
	// is mounted, as in the Kubernetes documentation's example.
	DefaultPodInfoDir = "/etc/podinfo"
	// DefaultServiceAccountDir is where Kubernetes mounts the service account's token.
	DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// DefaultPeerStartTimeout bounds how long the last wrapped container to end waits for peers
	// that have not started at all, as DefaultTimeout bounds the wait for a sidecar: a container
	// whose image is still being pulled starts within it.
	DefaultPeerStartTimeout = 2 * time.Minute
)

// Config is everything sidesync needs to run, validated. Each flag sets its field directly (see
// newFlagSet); Sidecars, Detect and Backoff are derived, and Timeout is lifted by a retry count.
type Config struct {
	Mode    Mode
	Command []string // the command and its arguments (ModeRun)
	// PlatformCommands maps "os/arch[/variant]" to the command to run when none follows "--"
	// (an image whose entrypoint differs by platform; `kubectl sidesync inject` writes it).
	PlatformCommands map[string][]string

	Disabled bool              // touch no sidecar at all: just run the command
	Wait     bool              // wait for readiness before starting the command
	Sidecars []sidecar.Sidecar // the sidecars configured; none means Detect
	Detect   bool              // find the pod's sidecars at start (nothing configured)
	// RequireSidecar makes sidesync fail (exit 69, without running the command) when sidecar
	// detection could not look (API refused, TLS failure, timeout) or found nothing; without it
	// sidesync warns and runs the command.
	RequireSidecar bool
	// PodInfoDir is the downward-API volume with the pod's "annotations" and "labels" files.
	PodInfoDir string
	// KubeAPI allows asking the Kubernetes API for the pod, with the service account in
	// ServiceAccountDir.
	KubeAPI           bool
	ServiceAccountDir string

	// BackoffPolicy is the probe policy as given (--backoff, --interval, --max-interval,
	// --fast-first, --max-retries); Backoff is built from it.
	BackoffPolicy BackoffPolicy
	Backoff       sidecar.Backoff // delays between probes, retry limit included
	// Timeout is the overall wait limit; zero means none. It is zero when a retry count was
	// given without a timeout: the retries bound the wait, as in the article.
	Timeout      time.Duration
	ProbeTimeout time.Duration // limit of one probe
	StartAnyway  bool          // run the command even if the sidecar never became ready

	QuitPolicy         QuitPolicy
	QuitTimeout        time.Duration // limit of the whole quit phase
	QuitRequestTimeout time.Duration // limit of one quit request
	QuitRetries        int           // retries of a failed quit request
	// Peers are the names of the pod's wrapped containers, this one included (--peers): the
	// sidecars are told to quit once, by the last of them to end (internal/pod/peers). nil when no
	// flag or variable gives them: the pod's sidesync.io/wrapped annotation may then name them.
	// Fewer than two mean that this container coordinates with none.
	Peers []string
	// StateDir is the directory the peers share (an emptyDir), where each marks its state.
	StateDir string
	// Container is this container's name (--container, SIDESYNC_CONTAINER, POD_CONTAINER_NAME):
	// its mark among the peers, and the container whose restart rules detection reads.
	Container string
	// PeerStartTimeout bounds the wait of the last container to end for peers that never
	// started; zero means not waiting for them.
	PeerStartTimeout time.Duration
	// Restart says whether the kubelet restarts this container in place after it exits: its
	// effective restartPolicy and its restartPolicyRules. Unknown (the zero value) assumes no
	// restart; detection may then read them from the pod.
	Restart restart.Spec

	SignalGroup    bool   // forward signals to the command's process group
	Subreaper      bool   // become a child subreaper when not PID 1
	LogFormat      string // "text" or "json"
	LogLevel       slog.Level
	TerminationLog string // "" means do not write one

	// Notes are things worth one log line at start: which compatibility contract was applied,
	// settings accepted but not acted on.
	Notes []Note
}

// defaultConfig is the Config before any flag or variable is applied: the one place where
// defaults are set. The flags print these values as their defaults in --help.
func defaultConfig() *Config {
	return &Config{
		Wait:              true,
		PodInfoDir:        DefaultPodInfoDir,
		KubeAPI:           true,
		ServiceAccountDir: DefaultServiceAccountDir,
		BackoffPolicy: BackoffPolicy{
			Kind: BackoffConstant, Interval: sidecar.DefaultInterval, MaxRetries: NoRetryLimit,
		},
		Timeout:            DefaultTimeout,
		ProbeTimeout:       sidecar.DefaultProbeTimeout,
		QuitPolicy:         QuitAlways,
		QuitTimeout:        sidecar.DefaultQuitTimeout,
		QuitRequestTimeout: sidecar.DefaultQuitRequestTimeout,
		QuitRetries:        sidecar.DefaultQuitRetries,
		PeerStartTimeout:   DefaultPeerStartTimeout,
		Restart:            restart.Spec{Policy: restart.Unknown}, // no restart assumed; detection may read it
		LogFormat:          "text",
		LogLevel:           slog.LevelInfo,
		TerminationLog:     DefaultTerminationLog,
	}
}

// Note is a message for the log, produced while parsing (when no logger exists yet).
type Note struct {
	Level slog.Level
	Msg   string
}

// UsageError lists every problem with the configuration. sidesync exits 2 on it.
type UsageError struct {
	Problems []error
}

func (e *UsageError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the problems to errors.Is and errors.As.
func (e *UsageError) Unwrap() []error { return e.Problems }

// ErrHelp is returned when -h or --help was given.
var ErrHelp = errors.New("help requested")

// Parse builds the Config for mode from the arguments that follow the subcommand (or all
// arguments, for ModeRun) and the environment; lookupEnv is os.LookupEnv in production.
func Parse(mode Mode, args []string, lookupEnv func(string) (string, bool)) (*Config, error) {
	p := newParser(mode, lookupEnv)
	rest, help := p.parseArgs(args)
	if help {
		return nil, ErrHelp
	}
	p.applyEnv()
	p.applyPodContainerName()
	p.applyCompat()
	cfg := p.build(rest)
	if len(p.problems) > 0 {
		return nil, &UsageError{Problems: p.problems}
	}
	return cfg, nil
}
