package main

// Faults of the downward-API volume (docs/FAULTS.md, "The pod's file system"): its annotations
// file is something the kubelet never writes. sidesync warns, naming the file and why, and runs
// the command; it never blocks on the file.

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFaultPodInfoNotAFile: an annotations file that is a FIFO (which blocked sidesync forever,
// deaf to SIGTERM) or a symlink to an endless device is refused at once, with a warning; the run
// goes on as without the volume's annotations.
func TestFaultPodInfoNotAFile(t *testing.T) {
	t.Parallel()
	for name, create := range map[string]func(path string) error{
		"FIFO":                   func(path string) error { return syscall.Mkfifo(path, 0o644) },
		"symlink to /dev/zero":   func(path string) error { return os.Symlink("/dev/zero", path) },
		"symlink to a directory": func(path string) error { return os.Symlink(filepath.Dir(path), path) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "annotations")
			if err := create(path); err != nil {
				t.Fatal(err)
			}
			r := sidesync(t, nil, "--pod-info", dir, "--kube-api=false", "--", bin.testcmd, "exit", "7")
			if r.code != 7 {
				t.Errorf("exit %d, want the command's 7; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "WARN ignoring the downward-API file "+path+": a ", "not a regular file",
				"the downward-API volume at "+dir+" could not be used")
		})
	}
}
