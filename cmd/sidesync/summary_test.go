package main

import (
	"errors"
	"testing"
	"time"
)

// TestTerminationLogStall: when sidesync was starved of CPU past the bound, the write's answer
// and the bound are both there when it runs again; the answer must win, every time (select
// alone would pick either, and the 10,000-run soak saw the spurious warning once in 1,400).
func TestTerminationLogStall(t *testing.T) {
	t.Parallel()
	for i := range 1000 {
		done := make(chan error, 1)
		done <- nil
		bound := make(chan time.Time, 1)
		bound <- time.Now()
		if err := firstAnswer(done, bound); err != nil {
			t.Fatalf("try %d: %v, want the write's answer (nil)", i, err)
		}
	}
	wrote := errors.New("a pipe that nobody reads")
	done := make(chan error, 1)
	done <- wrote
	if err := firstAnswer(done, make(chan time.Time)); !errors.Is(err, wrote) {
		t.Errorf("answer before the bound: %v, want %v", err, wrote)
	}
	bound := make(chan time.Time, 1)
	bound <- time.Now()
	if err := firstAnswer(make(chan error), bound); !errors.Is(err, errTerminationLogSlow) {
		t.Errorf("no answer by the bound: %v, want %v", err, errTerminationLogSlow)
	}
}
