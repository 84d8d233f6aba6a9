package child

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is the controlling terminal that the wrapper handed to the command's process group.
type terminal struct {
	fd   int
	pgrp int // the wrapper's own process group, to give the terminal back to
}

// foregroundTerminal returns f's terminal when f is one and the wrapper's process group is in the
// foreground on it; otherwise nil. Only then may the terminal be handed to the command: taking it
// from the background would stop the wrapper with SIGTTOU.
func foregroundTerminal(f *os.File) *terminal {
	if f == nil {
		return nil
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return nil
	}
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: fg}
}

// reclaim makes the wrapper's group the terminal's foreground group again, after the command
// ended, so that a shell that started the wrapper gets a sane terminal back. SIGTTOU is ignored
// for the call because the wrapper is a background group at that moment.
func (t *terminal) reclaim() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, t.pgrp)
}
