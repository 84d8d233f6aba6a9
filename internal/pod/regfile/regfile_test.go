package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRead: a regular file is read whole; anything else is refused without blocking, naming
// what it is; a file over the bound is refused whatever its size says.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("running\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		limit      int
		want, err  string
	}{
		{"a regular file", file, 8, "running\n", ""},
		{"through a symlink", link, 8, "running\n", ""},
		{"over the bound, by its size", file, 7, "", "larger than 7 bytes (8)"},
		{"a FIFO nobody writes (the open would block)", fifo, 8, "", "a named pipe (FIFO), not a regular file"},
		{"a directory", dir, 8, "", "a directory, not a regular file"},
		{"a character device", "/dev/null", 8, "", "a character device, not a regular file"},
		{"missing", filepath.Join(dir, "none"), 8, "", "no such file or directory"},
		{"a /proc file whose size lies", "/proc/self/maps", 16, "", "larger than 16 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Read(tc.path, tc.limit)
			switch {
			case tc.err == "" && (err != nil || string(data) != tc.want):
				t.Errorf("Read = %q, %v; want %q", data, err, tc.want)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("Read = %q, %v; want the error %q", data, err, tc.err)
			case tc.err != "" && strings.Contains(err.Error(), dir):
				t.Errorf("the error names the path, which the caller names: %v", err)
			}
			if _, tooLarge := errors.AsType[*TooLarge](err); tooLarge != strings.HasPrefix(tc.err, "larger") {
				t.Errorf("TooLarge %v for %v", tooLarge, err)
			}
		})
	}
}
