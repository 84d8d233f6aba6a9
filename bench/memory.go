package main

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/testing/procmem"
)

// memoryResult is sidesync's peak memory in one situation.
type memoryResult struct {
	what          string
	maxRSS        int64 // KiB: VmHWM, the peak resident set of sidesync's own image
	anon, fileRSS int64 // KiB, at the last sample: private memory, and the binary's own clean pages
	series        []int64
	every         time.Duration // series holds VmRSS (KiB) at every such interval; none when zero
}

// rssEvery is the interval of the RSS series of the long waits.
const rssEvery = 5 * time.Second

// measureMemory reads sidesync's peak RSS while it waits for a sidecar for several seconds, and
// while it supervises a command for several seconds; then, with the release build, through a
// long wait (-long-wait) for a sidecar that never becomes ready.
func (s *suite) measureMemory(r *results) error {
	hold := "4s"
	if s.o.quick {
		hold = "1s"
	}
	for _, b := range []struct{ name, path string }{{"", s.binary}, {" (-tags nokubeapi)", s.small}} {
		em, err := s.startEmulator("--ready-after", hold) // each build waits out a fresh delay
		if err != nil {
			return err
		}
		defer em.kill()
		waiting, err := s.peakRSS(b.path, "waiting "+hold+" for a sidecar"+b.name,
			[]string{"--admin", "http://" + em.addr, "--quit", "never", "--", "true"}, 0, 0)
		if err != nil {
			return err
		}
		secs := strings.TrimSuffix(hold, "s")
		supervising, err := s.peakRSS(b.path, "supervising `sleep "+secs+"`"+b.name,
			[]string{"--admin", "http://" + em.addr, "--quit", "never", "--", "sleep", secs}, 0, 0)
		if err != nil {
			return err
		}
		r.memory = append(r.memory, waiting, supervising)
	}
	if s.o.longWait > 0 {
		return s.measureLongWait(r)
	}
	return nil
}

// measureLongWait follows the release build through a wait of -long-wait that times out: the
// memory of a wait must not grow with its length. Against the emulated Envoy, which keeps
// connections alive as Envoy does, every probe after the first reuses one connection; with
// nothing listening (a sidecar that has not started yet), every probe is a new connection.
func (s *suite) measureLongWait(r *results) error {
	em, err := s.startEmulator("--never-ready")
	if err != nil {
		return err
	}
	defer em.kill()
	refused, err := closedAddr()
	if err != nil {
		return err
	}
	d := strconv.FormatFloat(s.o.longWait.Seconds(), 'f', -1, 64) + "s" // "60s", not "1m0s"
	for _, w := range []struct{ what, addr string }{
		{"waiting " + d + " for a never-ready sidecar", em.addr},
		{"waiting " + d + " with nothing listening", refused},
	} {
		args := []string{"--admin", "http://" + w.addr, "--timeout", d, "--quit", "never", "--", "true"}
		m, err := s.peakRSS(s.binary, w.what, args, exitUnavailable, rssEvery)
		if err != nil {
			return err
		}
		r.memory = append(r.memory, m)
	}
	return nil
}

// exitUnavailable is sidesync's exit code when a sidecar never became ready.
const exitUnavailable = 69

// closedAddr returns a loopback address where nothing listens.
func closedAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// peakRSS runs sidesync with args, expecting exit code want, and follows its memory in /proc
// until it exits; every, when not zero, is the interval of the RSS series kept. wait4's
// ru_maxrss would not do: Linux counts in it the RSS of the image replaced at exec, which for a
// child forked from this (larger) program is this program's own.
func (s *suite) peakRSS(binary, what string, args []string, want int, every time.Duration) (memoryResult, error) {
	m := memoryResult{what: what, every: every}
	cmd := exec.Command(binary, args...)
	cmd.Env = s.env()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	next := every
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != want) || err == nil && want != 0 {
				return m, fmt.Errorf("sidesync %v: %v, want exit code %d", args, err, want)
			}
			return m, nil
		case <-tick.C:
			pm, err := procmem.Read(cmd.Process.Pid)
			if err != nil {
				continue
			}
			m.maxRSS, m.anon, m.fileRSS = max(m.maxRSS, pm.HWM), pm.Anon, pm.File
			if every > 0 && time.Since(start) >= next {
				m.series = append(m.series, pm.RSS)
				next += every
			}
		}
	}
}
