package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/buildinfo"

	"github.com/sidesync/sidesync/internal/contract"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/inject"
	"github.com/sidesync/sidesync/internal/inject/resolve"
	"github.com/sidesync/sidesync/internal/manifest"
	stream "github.com/sidesync/sidesync/internal/manifest/stream"
)

const injectUsage = `Usage: kubectl sidesync inject [-f FILE|-] [flags]

Wraps the containers of Pods, Jobs and CronJobs with sidesync, without rebuilding their images,
and writes the result to stdout; objects of other kinds pass through unchanged, and a List's
items are injected one by one. Input is YAML documents or JSON objects; YAML is written as YAML,
JSON as JSON. One line per object on stderr says what was wrapped and what was left alone.

  kubectl sidesync inject -f job.yaml | kubectl apply -f -

Every regular container that is not a known sidecar (Istio, Linkerd, Cloud SQL Auth Proxy, ...)
gets command [` + contract.Binary + `] and args [sidesync flags..., --, its command..., its args...];
the sidecars the manifest shows are recorded in the annotation ` + contract.SidecarsAnnotation + `,
which sidesync reads at run time. Injecting an injected object changes nothing.

Flags:
  -f, --filename FILE   the manifest; - or none: stdin
  --sidecar SPEC        a --sidecar value for every wrapper, in sidesync's syntax
                        (cloudsql:ready-port=9190,quit-port=9191); repeatable. It turns
                        sidesync's own detection of sidecars off.
  --containers NAMES    wrap only these regular containers (comma-separated)
  --delivery MODE       init-copy (default: an init container copies the binary into an
                        emptyDir) or image-volume (Kubernetes >= 1.35: the image is mounted)
  --image REF           the sidesync image (default: this release's, ` + buildinfo.ImageRepository + `:VERSION;
                        required for a development build)
  --resolve             read the ENTRYPOINT and CMD of containers without a command from their
                        registry (credentials as docker uses them) and pin those images to a digest
  --platform P          with --resolve: read only these platforms of multi-platform images
                        (linux/amd64,linux/arm64); repeatable; default: every linux platform.
                        As containerd reads them: linux/arm64 is linux/arm64/v8, linux/arm is
                        linux/arm/v7, and one without a variant matches every variant
  --timeout D           with --resolve: the limit for all registry requests (default 1m)
  --strict              with --resolve: an image that cannot be read (not found, refused, timed
                        out) is an error, exit 2 naming the image and its containers, and nothing
                        is written; without it, a warning, and its containers are left unwrapped

Exit codes: 0 done (warnings on stderr), 2 bad flags or input, or with --strict an image that
could not be read (nothing written), 1 the output could not be written.
`

// injectConfig is inject's command line, checked.
type injectConfig struct {
	file      string // "-" is stdin
	opts      inject.Options
	resolve   bool
	platforms []v1.Platform
	timeout   time.Duration
	strict    bool // with resolve: an image that cannot be read is an error
}

// runInject is "kubectl sidesync inject": read, resolve, inject, write; nothing is written to
// stdout unless every object could be read and injected.
func runInject(args []string, build buildinfo.Info, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseInjectFlags(args, build)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, injectUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n\nRun 'kubectl sidesync inject --help' for the flags.\n", err)
		return 2
	}
	docs, format, err := readInjectInput(cfg.file, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %s: %v\n", cfg.file, err)
		return 2
	}
	eps, err := injectEntrypoints(cfg, docs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n", err)
		return 2
	}
	var reports []inject.Report
	err = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		out, r, err := inject.Apply(obj, tm, cfg.opts, eps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		reports = append(reports, r)
		return out, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: %v\n", err)
		return 2
	}
	if err := stream.Write(stdout, docs, format); err != nil {
		fmt.Fprintf(stderr, "kubectl sidesync inject: writing the result: %v\n", err)
		return 1
	}
	for _, r := range reports {
		fmt.Fprintln(stderr, r)
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", r.Object, w)
		}
	}
	return 0
}

// readInjectInput reads the manifest from file, or stdin for "-".
func readInjectInput(file string, stdin io.Reader) ([]stream.Document, stream.Format, error) {
	if file == "-" {
		return stream.Read(stdin)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, stream.YAML, err
	}
	defer f.Close()
	return stream.Read(f)
}

// injectEntrypoints resolves, with --resolve, the images of the containers to wrap that have
// no command. An image that cannot be read is a warning: its containers are left alone, and
// inject's own warning says what to add; with --strict it is an error naming the image and its
// containers. The error is about the input (as Apply's) or, with --strict, the registries.
func injectEntrypoints(cfg injectConfig, docs []stream.Document, stderr io.Writer) (inject.Entrypoints, error) {
	if !cfg.resolve {
		return nil, nil
	}
	var images []string
	users := imageUsers{}
	err := stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
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

// parseInjectFlags parses and checks the command line, naming every bad flag at once.
func parseInjectFlags(args []string, build buildinfo.Info) (injectConfig, error) {
	cfg := injectConfig{file: "-", timeout: time.Minute}
	var delivery, containers string
	var platforms []string
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.file, "f", "-", "")
	fs.StringVar(&cfg.file, "filename", "-", "")
	fs.Func("sidecar", "", func(s string) error { cfg.opts.Sidecars = append(cfg.opts.Sidecars, s); return nil })
	fs.StringVar(&containers, "containers", "", "")
	fs.StringVar(&delivery, "delivery", string(inject.InitCopy), "")
	fs.StringVar(&cfg.opts.Image, "image", "", "")
	fs.BoolVar(&cfg.resolve, "resolve", false, "")
	fs.Func("platform", "", func(s string) error { platforms = append(platforms, strings.Split(s, ",")...); return nil })
	fs.DurationVar(&cfg.timeout, "timeout", time.Minute, "")
	fs.BoolVar(&cfg.strict, "strict", false, "")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q (the manifest is given with -f)", fs.Args()))
	}
	if containers != "" {
		cfg.opts.Containers = strings.Split(containers, ",")
	}
	cfg.opts.Delivery, cfg.opts.Version = inject.Delivery(delivery), build.Version
	errs = append(errs, checkInjectFlags(&cfg, build, platforms)...)
	return cfg, errors.Join(errs...)
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

// checkInjectFlags checks what the flag package cannot: the image, the platforms, the options.
func checkInjectFlags(cfg *injectConfig, build buildinfo.Info, platforms []string) []error {
	var errs []error
	if cfg.opts.Image == "" {
		image, released := build.Image()
		if !released {
			return append(errs, fmt.Errorf("--image is required: this kubectl-sidesync is a development build (version %s), for which no image is published", cfg.opts.Version))
		}
		cfg.opts.Image = image
	}
	if _, err := name.ParseReference(cfg.opts.Image); err != nil {
		errs = append(errs, fmt.Errorf("--image %q: %w", cfg.opts.Image, err))
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
