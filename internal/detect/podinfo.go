package detect

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sidesync/sidesync/internal/contract"
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

// readWithin runs read and waits for its answer until ctx ends. A read stuck in the kernel (a
// hung file system) is left behind: the process ends soon after a stop signal anyway.
func readWithin(ctx context.Context, read func() ([]byte, error)) ([]byte, error) {
	type answer struct {
		data []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		data, err := read()
		done <- answer{data, err}
	}()
	select {
	case a := <-done:
		return a.data, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("not read: %w", context.Cause(ctx))
	}
}

// readRegular reads the regular file at path (following symlinks), at most limit bytes. Anything
// else (a FIFO, a device, a directory, a socket) is refused after a non-blocking open, and so is
// a file larger than limit, whatever its size says: /proc and /sys files claim sizes they do not
// have. Errors name what the file is, not its path.
func readRegular(path string, limit int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, unwrapPath(err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s, not a regular file", fileKind(fi.Mode()))
	case fi.Size() > int64(limit):
		return nil, fmt.Errorf("larger than %d bytes (%d): Kubernetes caps a pod's annotations at 256 KiB, quoted at most four times as large", limit, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read it: %w", unwrapPath(err))
	case len(data) > limit:
		return nil, fmt.Errorf("larger than %d bytes: Kubernetes caps a pod's annotations at 256 KiB, quoted at most four times as large", limit)
	}
	return data, nil
}

// unwrapPath drops the *fs.PathError's operation and path, which the warning already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileKind names a file type that is not a regular file, for a warning.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
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
