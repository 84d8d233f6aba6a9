package chart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// IndexFile is the name of the chart repository index that WritePackages writes beside the
// packages (`helm repo index`'s).
const IndexFile = "index.yaml"

// ReleaseURL is where a release's files are downloaded from: the GitHub release of VERSION.
// The index's chart URLs and the krew manifest's archive URLs are under it.
func ReleaseURL(version string) string {
	return "https://github.com/sidesync/sidesync/releases/download/" + version
}

// packageTime is every file's mtime in a package: fixed, so that the same chart gives the same
// bytes (Helm's package action writes each file's mtime from the checkout, and Now for those
// it has none).
func packageTime() time.Time { return time.Unix(0, 0).UTC() }

// ChartVersion is the chart version of release version, a Git tag or a Go pseudo-version
// (v1.2.3, v0.0.0-20261202150405-abcdef123456): the version without its leading v, which must
// then be semver, as Helm requires of a chart's version.
func ChartVersion(version string) (string, error) {
	v, ok := strings.CutPrefix(version, "v")
	if !ok {
		return "", fmt.Errorf("version %q does not start with v (a release is tagged vX.Y.Z)", version)
	}
	if _, err := semver.StrictNewVersion(v); err != nil {
		return "", fmt.Errorf("version %q: %q is not semver: %w", version, v, err)
	}
	return v, nil
}

// A Package is a chart packaged for a release: its .tgz as `helm package` writes it, and what
// Helm's OCI artifact of it holds besides.
type Package struct {
	// File is the package's file name, NAME-VERSION.tgz.
	File string
	// Data is the package, a gzipped tar.
	Data []byte
	// Metadata is its Chart.yaml.
	Metadata *chartv2.Metadata
}

// Config is the package's Chart.yaml as JSON, as Helm's registry client writes it into the
// config of the chart's OCI artifact (application/vnd.cncf.helm.config.v1+json).
func (p Package) Config() ([]byte, error) { return json.Marshal(p.Metadata) }

// Digest is the package's sha256 in hex, as the index's digest field holds it.
func (p Package) Digest() string {
	sum := sha256.Sum256(p.Data)
	return hex.EncodeToString(sum[:])
}

// Package packages the chart for release version as `helm package --version V --app-version
// VERSION` does, with Helm's own loader and writer (the .helmignore applies): its version is
// ChartVersion(version) and its appVersion version, which is also the tag of every image it
// names whose tag is empty. Every file's mtime is the epoch, so the bytes depend on the chart
// and the version alone.
func (ch Chart) Package(version string) (Package, error) {
	chartVersion, err := ChartVersion(version)
	if err != nil {
		return Package{}, err
	}
	dir, err := ch.Dir()
	if err != nil {
		return Package{}, err
	}
	c, err := loader.LoadDir(dir)
	if err != nil {
		return Package{}, fmt.Errorf("loading the chart %s: %w", ch, err)
	}
	c.Metadata.Version, c.Metadata.AppVersion = chartVersion, version
	fixTimes(c)
	tmp, err := os.MkdirTemp("", "sidesync-chart-")
	if err != nil {
		return Package{}, err
	}
	defer os.RemoveAll(tmp)
	path, err := chartutil.Save(c, tmp)
	if err != nil {
		return Package{}, fmt.Errorf("packaging the chart %s: %w", ch, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Package{}, err
	}
	return Package{File: filepath.Base(path), Data: data, Metadata: c.Metadata}, nil
}

// fixTimes sets the mtime of every file of c, and of its dependencies', to packageTime.
func fixTimes(c *chartv2.Chart) {
	t := packageTime()
	c.ModTime, c.SchemaModTime = t, t
	for _, files := range [][]*common.File{c.Raw, c.Templates, c.Files} {
		for _, f := range files {
			f.ModTime = t
		}
	}
	if c.Lock != nil {
		c.Lock.Generated = t
	}
	for _, d := range c.Dependencies() {
		fixTimes(d)
	}
}

// ReadPackage reads a packaged chart.
func ReadPackage(path string) (Package, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Package{}, err
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return Package{}, fmt.Errorf("%s is not a chart package: %w", path, err)
	}
	return Package{File: filepath.Base(path), Data: data, Metadata: c.Metadata}, nil
}

// PackageFile is the file name of chart ch's package for release version.
func PackageFile(ch Chart, version string) (string, error) {
	v, err := ChartVersion(version)
	if err != nil {
		return "", err
	}
	return string(ch) + "-" + v + ".tgz", nil
}

// WritePackages packages every chart for release version and writes into dir (created if need
// be) each package and an index.yaml that lists them, with their digests, at ReleaseURL(version),
// so that the release's files are a chart repository (`helm repo add sidesync URL`). It returns
// the paths it wrote. Nothing is written when a chart cannot be packaged; each file is written
// beside its place and renamed into it.
func WritePackages(dir, version string) ([]string, error) {
	var pkgs []Package
	for _, ch := range Charts() {
		p, err := ch.Package(version)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	index, err := Index(pkgs, ReleaseURL(version))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range pkgs {
		path := filepath.Join(dir, p.File)
		if err := WriteFile(path, p.Data); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	path := filepath.Join(dir, IndexFile)
	if err := WriteFile(path, index); err != nil {
		return paths, err
	}
	return append(paths, path), nil
}

// Index is the chart repository index (index.yaml) of pkgs, downloaded from baseURL, as `helm
// repo index --url baseURL` writes it for a directory that holds them (Helm's repo.IndexFile,
// whose package would bring Helm's registry and plugin runtime into sidesync-image for twenty
// lines), but with every time in it the epoch, so that it is reproducible too.
func Index(pkgs []Package, baseURL string) ([]byte, error) {
	index := indexFile{APIVersion: "v1", Generated: packageTime(), Entries: map[string][]indexEntry{}}
	for _, p := range pkgs {
		if err := p.Metadata.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", p.File, err)
		}
		u, err := url.JoinPath(baseURL, p.File)
		if err != nil {
			return nil, err
		}
		index.Entries[p.Metadata.Name] = append(index.Entries[p.Metadata.Name],
			indexEntry{Metadata: p.Metadata, URLs: []string{u}, Created: packageTime(), Digest: p.Digest()})
	}
	return yaml.Marshal(index)
}

// indexFile and indexEntry are a chart repository index as Helm's repo.IndexFile and
// repo.ChartVersion write it (sigs.k8s.io/yaml, through their JSON names).
type indexFile struct {
	APIVersion string                  `json:"apiVersion"`
	Entries    map[string][]indexEntry `json:"entries"`
	Generated  time.Time               `json:"generated"`
}

type indexEntry struct {
	*chartv2.Metadata
	Created time.Time `json:"created"`
	Digest  string    `json:"digest"`
	URLs    []string  `json:"urls"`
}

// WriteFile writes data to path through a temporary file beside it, renamed into place: the one
// way a release's files are written (the packaged charts, index.yaml, and sidesync-image's krew
// archives and manifest), so that a reader never sees half a file.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", path, err), os.Remove(tmp.Name()))
	}
	return nil
}
