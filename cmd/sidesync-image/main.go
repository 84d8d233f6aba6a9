// Command sidesync-image builds sidesync's multi-platform container image from the release
// binaries (scripts/release.sh) without Docker, and writes it as an OCI image layout, pushes it
// to a registry, or both, with the Helm charts beside it as OCI artifacts. It prints the image
// index's digest on stdout. See docs/IMAGE.md. It also packages the rest of a release, which
// scripts/release.sh runs it for: the charts (`charts`) and kubectl-sidesync for krew (`krew`);
// see docs/INSTALL.md.
//
//	sidesync-image charts --version v1.2.3 --out dist
//	sidesync-image krew --version v1.2.3 --dist dist --platforms linux/amd64,linux/arm64
//	sidesync-image --dist dist --version v1.2.3 --commit $(git rev-parse HEAD) --charts dist \
//	    --layout out/image --push ghcr.io/sidesync/sidesync:v1.2.3
package main

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

	"github.com/sidesync/sidesync/internal/shared/buildinfo"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/image"
)

// Exit codes.
const (
	exitFailed = 1 // the binaries are wrong, or the layout or the push failed
	exitUsage  = 2 // bad flags: every problem is listed
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the command line, validated all at once.
type config struct {
	dist, version, commit, source, layout, charts string
	platforms                                     []v1.Platform
	push                                          []name.Reference
}

// run is sidesync-image; it returns the exit code. `sidesync-image version` prints what it was
// built as, as every sidesync program does.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "version" {
		fmt.Fprintln(stdout, buildinfo.Current().Line("sidesync-image"))
		return 0
	}
	if len(args) > 0 {
		switch args[0] {
		case "charts":
			return runCharts(args[1:], stdout, stderr)
		case "krew":
			return runKrew(args[1:], stdout, stderr)
		}
	}
	cfg, err := parse(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		printError(stderr, err)
		fmt.Fprintln(stderr, "sidesync-image: run 'sidesync-image --help' for usage")
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	digest, err := build(ctx, cfg, stderr)
	if err != nil {
		printError(stderr, err)
		return exitFailed
	}
	fmt.Fprintln(stdout, digest)
	return 0
}

// printError prints err, one line per problem.
func printError(stderr io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "sidesync-image: %s\n", line)
	}
}

const usage = `Usage: sidesync-image --version VERSION --commit COMMIT [flags] (--layout DIR | --push REF)...
       sidesync-image charts --version VERSION [--out DIR]
       sidesync-image krew --version VERSION --dist DIR [--platforms LIST]

Builds sidesync's image for each platform from its release binary (scripts/release.sh), without
Docker, as one OCI image index; writes it as an OCI image layout, pushes it, or both; and prints
the index's digest. With --charts, the Helm charts go with it as OCI artifacts: into the layout
as charts/NAME:X.Y.Z, and pushed to REPO/charts/NAME:X.Y.Z for --push REPO:TAG. See
docs/IMAGE.md. 'charts' and 'krew' package the charts and the kubectl plugin ('--help' each).

Exit codes: 0 built; 1 a binary is missing or wrong, or writing or pushing failed; 2 bad flags.

Flags:
`

// parse reads the flags and lists every problem with them; with -h, it prints the usage to
// stdout and returns flag.ErrHelp.
func parse(args []string, stdout io.Writer) (config, error) {
	var cfg config
	platforms := image.DefaultPlatforms
	fs := flag.NewFlagSet("sidesync-image", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the errors, all of them
	fs.Usage = func() {}
	fs.StringVar(&cfg.dist, "dist", "dist", "the `DIR` of the release binaries, sidesync-OS-ARCH (scripts/release.sh)")
	fs.StringVar(&cfg.version, "version", "", "the `VERSION` the binaries are stamped with (org.opencontainers.image.version; the layout's tag)")
	fs.StringVar(&cfg.commit, "commit", "", "the `COMMIT` the binaries are stamped with (org.opencontainers.image.revision)")
	fs.StringVar(&cfg.source, "source", image.DefaultSource, "the repository `URL` (org.opencontainers.image.source)")
	fs.StringVar(&platforms, "platforms", platforms, "the `LIST` of platforms, comma-separated os/arch[/variant]")
	fs.StringVar(&cfg.charts, "charts", "", "add the Helm charts packaged for VERSION, read from `DIR` (NAME-X.Y.Z.tgz, as 'sidesync-image charts' writes them)")
	fs.StringVar(&cfg.layout, "layout", "", "write the image as an OCI image layout into `DIR`, which must be new or empty; written beside it and renamed into place when whole")
	var errs []error
	fs.Func("push", "push the image index to `REF` (repeatable); credentials come from ~/.docker/config.json", func(s string) error {
		ref, err := name.ParseReference(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--push %s: %w", s, err))
		}
		cfg.push = append(cfg.push, ref)
		return nil
	})
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return cfg, err
	} else if err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	ps, err := image.ParsePlatforms(platforms)
	cfg.platforms = ps
	errs = append(errs, err)
	for _, f := range []struct{ name, value string }{{"--dist", cfg.dist}, {"--version", cfg.version}, {"--commit", cfg.commit}, {"--source", cfg.source}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.name))
		}
	}
	if cfg.charts != "" && cfg.version != "" {
		if _, err := chart.ChartVersion(cfg.version); err != nil {
			errs = append(errs, fmt.Errorf("--version: the charts' version: %w", err))
		}
	}
	if cfg.layout == "" && len(cfg.push) == 0 {
		errs = append(errs, errors.New("nothing to do: give --layout DIR, --push REF, or both"))
	}
	return cfg, errors.Join(errs...)
}

// build builds the image index, writes and pushes it, and returns its digest.
func build(ctx context.Context, cfg config, log io.Writer) (v1.Hash, error) {
	bins, err := image.ReadDist(cfg.dist, cfg.platforms)
	if err != nil {
		return v1.Hash{}, err
	}
	idx, err := image.Build(image.Release{Binaries: bins, Version: cfg.version, Commit: cfg.commit, Source: cfg.source})
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	var charts []image.Chart
	if cfg.charts != "" {
		if charts, err = readCharts(cfg.charts, cfg.version); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := describe(idx, log); err != nil {
		return v1.Hash{}, err
	}
	if cfg.layout != "" {
		if err := image.WriteLayout(cfg.layout, idx, cfg.version, charts...); err != nil {
			return v1.Hash{}, err
		}
		fmt.Fprintf(log, "wrote the OCI layout %s (tag %s, %d charts)\n", cfg.layout, cfg.version, len(charts))
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	for _, ref := range cfg.push {
		if err := remote.WriteIndex(ref, idx, opts...); err != nil {
			return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
		}
		fmt.Fprintf(log, "pushed %s@%s\n", ref.Context(), digest)
		if err := pushCharts(ref, charts, opts, log); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, nil
}

// pushCharts pushes each chart beside the image pushed to ref (image.ChartRef), as `helm
// push` would.
func pushCharts(ref name.Reference, charts []image.Chart, opts []remote.Option, log io.Writer) error {
	for _, c := range charts {
		to, err := image.ChartRef(ref, c)
		if err == nil {
			var art v1.Image
			if art, err = image.ChartArtifact(c); err == nil {
				err = remote.Write(to, art, opts...)
			}
		}
		if err != nil {
			return fmt.Errorf("pushing the chart %s: %w", c.Name, err)
		}
		fmt.Fprintf(log, "pushed the chart oci://%s --version %s\n", to.Context(), c.Version)
	}
	return nil
}

// describe logs the index's manifests, one line per platform.
func describe(idx v1.ImageIndex, log io.Writer) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range m.Manifests {
		fmt.Fprintf(log, "%-16s %s\n", d.Platform, d.Digest)
	}
	return nil
}
