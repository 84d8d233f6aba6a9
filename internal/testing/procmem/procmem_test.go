package procmem

import (
	"os"
	"os/exec"
	"testing"
)

// TestRead: this process has a peak at least as large as its resident set, made of private and
// file pages; a reaped process has no figures.
func TestRead(t *testing.T) {
	m, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.HWM <= 0 || m.RSS <= 0 || m.HWM < m.RSS || m.Anon+m.File <= 0 {
		t.Errorf("implausible figures for this process: %+v", m)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cmd.Process.Pid); err == nil {
		t.Error("a reaped process has memory figures")
	}
}
