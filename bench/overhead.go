package main

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"time"
)

// overheadResult compares `sidesync -- true` with `true`, and a minimal Go wrapper with `true`.
type overheadResult struct {
	diffs, minDiffs, smallDiffs       []time.Duration // wrapper run minus plain run, per round
	plain, wrapped, minWrap, smallRun []time.Duration
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
	runs := [][]string{{truePath}, {s.binary, "--", truePath}, {s.minimal, truePath}, {s.small, "--", truePath}}
	for i := 0; i < s.o.pairs; i++ {
		var took [4]time.Duration
		for _, k := range rng.Perm(len(runs)) {
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
		o.smallRun, o.smallDiffs = append(o.smallRun, took[3]), append(o.smallDiffs, took[3]-took[0])
	}
	return nil
}
