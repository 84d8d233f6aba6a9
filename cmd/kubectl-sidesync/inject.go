package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/inject/resolve"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// injectLong is inject's description, for --help.
const injectLong = `Wraps the app containers of Pods, Jobs and CronJobs with sidesync, without rebuilding their
images, and writes the result to stdout; objects of other kinds pass through unchanged, and a
List's items are injected one by one. Input is YAML documents or JSON objects from -f (none:
stdin); every file is read before anything is written, and the results are written as one
stream. YAML is written as YAML, JSON as JSON (with -o, every document in that format). A
document inject does not change is written back byte for byte; a changed YAML document keeps its
comments, key order and values, and a changed JSON one is written afresh (indented, keys
sorted, values exact). One line per object on stderr says what was wrapped and what was left
alone.

Every app container of a pod (a regular container that is neither a known sidecar, such as
Istio's, Linkerd's or the Cloud SQL Auth Proxy, nor one its orchestrator stops, such as Airflow's
XCom sidecar) gets command [` + contract.Binary + `] and args [sidesync flags..., --, its command...,
its args...]; all of them or none: an app without a command whose image was not resolved leaves
the pod unchanged, with a warning. With several apps, the wrappers share a small emptyDir and
the last to end tells the sidecars to quit. The sidecars the manifest holds are recorded in the
annotation ` + contract.FoundAnnotation + `, which sidesync reads at run time with the marks of
sidecars a mesh injects later; your own ` + contract.SidecarsAnnotation + ` is kept as it is. A pod
whose sidecars are all native with startup probes is left unchanged: Kubernetes already does what
sidesync would. Injecting an injected object changes nothing; a wrapper injected before is
brought up to date.

After the objects, one line on stderr says which Kubernetes the output needs (native sidecars,
image volumes, container restart rules).

Exit codes: 0 done (warnings on stderr), 2 bad flags or input (a field of the wrong type, two
containers of one name, a volume, mount or container that bears a name sidesync owns but that
inject did not add), a feature --kube-version lacks, or with --strict an image that could not be
read (nothing written), 1 the output could not be written, 3 written, but a Job's pod still never
completes: a classic sidecar that nothing can tell to quit is left (stderr says which and why;
--native is the fix where the catalog can convert it).`

const injectExamples = `  kubectl sidesync inject -f job.yaml | kubectl apply -f -
  kubectl sidesync inject -R -f manifests/ --resolve -o json
  kubectl sidesync inject -f job.yaml --sidecar cloudsql:ready-port=9190,quit-port=9191`

// injectConfig is inject's command line, checked.
type injectConfig struct {
	files     filenames
	output    output // "": each document in the format it was read in
	opts      inject.Options
	resolve   bool
	platforms []v1.Platform
	timeout   time.Duration
	strict    bool // with resolve: an image that cannot be read is an error
	// kube is the oldest Kubernetes the output must run on: --kube-version, else kubeversion.Oldest
	// (kubeGiven false).
	kube      kubeversion.Version
	kubeGiven bool
	native    inject.NativeMode
}

// injectFlags are inject's flags as given, before injectConfig.complete checks them.
type injectFlags struct {
	delivery, containers, native, kube string
	platforms                          []string
}

// newInjectCmd is "kubectl sidesync inject": read, resolve, inject, write; nothing is written
// to stdout unless every object could be read and injected.
func newInjectCmd(e env) *cobra.Command {
	cfg := injectConfig{}
	var fl injectFlags
	cmd := &cobra.Command{
		Use:     "inject [-f FILENAME] [flags]",
		Short:   "Wrap the containers of Pods, Jobs and CronJobs",
		Long:    injectLong,
		Example: injectExamples,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(noArgs(args, "the manifest is given with -f"), cfg.complete(fl, e.build)); err != nil {
				return usageErrorf(cmd, err)
			}
			return exitOf(runInject(cfg, e))
		},
	}
	cfg.files.addFlags(cmd, "the manifests to inject")
	addOutputFlag(cmd, &cfg.output, "", "yaml", "json")
	f := cmd.Flags()
	f.StringArrayVar(&cfg.opts.Sidecars, "sidecar", nil, `a --sidecar value for every wrapper, in sidesync's syntax
(cloudsql:ready-port=9190,quit-port=9191); repeatable. It turns sidesync's own detection of sidecars off.`)
	f.StringVar(&fl.containers, "containers", "", `wrap only these app containers (comma-separated); the others are left,
with a warning: the sidecars are told to quit when the wrapped ones end`)
	f.StringVar(&fl.native, "native", string(inject.NativeAuto), `auto, always or never: turn the classic sidecars the manifest holds into
native sidecars where the catalog knows how (an init container with restartPolicy Always and
a startup probe: the Cloud SQL Auth Proxy, its health check turned on), and ask the meshes the
pod requests for native sidecars with their own annotations; a pod left with no classic
sidecar is not wrapped. auto does it when --kube-version (or, without it, `+kubeversion.Oldest.String()+`, the oldest
Kubernetes sidesync supports, said on stderr) runs native sidecars by default (1.29+); never
injects as before`)
	f.StringVar(&fl.kube, "kube-version", "", `the oldest Kubernetes the output must run on (1.33, v1.34.2): decides
--native auto, and a feature it lacks (image volumes before 1.35, native sidecars before 1.29)
is refused, naming the version`)
	f.BoolVar(&cfg.opts.Force, "force", false, "wrap a pod whose sidecars are all native with startup probes")
	f.StringVar(&fl.delivery, "delivery", string(inject.InitCopy), `init-copy (an init container copies the binary into an emptyDir) or
image-volume (Kubernetes >= 1.35: the image is mounted)`)
	f.StringVar(&cfg.opts.Image, "image", "", `the sidesync image (default: this release's, `+buildinfo.ImageRepository+`:VERSION;
required for a development build)`)
	f.BoolVar(&cfg.resolve, "resolve", false, `read the ENTRYPOINT and CMD of containers without a command from their
registry (credentials as docker uses them) and pin those images to a digest`)
	f.StringSliceVar(&fl.platforms, "platform", nil, `with --resolve: read only these platforms of multi-platform images
(linux/amd64,linux/arm64); repeatable; default: every linux platform. As containerd reads
them: linux/arm64 is linux/arm64/v8, linux/arm is linux/arm/v7, and one without a variant
matches every variant`)
	f.DurationVar(&cfg.timeout, "timeout", time.Minute, "with --resolve: the limit for all registry requests")
	f.BoolVar(&cfg.strict, "strict", false, `with --resolve: an image that cannot be read (not found, refused, timed
out) is an error, exit 2 naming the image and its containers, and nothing is written; without
it, a warning, and its containers are left unwrapped`)
	completeValues(cmd, "native", string(inject.NativeAuto), string(inject.NativeAlways), string(inject.NativeNever))
	completeValues(cmd, "delivery", string(inject.InitCopy), string(inject.ImageVolume))
	return cmd
}

// runInject reads, resolves, injects and writes, and returns the exit code.
func runInject(cfg injectConfig, e env) int {
	stderr := e.stderr
	if cfg.native == inject.NativeAuto && !cfg.kubeGiven {
		fmt.Fprintf(stderr, "kubectl sidesync inject: --native auto without --kube-version: assuming Kubernetes %s, the oldest sidesync supports, whose kubelets run native sidecars\n", kubeversion.Oldest)
	}
	inputs, err := readInjectInputs(cfg.files, e.stdin)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n", err)
		return 2
	}
	eps, err := injectEntrypoints(cfg, inputs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n", err)
		return 2
	}
	var reports []inject.Report
	err = eachInput(inputs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		out, r, err := inject.Apply(obj, tm, cfg.opts, eps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		reports = append(reports, r)
		return out, nil
	})
	if err == nil {
		err = checkNeeds(cfg, reports)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n", err)
		return 2
	}
	if err := writeInputs(e.stdout, inputs, cfg.output.value); err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: writing the result: %v\n", err)
		return 1
	}
	return injectSummary(stderr, reports)
}

// input is one manifest file read whole.
type input struct {
	name   string // as given; "-" is stdin
	docs   []stream.Document
	format stream.Format
}

// readInjectInputs reads every file that -f names before anything is written, as kubectl reads
// several -f; an error names the file.
func readInjectInputs(files filenames, stdin io.Reader) ([]input, error) {
	paths, err := files.paths()
	if err != nil {
		return nil, err
	}
	var inputs []input
	for _, path := range paths {
		in, err := readInput(path, stdin)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// readInput reads one file ("-" is stdin).
func readInput(path string, stdin io.Reader) (input, error) {
	r, closeFn, err := open(path, stdin)
	if err != nil {
		return input{}, err
	}
	defer closeFn()
	in := input{name: path}
	in.docs, in.format, err = stream.Read(r)
	if err != nil {
		return input{}, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// eachInput is stream.Each over every input, where naming the file when there are several.
func eachInput(inputs []input, fn func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error)) error {
	for _, in := range inputs {
		err := stream.Each(in.docs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
			if len(inputs) > 1 {
				where = in.name + ": " + where
			}
			return fn(obj, tm, where)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeInputs writes the inputs as one stream, each as stream.Write writes it, with a separator
// between two inputs: in the format -o names, else JSON when every input is JSON, else YAML.
func writeInputs(w io.Writer, inputs []input, output string) error {
	format := stream.JSON
	for _, in := range inputs {
		if in.format == stream.YAML {
			format = stream.YAML
		}
	}
	switch output {
	case "yaml":
		format = stream.YAML
	case "json":
		format = stream.JSON
	}
	var b bytes.Buffer
	for i, in := range inputs {
		if i > 0 && b.Len() > 0 {
			if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
				b.WriteByte('\n')
			}
			if format == stream.YAML {
				b.WriteString("---\n")
			}
		}
		if err := stream.Write(&b, in.docs, format); err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// injectEntrypoints resolves, with --resolve, the images of the containers to wrap that have
// no command. An image that cannot be read is a warning: its containers are left alone, and
// inject's own warning says what to add; with --strict it is an error naming the image and its
// containers. The error is about the input (as Apply's) or, with --strict, the registries.
func injectEntrypoints(cfg injectConfig, inputs []input, stderr io.Writer) (inject.Entrypoints, error) {
	if !cfg.resolve {
		return nil, nil
	}
	var images []string
	users := imageUsers{}
	err := eachInput(inputs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		imgs, err := inject.Images(obj, tm, cfg.opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, i := range imgs {
			if !slices.Contains(images, i) {
				images = append(images, i)
			}
		}
		if cfg.strict && len(imgs) > 0 {
			users.add(obj, tm, cfg.opts, where)
		}
		return obj, nil
	})
	if err != nil || len(images) == 0 {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	warn := func(m string) { fmt.Fprintf(stderr, "kubectl sidesync inject: warning: %s\n", m) }
	eps, errs := resolve.Images(ctx, images, resolve.Options{Platforms: cfg.platforms, UserAgent: "kubectl-sidesync/" + cfg.opts.Version, Warn: warn})
	if cfg.strict && len(errs) > 0 {
		return nil, strictError(images, errs, users)
	}
	for _, i := range images {
		if err := errs[i]; err != nil {
			fmt.Fprintf(stderr, "kubectl sidesync inject: warning: cannot read the image %s from its registry: %v\n", i, err)
		}
	}
	return eps, nil
}

// complete checks the flags and fills the config, naming every bad flag at once.
func (cfg *injectConfig) complete(fl injectFlags, build buildinfo.Info) error {
	var errs []error
	if err := cfg.output.check(); err != nil {
		errs = append(errs, err)
	}
	if fl.containers != "" {
		cfg.opts.Containers = strings.Split(fl.containers, ",")
	}
	cfg.opts.Delivery, cfg.opts.Version = inject.Delivery(fl.delivery), build.Version
	errs = append(errs, checkNativeFlags(cfg, fl.native, fl.kube)...)
	errs = append(errs, checkInjectFlags(cfg, build, fl.platforms)...)
	return errors.Join(errs...)
}

// parsePlatform reads a --platform value as containerd reads one (linux/AMD64 is linux/amd64,
// see resolve.Normalize); it must be a linux platform the wrapper can look up.
func parsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err == nil {
		*p = resolve.Normalize(*p)
		_, err = resolve.PlatformKey(*p)
	}
	if err != nil || p.OS != "linux" {
		return v1.Platform{}, fmt.Errorf("--platform %q: not a linux platform (linux/amd64, linux/arm64/v8)", s)
	}
	return *p, nil
}

// imageFlag is --image as inject and rescue take it: the flag, else this release's image, and
// it must read as an image reference. With no image at all (a development build without the
// flag) it returns "" and the error that says so; else the image, and an error if it does not
// read as a reference.
func imageFlag(flag string, build buildinfo.Info) (string, error) {
	image, err := build.ImageFlag(flag)
	if err != nil {
		return "", err
	}
	if _, err := name.ParseReference(image); err != nil {
		return image, fmt.Errorf("--image %q: %w", image, err)
	}
	return image, nil
}

// checkInjectFlags checks what the flag package cannot: the image, the platforms, the options.
func checkInjectFlags(cfg *injectConfig, build buildinfo.Info, platforms []string) []error {
	var errs []error
	image, err := imageFlag(cfg.opts.Image, build)
	if image == "" {
		return append(errs, err)
	}
	cfg.opts.Image = image
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range platforms {
		p, err := parsePlatform(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.platforms = append(cfg.platforms, p)
	}
	if len(platforms) > 0 && !cfg.resolve {
		errs = append(errs, errors.New("--platform needs --resolve"))
	}
	if cfg.strict && !cfg.resolve {
		errs = append(errs, errors.New("--strict needs --resolve"))
	}
	if cfg.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %v: must be positive", cfg.timeout))
	}
	if err := cfg.opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}
