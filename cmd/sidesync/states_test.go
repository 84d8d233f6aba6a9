package main

import (
	"fmt"
	"testing"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// TestStateWords: every state of every phase prints the words the summary printed when states
// were strings, and no two states of a phase print the same.
func TestStateWords(t *testing.T) {
	t.Parallel()
	want := map[fmt.Stringer]string{
		waitNotRun: "", waitReady: "ready", waitNotReady: "not ready", waitStopped: "stopped", waitDisabled: "disabled",
		waitNotWaited: "not waited for", waitNothing: "nothing to wait for",
		quitNotRun: "", quitOK: "ok", quitFailed: "failed", quitNone: "none to quit", quitSkippedNever: "skipped (never)",
		quitSkippedOnSuccess: "skipped (on-success)", quitSkippedRestart: "skipped (restart)", quitSkippedPeers: "skipped (peers)",
		detectNotRun: "", detectFound: "detected", detectNoneFound: "none found",
	}
	for s, words := range want {
		if s.String() != words {
			t.Errorf("%T %v prints %q, want %q", s, s, s.String(), words)
		}
	}
	if n := len(waitWords) + len(quitWords) + len(detectWords); n != len(want) {
		t.Errorf("%d states, %d in this test: add the new ones", n, len(want))
	}
	for _, words := range [][]string{waitWords[:], quitWords[:], detectWords[:]} {
		seen := map[string]bool{}
		for _, w := range words {
			if seen[w] {
				t.Errorf("two states print %q", w)
			}
			seen[w] = true
		}
	}
}

// TestNotFoundHintFollowsTheCommandThatRan: the "did you mean" hint looks at the command that was
// decided to run, not at the configuration: a platform command is never a misspelt subcommand.
func TestNotFoundHintFollowsTheCommandThatRan(t *testing.T) {
	t.Parallel()
	notFound := &child.StartError{Code: child.ExitNotFound}
	if got := notFoundHint(notFound, command{argv: []string{"verison"}}); got == "" {
		t.Error("a typed command that is a misspelt subcommand gets no hint")
	}
	if got := notFoundHint(notFound, command{argv: []string{"verison"}, platform: "linux/amd64"}); got != "" {
		t.Errorf("a platform command got the hint %q", got)
	}
	if got := notFoundHint(notFound, command{}); got != "" {
		t.Errorf("no command got the hint %q", got)
	}
}
