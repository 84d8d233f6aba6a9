// Package detect finds out which sidecars the pod has, when none is configured: from the pod's
// annotations and labels in a downward-API volume, or else from the pod itself in the
// Kubernetes API (one small, bounded, standard-library request). Probing well-known ports is
// not detection: the sidecar may not have started yet.
package detect

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/sidecar"
)

// Found is a sidecar found by detection, and what was learnt on the way.
type Found struct {
	Profile string // the sidecar profile it is (Sidecar.Name may differ: name=)
	Sidecar sidecar.Sidecar
	Why     string   // the annotation, label or container that gave it away
	Notes   []string // things the user should know (a quit endpoint that is off, say)
}

// readPodInfo reads the "annotations" and "labels" files of a downward-API volume: one
// key="value" per line, the value quoted as Go does. Missing files give empty maps.
func readPodInfo(dir string) (annotations, labels map[string]string, found bool) {
	annotations, okA := readKeyValues(filepath.Join(dir, "annotations"))
	labels, okL := readKeyValues(filepath.Join(dir, "labels"))
	return annotations, labels, okA || okL
}

func readKeyValues(path string) (map[string]string, bool) {
	m := make(map[string]string)
	f, err := os.Open(path)
	if err != nil {
		return m, false
	}
	defer f.Close()
	return parseKeyValues(f), true
}

// parseKeyValues reads the lines of a downward-API file; a line without "=" is skipped, and a
// value that is not quoted is kept as it is.
func parseKeyValues(r io.Reader) map[string]string {
	m := make(map[string]string)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20) // Istio's status annotation is long
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		m[k] = v
	}
	return m
}
