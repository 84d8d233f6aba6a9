package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/chart"
	"github.com/sidesync/sidesync/internal/cluster/image"
)

const krewUsage = `Usage: sidesync-image krew --version VERSION --dist DIR [--platforms LIST] [--license FILE]

Packs kubectl-sidesync for krew, kubectl's plugin manager: for each platform, the release binary
DIR/kubectl-sidesync-OS-ARCH and the license into DIR/kubectl-sidesync-OS-ARCH.tar.gz
(reproducible: sorted, owned by root, every time the epoch), and writes the plugin manifest
DIR/sidesync.yaml, which lists each archive at the release's URL with its sha256. Prints the
paths. Try it: kubectl krew install --manifest=DIR/sidesync.yaml --archive=DIR/kubectl-sidesync-linux-amd64.tar.gz

Exit codes: 0 written; 1 a binary is missing, or writing failed; 2 bad flags.

Flags:
`

// The krew plugin: what its manifest says (https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/).
const (
	krewPlugin      = "sidesync"
	krewBinary      = "kubectl-sidesync"
	krewManifest    = krewPlugin + ".yaml"
	krewHomepage    = image.DefaultSource
	krewShort       = "Make pods' apps wait for their sidecars and stop them when done"
	krewDescription = `kubectl sidesync puts sidesync into Pods, Jobs and CronJobs without rebuilding their
images (inject): the app waits until its sidecars (Envoy, Istio, Linkerd, Consul, Kuma, Dapr,
the Cloud SQL Auth Proxy, Vault Agent, ...) are ready, and tells them to quit when it ends, so
that a Job's pod completes. It says before anything is applied whether a workload will hang or
misbehave with its sidecars (lint), prints the webhook-less injector as admission policies
(policy), and frees the pods of Jobs that already hang on a sidecar (rescue).
`
)

// runKrew is `sidesync-image krew`.
func runKrew(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sidesync-image krew", flag.ContinueOnError)
	version := fs.String("version", "", "the release `VERSION` (vX.Y.Z, or a Go pseudo-version) the binaries are stamped with")
	dist := fs.String("dist", "dist", "the `DIR` of the release binaries, kubectl-sidesync-OS-ARCH; the archives and the manifest go there too")
	list := fs.String("platforms", image.DefaultPlatforms, "the `LIST` of platforms, comma-separated os/arch")
	license := fs.String("license", "LICENSE", "the license `FILE` each archive holds")
	var platforms []platform
	err := parseSub(fs, args, krewUsage, stdout, func() []error {
		_, verr := chart.ChartVersion(*version) // krew wants vX.Y.Z semver, as the chart does
		var perr error
		platforms, perr = parseKrewPlatforms(*list)
		return []error{flagErr("--version", verr), flagErr("--platforms", perr)}
	})
	if code, done := usageExit(err, stderr); done {
		return code
	}
	paths, err := writeKrew(*dist, *version, *license, platforms)
	return listWritten(stdout, stderr, paths, err)
}

// platform is an os and an arch, as Go and krew name them.
type platform struct{ os, arch string }

func (p platform) archive() string { return krewBinary + "-" + p.os + "-" + p.arch + ".tar.gz" }

// parseKrewPlatforms parses a comma- or space-separated list of os/arch (scripts/release.sh's
// PLATFORMS).
func parseKrewPlatforms(list string) ([]platform, error) {
	var ps []platform
	var errs []error
	seen := map[platform]bool{}
	for _, s := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		goos, goarch, ok := strings.Cut(s, "/")
		p := platform{goos, goarch}
		switch {
		case !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/"):
			errs = append(errs, fmt.Errorf("platform %q: want os/arch", s))
		case seen[p]:
			errs = append(errs, fmt.Errorf("platform %q twice", s))
		default:
			seen[p] = true
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no platforms"))
	}
	return ps, errors.Join(errs...)
}

// writeKrew writes the archives and the manifest, which goes last: a manifest on disk always
// names archives that are there. It reads every input before it writes anything.
func writeKrew(dist, version, licenseFile string, platforms []platform) ([]string, error) {
	license, err := os.ReadFile(licenseFile)
	if err != nil {
		return nil, fmt.Errorf("the license: %w", err)
	}
	archives := make([][]byte, len(platforms))
	var errs []error
	for i, p := range platforms {
		bin, err := os.ReadFile(filepath.Join(dist, krewBinary+"-"+p.os+"-"+p.arch))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w (scripts/release.sh builds it)", err))
			continue
		}
		if archives[i], err = krewArchive(bin, license); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	manifest, err := krewManifestFor(version, platforms, archives)
	if err != nil {
		return nil, err
	}
	var paths []string
	for i, p := range platforms {
		path := filepath.Join(dist, p.archive())
		if err := chart.WriteFile(path, archives[i]); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	path := filepath.Join(dist, krewManifest)
	if err := chart.WriteFile(path, manifest); err != nil {
		return paths, err
	}
	return append(paths, path), nil
}

// krewArchive is a gzipped tar of the LICENSE and the binary, in that (byte) order, owned by
// root, every time the epoch: the same inputs give the same bytes, and so the same sha256.
func krewArchive(bin, license []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name, no mtime in the header
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"LICENSE", 0o644, license}, {krewBinary, 0o755, bin}} {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// krewPluginManifest is krew's Plugin (sigs.k8s.io/krew/pkg/index, apiVersion v1alpha2), what
// its validation (internal/index/validation) checks: a safe name, a one-line short
// description, a v-prefixed semver version, and each platform with a uri, a sha256 of 64 hex
// digits, a bin and a selector on os and arch only.
type krewPluginManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	Sha256 string     `json:"sha256"`
	Files  []krewFile `json:"files"`
	Bin    string     `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// krewManifestFor is the manifest of the archives of version, one per platform.
func krewManifestFor(version string, platforms []platform, archives [][]byte) ([]byte, error) {
	var m krewPluginManifest
	m.APIVersion, m.Kind = "krew.googlecontainertools.github.com/v1alpha2", "Plugin"
	m.Metadata.Name = krewPlugin
	m.Spec.Version, m.Spec.Homepage = version, krewHomepage
	m.Spec.ShortDescription, m.Spec.Description = krewShort, krewDescription
	for i, p := range platforms {
		sum := sha256.Sum256(archives[i])
		var kp krewPlatform
		kp.Selector.MatchLabels = map[string]string{"os": p.os, "arch": p.arch}
		kp.URI = chart.ReleaseURL(version) + "/" + p.archive()
		kp.Sha256 = hex.EncodeToString(sum[:])
		kp.Files = []krewFile{{From: krewBinary, To: "."}, {From: "LICENSE", To: "."}}
		kp.Bin = krewBinary
		m.Spec.Platforms = append(m.Spec.Platforms, kp)
	}
	return yaml.Marshal(m)
}
