// Command sidesync-rescuer is sidesync's optional controller: in the namespaces labelled
// sidesync.io/rescue=enabled, it frees the pods of Jobs that hang on a sidecar which never
// quits. A pod that internal/cluster/rescue calls stuck for longer than --grace gets an ephemeral
// container running the sidesync image's `/sidesync quit --sidecar SPEC...`, which tells each
// sidecar to quit through its own endpoint; the pod, then its Job, completes. See
// docs/RESCUE.md.
//
// It is built on controller-runtime: a watch of pods with a cache, a work queue with retries,
// leader election and Events are what a controller needs and what the injector, a webhook,
// does not (ARCHITECTURE.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], buildinfo.Current(), os.Stderr))
}

// config is the command line.
type config struct {
	image            string
	grace            time.Duration
	kubeconfig       string
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	leaderElectionID string
	logFormat        string
}

const usage = `sidesync-rescuer: frees the Jobs of the namespaces labelled sidesync.io/rescue=enabled whose
pods hang on a sidecar, with an ephemeral container that tells the sidecars to quit.

Usage: sidesync-rescuer [flags]

Flags:
`

// parse reads the command line; its errors name the flag.
func parse(args []string, build buildinfo.Info, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("sidesync-rescuer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.image, "image", "", "the sidesync image of the ephemeral containers (default: this release's)")
	fs.DurationVar(&c.grace, "grace", 30*time.Second, "how long after a pod's last app ended to wait before rescuing it: the sidecars' own shutdown gets its chance")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: the pod's service account (in-cluster)")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":8080", "HTTP address of "+metricsPath+"; 0: none")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "HTTP address of "+healthzPath+" and "+readyzPath+"; 0: none")
	fs.BoolVar(&c.leaderElect, "leader-elect", false, "elect a leader on a Lease, so that of several replicas one acts")
	fs.StringVar(&c.leaderElectionNS, "leader-election-namespace", "", "the Lease's namespace; empty: the pod's own (in-cluster)")
	fs.StringVar(&c.leaderElectionID, "leader-election-id", "sidesync-rescuer", "the Lease's name")
	fs.StringVar(&c.logFormat, "log-format", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	if image, err := build.ImageFlag(c.image); err != nil {
		errs = append(errs, err)
	} else if c.image = image; strings.ContainsAny(c.image, " \t\r\n\"'\\") {
		errs = append(errs, fmt.Errorf("--image %q: not an image reference", c.image))
	}
	if c.grace < 0 {
		errs = append(errs, fmt.Errorf("--grace %s: not negative", c.grace))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: text or json", c.logFormat))
	}
	if c.leaderElect && c.leaderElectionNS == "" && c.kubeconfig != "" {
		errs = append(errs, errors.New("--leader-election-namespace is required with --leader-elect and --kubeconfig: outside a pod there is no namespace of its own"))
	}
	if c.leaderElect && c.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id: the Lease needs a name"))
	}
	if c.metricsAddr != "0" && c.metricsAddr == c.probeAddr && !strings.HasSuffix(c.probeAddr, ":0") {
		errs = append(errs, fmt.Errorf("--metrics-bind-address and --health-probe-bind-address are both %s", c.probeAddr))
	}
	return c, errors.Join(errs...)
}

// run runs the rescuer until ctx ends; it returns the exit code: 2 for a bad command line, 1
// when it cannot start or stops on an error (leader election lost included).
func run(ctx context.Context, args []string, build buildinfo.Info, stderr io.Writer) int {
	c, err := parse(args, build, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sidesync-rescuer: %v\n", strings.ReplaceAll(err.Error(), "\n", "\nsidesync-rescuer: "))
		return 2
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(h)
	if err := serve(ctx, c, build, h); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
