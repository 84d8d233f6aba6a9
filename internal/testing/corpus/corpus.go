// Package corpus gives tests a set of public Kubernetes manifests: real Jobs, CronJobs, Pods and
// Deployments of Istio, Linkerd, the Cloud SQL Auth Proxy, Vault, Consul, Dapr, Kuma, App Mesh
// and plain ones, copied verbatim from Apache-2.0 and MIT repositories (testdata/README.md
// lists them). Each file starts with a header of comment lines that records where it comes
// from; everything after the header is the file as published. inject, lint and the webhook are
// tested on them, so that real-world input, not only the project's own, decides.
package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// Manifest is one file of the corpus.
type Manifest struct {
	Name string // "12-vault-job-agent-inject", the file's name without its extension
	File string // its path
	// Where it comes from, as its header records it.
	Repository, Path, Commit, Licence, URL, Shows string
	// Data is the whole file, header included (a header of YAML comments is part of the first
	// document, which a tool must keep); Original is the published file alone.
	Data, Original []byte
}

// marker ends a file's header; what follows is the published file.
const marker = "# ---- verbatim below ----\n"

// Licences are the licences a corpus file may have.
var Licences = []string{"Apache-2.0", "MIT", "MIT-0"}

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Dir is the corpus's directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Load reads every manifest of the corpus, in the order of their names, and checks each header:
// every field there, a known licence, a full commit, a URL that names the repository, the commit
// and the path.
func Load() ([]Manifest, error) {
	files, err := filepath.Glob(filepath.Join(Dir(), "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []Manifest
	var errs []error
	for _, f := range files {
		m, err := read(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(f), err))
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// read reads one file and its header.
func read(file string) (Manifest, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Manifest{}, err
	}
	head, original, ok := bytes.Cut(data, []byte(marker))
	if !ok {
		return Manifest{}, fmt.Errorf("no %q line ends its header", strings.TrimSpace(marker))
	}
	m := Manifest{Name: strings.TrimSuffix(filepath.Base(file), ".yaml"), File: file, Data: data, Original: original}
	fields := map[string]*string{"repository": &m.Repository, "path": &m.Path, "commit": &m.Commit,
		"licence": &m.Licence, "url": &m.URL, "shows": &m.Shows}
	for _, line := range strings.Split(string(head), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
		if p, ok := fields[k]; ok {
			*p = strings.TrimSpace(v)
		}
	}
	return m, m.check()
}

// check checks a manifest's provenance.
func (m Manifest) check() error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"repository", m.Repository}, {"path", m.Path}, {"shows", m.Shows}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("no %s in its header", f.name))
		}
	}
	if !commitRE.MatchString(m.Commit) {
		errs = append(errs, fmt.Errorf("commit %q: not a full commit", m.Commit))
	}
	if !contains(Licences, m.Licence) {
		errs = append(errs, fmt.Errorf("licence %q: not one of %s", m.Licence, strings.Join(Licences, ", ")))
	}
	if want := "https://github.com/" + m.Repository + "/blob/" + m.Commit + "/" + m.Path; m.URL != want {
		errs = append(errs, fmt.Errorf("url %q: want %q", m.URL, want))
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
