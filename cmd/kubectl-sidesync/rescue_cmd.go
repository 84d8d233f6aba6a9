package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// rescueLong is rescue's description, for --help.
var rescueLong = `Frees the pods of Jobs that never complete because a classic sidecar (Istio's or Linkerd's
proxy, Vault Agent, Dapr, the Cloud SQL Auth Proxy, ...) runs on after the app has ended. To each
stuck pod it adds an ephemeral container that runs the sidesync image's 'sidesync quit' with the
pod's sidecars: in the pod's network, it calls each sidecar's loopback-only quit endpoint, each
sidecar exits through its own protocol, and the pod and its Job complete. Then it waits for the
rescued pods and says how each ended.

A pod is stuck when every app container has ended for good (the kubelet does not restart it)
and only sidecars that can be ended still run. Without POD names every pod of the namespace is
read (of every namespace with -A), only pods a Job owns are rescued, and the pods that are simply
running or finished are counted on stderr; a named pod is rescued whoever owns it. A pod whose
rescue container has not ended yet is left as it is (in-flight): rescue can be run again. An
ephemeral container can be neither removed nor run again, so a pod gets at most ` + strconv.Itoa(rescue.MaxAttempts) + ` rescues.

--dry-run=client prints the decisions and sends nothing; --dry-run=server also sends each
rescue container with dryRun=All, so that the API server's admission (Pod Security, policies)
judges it, and stores nothing.

It needs get and list on pods and patch on pods/ephemeralcontainers: deploy/rescue/role.yaml.

Exit codes: 0 every stuck pod rescued and complete (or nothing to rescue, or a dry run that the
API server accepted; with --wait 0, every rescue container added), 2 bad flags (nothing read or
written), 1 anything else: a pod not complete within --wait, a rescue that failed (the API
server refused the container, the rescue containers ended and a sidecar still runs, the pod
failed with every app exited 0), a named pod not found, an API error such as forbidden.`

const rescueExample = `  # which pods are stuck, and how each would be freed
  kubectl sidesync rescue -A --dry-run=client

  # free one pod
  kubectl sidesync rescue -n batch report-28791120-x7kqp`

// dryRunMode is --dry-run's strategy, as kubectl's (cmdutil.DryRunStrategy).
type dryRunMode string

const (
	dryRunNone   dryRunMode = "none"
	dryRunClient dryRunMode = "client"
	dryRunServer dryRunMode = "server"
	// dryRunBare is the value of a bare --dry-run, kubectl's NoOptDefVal (cmdutil.AddDryRunFlag).
	dryRunBare = "unchanged"
)

// rescueConfig is rescue's command line, checked.
type rescueConfig struct {
	kube      *genericclioptions.ConfigFlags
	namespace string // -n, else the context's (set when the client is made)
	all       bool
	pods      []string
	dryRun    dryRunMode
	opts      rescue.Options // Image and Signal
	wait      time.Duration
	output    output
	// devImage is set when a dry run of a development build names its own, unpublished, image.
	devImage bool
}

// rescueFlags are the flags as given, before complete checks them.
type rescueFlags struct {
	dryRun string
}

// newRescueCmd is "kubectl sidesync rescue": read the candidates, decide, add the rescue
// containers, wait, report.
func newRescueCmd(e env) *cobra.Command {
	cfg := rescueConfig{kube: newKubeFlags()}
	var fl rescueFlags
	cmd := &cobra.Command{
		Use:     "rescue [-n NAMESPACE | -A] [POD...] [flags]",
		Short:   "Free the Jobs' pods that hang on their sidecars",
		Long:    rescueLong,
		Example: rescueExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.complete(cmd, fl, args, e); err != nil {
				return usageErrorf(cmd, err)
			}
			return exitOf(runRescue(cfg, e))
		},
	}
	addRescueFlags(cmd, &cfg, &fl)
	return cmd
}

// addRescueFlags adds rescue's flags, and the connection flags of every kubectl plugin.
func addRescueFlags(cmd *cobra.Command, cfg *rescueConfig, fl *rescueFlags) {
	f := cmd.Flags()
	f.BoolVarP(&cfg.all, "all-namespaces", "A", false, "every namespace (not with POD names)")
	f.StringVar(&fl.dryRun, "dry-run", string(dryRunNone), `must be "none", "server", or "client": client prints the decisions and sends nothing;
server sends the rescue containers with dryRun=All (the API server's admission judges them,
nothing is stored)`)
	f.Lookup("dry-run").NoOptDefVal = dryRunBare
	completeValues(cmd, "dry-run", string(dryRunNone), string(dryRunClient), string(dryRunServer))
	f.StringSliceVar(&cfg.opts.Signal, "signal", nil, `containers that may be ended by SIGTERM when they have no quit endpoint (a
log shipper, a sidecar whose quit API is off), through an ephemeral container in the
container's own PID namespace; repeatable or comma-separated`)
	f.StringVar(&cfg.opts.Image, "image", "", "the sidesync image (default: this release's, "+buildinfo.ImageRepository+":VERSION;\nrequired for a development build, but for a dry run)")
	f.DurationVar(&cfg.wait, "wait", 2*time.Minute, "how long to wait for the rescued pods to complete (0: do not wait)")
	addOutputFlag(cmd, &cfg.output, "text", "text", "json", "yaml")
	cfg.kube.AddFlags(f)
}

// complete checks the command line and fills cfg, naming every bad flag at once. Flags may
// follow the pod names, as with kubectl; pod/NAME is NAME.
func (cfg *rescueConfig) complete(cmd *cobra.Command, fl rescueFlags, args []string, e env) error {
	for _, a := range args {
		name := strings.TrimPrefix(strings.TrimPrefix(a, "pods/"), "pod/")
		if !slices.Contains(cfg.pods, name) {
			cfg.pods = append(cfg.pods, name)
		}
	}
	cfg.namespace = *cfg.kube.Namespace
	var errs []error
	for _, p := range cfg.pods {
		if validation.IsDNS1123Subdomain(p) != nil {
			errs = append(errs, fmt.Errorf("%q: not a pod name", p))
		}
	}
	switch {
	case cfg.all && len(cfg.pods) > 0:
		errs = append(errs, errors.New("--all-namespaces (-A) takes no pod names: name pods with --namespace"))
	case cfg.all && cfg.namespace != "":
		errs = append(errs, errors.New("--all-namespaces (-A) and --namespace (-n): give one"))
	case cfg.namespace != "" && !dnsLabel(cfg.namespace):
		errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name", cfg.namespace))
	}
	for _, s := range cfg.opts.Signal {
		if !dnsLabel(s) {
			errs = append(errs, fmt.Errorf("--signal %q: not a container name", s))
		}
	}
	if cfg.wait < 0 {
		errs = append(errs, fmt.Errorf("--wait %v: must not be negative", cfg.wait))
	}
	if err := cfg.output.check(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if cfg.dryRun, err = dryRunStrategy(fl.dryRun, e); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, cfg.image(e.build))
	return errors.Join(errs...)
}

// dryRunStrategy reads --dry-run as kubectl's GetDryRunStrategy does
// (k8s.io/kubectl/pkg/cmd/util/helpers.go), its deprecation warnings and error in its words.
func dryRunStrategy(v string, e env) (dryRunMode, error) {
	if b, err := strconv.ParseBool(v); err == nil {
		to := dryRunNone
		if b {
			to = dryRunClient
		}
		fmt.Fprintf(e.stderr, "Warning: --dry-run=%v is deprecated (boolean value) and can be replaced with --dry-run=%s.\n", v, to)
		return to, nil
	}
	switch d := dryRunMode(v); d {
	case dryRunBare:
		fmt.Fprintln(e.stderr, "Warning: --dry-run is deprecated and can be replaced with --dry-run=client.")
		return dryRunClient, nil
	case dryRunNone, dryRunClient, dryRunServer:
		return d, nil
	}
	//lint:ignore ST1005 kubectl's own words, so that scripts and users see one message
	return dryRunNone, fmt.Errorf(`Invalid dry-run value (%v). Must be "none", "server", or "client".`, v)
}

// image sets the image: --image, else the release's. A development build has no published
// image: a real rescue needs --image, and a dry run names the build's own image and says so
// (complete's caller prints the note once the command line is known to be good).
func (cfg *rescueConfig) image(build buildinfo.Info) error {
	image, err := imageFlag(cfg.opts.Image, build)
	if image == "" && cfg.dryRun != dryRunNone {
		image, err = devImage(build), nil
		cfg.devImage = true
	}
	cfg.opts.Image = image
	return err
}

// devImage is the image a development build would be published as: this build's version as
// the tag where it is one ("(devel)" is not).
func devImage(build buildinfo.Info) string {
	tag := build.Version
	if !validTag.MatchString(tag) {
		tag = "devel"
	}
	return buildinfo.ImageRepository + ":" + tag
}

// validTag is an OCI tag (the distribution spec's [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}).
var validTag = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
