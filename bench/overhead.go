package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// overheadResult compares `sidesync -- true` with `true`, and a minimal Go wrapper with `true`.
type overheadResult struct {
	diffs, minDiffs         []time.Duration // wrapper run minus plain run, per round
	plain, wrapped, minWrap []time.Duration
}

// measureOverhead runs `true`, `sidesync -- true` (no sidecar configured or found) and
// `minimal-wrapper true` in rounds, in random order within each round, so that drift of the
// machine hits all alike.
func (s *suite) measureOverhead(r *results) error {
	rng := rand.New(rand.NewPCG(s.o.seed, 0x0e4d))
	truePath, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	runs := [][]string{{truePath}, {s.binary, "--", truePath}, {s.minimal, truePath}}
	for i := 0; i < s.o.pairs; i++ {
		var took [3]time.Duration
		for _, k := range rng.Perm(3) {
			cmd := exec.Command(runs[k][0], runs[k][1:]...)
			cmd.Env = s.env()
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%v: %w", runs[k], err)
			}
			took[k] = time.Since(start)
		}
		o := &r.overhead
		o.plain, o.wrapped, o.minWrap = append(o.plain, took[0]), append(o.wrapped, took[1]), append(o.minWrap, took[2])
		o.diffs, o.minDiffs = append(o.diffs, took[1]-took[0]), append(o.minDiffs, took[2]-took[0])
	}
	return nil
}

// memoryResult is sidesync's peak memory in one situation.
type memoryResult struct {
	what          string
	maxRSS        int64 // KiB: VmHWM, the peak resident set of sidesync's own image
	anon, fileRSS int64 // KiB, at the last sample: private memory, and the binary's own clean pages
}

// measureMemory reads sidesync's peak RSS while it waits for a sidecar for several seconds, and
// while it supervises a command for several seconds.
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
			[]string{"--admin", "http://" + em.addr, "--quit", "never", "--", "true"})
		if err != nil {
			return err
		}
		secs := strings.TrimSuffix(hold, "s")
		supervising, err := s.peakRSS(b.path, "supervising `sleep "+secs+"`"+b.name,
			[]string{"--admin", "http://" + em.addr, "--quit", "never", "--", "sleep", secs})
		if err != nil {
			return err
		}
		r.memory = append(r.memory, waiting, supervising)
	}
	return nil
}

// peakRSS runs sidesync with args and follows its memory in /proc until it exits. wait4's
// ru_maxrss would not do: Linux counts in it the RSS of the image replaced at exec, which for a
// child forked from this (larger) program is this program's own.
func (s *suite) peakRSS(binary, what string, args []string) (memoryResult, error) {
	m := memoryResult{what: what}
	cmd := exec.Command(binary, args...)
	cmd.Env = s.env()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return m, fmt.Errorf("sidesync: %w", err)
			}
			return m, nil
		case <-tick.C:
			if hwm, anon, file, ok := procMemory(cmd.Process.Pid); ok {
				m.maxRSS, m.anon, m.fileRSS = max(m.maxRSS, hwm), anon, file
			}
		}
	}
}

// procMemory reads VmHWM, RssAnon and RssFile (KiB) of a process.
func procMemory(pid int) (hwm, anon, file int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, 0, false
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			hwm, ok = n, true
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	return hwm, anon, file, ok
}
