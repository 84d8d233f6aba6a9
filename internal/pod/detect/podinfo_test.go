package detect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guard bounds a read that must not block; reaching it is a failure, never a synchronisation.
const guard = 20 * time.Second

// TestPodInfoHostileFiles: a downward-API volume whose annotations file is no downward-API file
// never blocks detection, never costs more than the bound, and is a warning that names the file
// and why, not "no downward-API volume". The labels file next to it still counts.
func TestPodInfoHostileFiles(t *testing.T) {
	tests := []struct {
		name  string
		make  func(t *testing.T, path string)
		want  string // in the warning, after the file's path
		root  bool   // needs a non-root user (root reads a mode-0 file)
		bytes int64  // the most the read may cost, in bytes read
	}{
		{"a FIFO", func(t *testing.T, path string) { mustOK(t, syscall.Mkfifo(path, 0o644)) }, "a named pipe (FIFO), not a regular file", false, 0},
		{"a symlink to /dev/zero", func(t *testing.T, path string) { mustOK(t, os.Symlink("/dev/zero", path)) }, "a character device, not a regular file", false, 0},
		{"a directory", func(t *testing.T, path string) { mustOK(t, os.Mkdir(path, 0o755)) }, "a directory, not a regular file", false, 0},
		{"a 66 MiB file", func(t *testing.T, path string) { writeLines(t, path, 66<<20) }, "larger than 1114112 bytes", false, MaxPodInfoFile + 1},
		{"a file that cannot be read (EIO)", func(t *testing.T, path string) { mustOK(t, os.Symlink("/proc/self/mem", path)) }, "cannot read it: input/output error", false, MaxPodInfoFile + 1},
		{"a line over the bound", func(t *testing.T, path string) {
			mustOK(t, os.WriteFile(path, []byte(`a="b"`+"\n"+`big="`+strings.Repeat("x", MaxPodInfoFile)+`"`+"\n"), 0o644))
		}, "larger than 1114112 bytes", false, MaxPodInfoFile + 1},
		{"an unreadable file", func(t *testing.T, path string) { mustOK(t, os.WriteFile(path, []byte(`a="b"`), 0)) }, "permission denied", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() == 0 {
				t.Skip("root reads a file of mode 0: runs as a non-root user (the I/O error case covers an unreadable file here)")
			}
			dir := writePodInfo(t, nil, map[string]string{"app": "job"})
			path := filepath.Join(dir, "annotations")
			os.Remove(path)
			tt.make(t, path)
			before := bytesRead(t)
			r := detectWithin(t, Options{PodInfoDir: dir, LookupEnv: noEnv}, "the downward-API volume")
			read := bytesRead(t) - before
			if read > tt.bytes+64<<10 {
				t.Errorf("read %d bytes, want at most %d (+64 KiB for the labels file and the test)", read, tt.bytes)
			}
			t.Logf("%d bytes read in all", read)
			if want := "downward-API file " + path + ": " + tt.want; !strings.Contains(strings.Join(r.Warnings, "\n"), want) {
				t.Errorf("warnings %q, want one with %q", r.Warnings, want)
			}
			if tried := strings.Join(r.Tried, "; "); strings.Contains(tried, "no downward-API volume") {
				t.Errorf("tried %q: the volume is there", tried)
			}
		})
	}
}

// TestPodInfoMemory: refusing a 66 MiB annotations file allocates little (it cost 279 MiB and
// 3.7 s when it was read whole).
func TestPodInfoMemory(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "annotations"), 66<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pi := ReadPodInfo(context.Background(), dir)
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	if got > 2*MaxPodInfoFile {
		t.Errorf("allocated %d bytes, want at most %d", got, 2*MaxPodInfoFile)
	}
	t.Logf("allocated %d bytes", got)
	if !pi.Found || len(pi.Annotations) != 0 || len(pi.Warnings) != 1 {
		t.Errorf("got %+v, want the volume found, no annotations and one warning", pi)
	}
}

// TestPodInfoStoppable: a read that has not answered when ctx ends (a hung file system) is given
// up, with the cause: a stop signal is never held up by the downward-API volume.
func TestPodInfoStoppable(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	release := make(chan struct{})
	defer close(release)
	done := make(chan error, 1)
	go func() {
		_, err := readWithin(ctx, func() ([]byte, error) { <-release; return nil, nil })
		done <- err
	}()
	stop(errors.New("received SIGTERM"))
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not read: received SIGTERM") {
			t.Errorf("err %v, want the stop signal as the cause", err)
		}
	case <-time.After(guard):
		t.Fatalf("the read held up the stop for %v", guard)
	}
}

// TestReadRegularBound: a regular file whose size says less than it holds (as /proc files say 0)
// is read up to the bound and refused past it.
func TestReadRegularBound(t *testing.T) {
	if fi, err := os.Stat("/proc/self/maps"); err != nil || fi.Size() != 0 {
		t.Skip("needs Linux's /proc/self/maps, which reports size 0")
	}
	_, err := readRegular("/proc/self/maps", 16)
	if err == nil || err.Error() != "larger than 16 bytes: Kubernetes caps a pod's annotations at 256 KiB, quoted at most four times as large" {
		t.Errorf("err %v, want larger than 16 bytes", err)
	}
}

// TestReadPodInfo: the files as the kubelet writes them are read, values unquoted.
func TestReadPodInfo(t *testing.T) {
	dir := writePodInfo(t, map[string]string{"sidesync.io/wrapped": "main,wait", "x": "a \"quoted\"\nvalue"}, map[string]string{"app": "job"})
	pi := ReadPodInfo(context.Background(), dir)
	if !pi.Found || pi.Annotations["sidesync.io/wrapped"] != "main,wait" || pi.Annotations["x"] != "a \"quoted\"\nvalue" ||
		pi.Labels["app"] != "job" || len(pi.Warnings) != 0 {
		t.Errorf("got %+v", pi)
	}
	if pi := ReadPodInfo(context.Background(), filepath.Join(dir, "absent")); pi.Found || len(pi.Warnings) != 0 {
		t.Errorf("no volume: got %+v", pi)
	}
}

// detectWithin runs Detect, failing the test if it does not return within the guard (a FIFO
// blocked it forever); what names what it was reading.
func detectWithin(t *testing.T, o Options, what string) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- Detect(context.Background(), o) }()
	select {
	case r := <-done:
		return r
	case <-time.After(guard):
		t.Fatalf("detection still reading %s after %v", what, guard)
	}
	return Result{}
}

// bytesRead is how many bytes this process has read so far (rchar of /proc/self/io).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("needs Linux's /proc/self/io (task I/O accounting):", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			mustOK(t, err)
			return n
		}
	}
	t.Skip("needs rchar in /proc/self/io (task I/O accounting)")
	return 0
}

// writeLines writes about size bytes of key="value" lines to path.
func writeLines(t *testing.T, path string, size int) {
	t.Helper()
	line := []byte(`example.com/key="` + strings.Repeat("v", 100) + `"` + "\n")
	mustOK(t, os.WriteFile(path, bytes.Repeat(line, size/len(line)+1), 0o644))
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
