package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/image"
)

const chartsUsage = `Usage: sidesync-image charts --version VERSION [--out DIR]

Packages sidesync's Helm charts for release VERSION as helm package does (chart version VERSION
without its v, appVersion VERSION, so that the images default to the release's), and writes
DIR/NAME-X.Y.Z.tgz for each chart and DIR/index.yaml, which lists them at the release's URL.
Prints the paths. See docs/INSTALL.md.

Exit codes: 0 written; 1 packaging or writing failed; 2 bad flags.

Flags:
`

// runCharts is `sidesync-image charts`.
func runCharts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sidesync-image charts", flag.ContinueOnError)
	version := fs.String("version", "", "the release `VERSION` (vX.Y.Z, or a Go pseudo-version)")
	out := fs.String("out", "dist", "the `DIR` to write the packages and index.yaml into")
	err := parseSub(fs, args, chartsUsage, stdout, func() []error {
		_, err := chart.ChartVersion(*version)
		return []error{flagErr("--version", err)}
	})
	if code, done := usageExit(err, stderr); done {
		return code
	}
	paths, err := chart.WritePackages(*out, *version)
	return listWritten(stdout, stderr, paths, err)
}

// listWritten ends a subcommand that writes files: the error and exitFailed, or the paths
// written, one per line, and 0.
func listWritten(stdout, stderr io.Writer, paths []string, err error) int {
	if err != nil {
		printError(stderr, err)
		return exitFailed
	}
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return 0
}

// parseSub parses a subcommand's flags: -h prints usage and the flags to stdout and returns
// flag.ErrHelp; otherwise it returns every problem at once, check's too.
func parseSub(fs *flag.FlagSet, args []string, usage string, stdout io.Writer, check func() []error) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return err
	} else if err != nil {
		return err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	return errors.Join(append(errs, check()...)...)
}

// usageExit returns the exit code for a parse's error, and whether to exit with it.
func usageExit(err error, stderr io.Writer) (int, bool) {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		printError(stderr, err)
		fmt.Fprintln(stderr, "sidesync-image: run 'sidesync-image --help' for usage")
		return exitUsage, true
	}
	return 0, false
}

// flagErr names the flag in err, if any.
func flagErr(flag string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// readCharts reads the packages of the charts for release version from dir, where
// `sidesync-image charts` writes them, as OCI artifacts, with the annotations Helm's push
// writes (the OCI title, version, description, url and source; not the time, which would
// make every layout different).
func readCharts(dir, version string) ([]image.Chart, error) {
	var charts []image.Chart
	var errs []error
	for _, ch := range chart.Charts() {
		file, err := chart.PackageFile(ch, version)
		if err != nil {
			return nil, err
		}
		p, err := chart.ReadPackage(filepath.Join(dir, file))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w (sidesync-image charts writes it)", err))
			continue
		}
		config, err := p.Config()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		md := p.Metadata
		ann := map[string]string{
			"org.opencontainers.image.title":       md.Name,
			"org.opencontainers.image.version":     md.Version,
			"org.opencontainers.image.description": md.Description,
			"org.opencontainers.image.url":         md.Home,
		}
		if len(md.Sources) > 0 {
			ann["org.opencontainers.image.source"] = md.Sources[0]
		}
		charts = append(charts, image.Chart{Name: md.Name, Version: md.Version, Config: config, Package: p.Data, Annotations: ann})
	}
	return charts, errors.Join(errs...)
}
