package detect

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
)

// MaxPodInfoFile is the most sidesync reads of a downward-API file, in bytes. Kubernetes caps a
// pod's annotations at 256 KiB in all (apimachinery's TotalAnnotationSizeLimitB, docs/KUBERNETES.md
// 6); the kubelet's file quotes each value as Go does, which makes a byte at most four
// (\xNN), plus a few bytes a line: a larger file is not one the kubelet wrote for this pod.
// Reading one whole cost 279 MiB and 3.7 s for 66 MiB.
const MaxPodInfoFile = 4*256<<10 + 64<<10

// PodInfo is what a downward-API volume says about the pod.
type PodInfo struct {
	Annotations, Labels map[string]string // empty when the file is missing or unusable
	// Found is set when the volume is there: one of its files exists, usable or not.
	Found bool
	// Warnings name each file that exists but could not be used, and why.
	Warnings []string
}

// ReadPodInfo reads the "annotations" and "labels" files of the downward-API volume at dir: one
// key="value" per line, the value quoted as Go quotes it. The files are symlinks into the
// volume's current data directory (the kubelet swaps it atomically), so links are followed; what
// they lead to is read only if it is a regular file, opened without blocking (a FIFO would block
// the open forever, and sidesync with it, deaf to SIGTERM), and only up to MaxPodInfoFile. A read
// that is still going when ctx ends is given up.
func ReadPodInfo(ctx context.Context, dir string) PodInfo {
	var pi PodInfo
	pi.Annotations = pi.read(ctx, filepath.Join(dir, contract.PodInfoAnnotations))
	pi.Labels = pi.read(ctx, filepath.Join(dir, contract.PodInfoLabels))
	return pi
}

// read reads one file of the volume, recording whether it exists and why it is unusable.
func (pi *PodInfo) read(ctx context.Context, path string) map[string]string {
	data, err := readWithin(ctx, func() ([]byte, error) { return readRegular(path, MaxPodInfoFile) })
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}
	}
	pi.Found = true
	if err != nil {
		pi.Warnings = append(pi.Warnings, fmt.Sprintf("ignoring the downward-API file %s: %v", path, err))
		return map[string]string{}
	}
	return parseKeyValues(bytes.NewReader(data))
}

// readRegular reads the downward-API file at path with readBounded, whose refusal of a file
// larger than limit says why the bound is what it is.
func readRegular(path string, limit int) ([]byte, error) {
	return readBounded(path, limit, "Kubernetes caps a pod's annotations at 256 KiB, quoted at most four times as large")
}

// parseKeyValues reads the lines of a downward-API file; a line without "=" is skipped, and a
// value that is not quoted is kept as it is. ReadPodInfo gives it at most MaxPodInfoFile bytes,
// so no line is longer than the scanner's largest buffer.
func parseKeyValues(r io.Reader) map[string]string {
	m := make(map[string]string)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), MaxPodInfoFile) // a line is at most the whole file
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
