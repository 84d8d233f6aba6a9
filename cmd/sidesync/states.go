package main

// The states of the phases, as typed constants: the summary, the exit code and the quit decision
// compare these, never strings, so that a misspelt state is a compile error. String gives the
// words of the summary ("ready", "skipped (restart)"), unchanged from when they were strings.

// waitState is how the wait phase ended.
type waitState int

const (
	waitNotRun    waitState = iota // the phase did not run
	waitReady                      // every sidecar became ready
	waitNotReady                   // a sidecar never became ready
	waitStopped                    // a stop signal ended the wait
	waitDisabled                   // --disabled
	waitNotWaited                  // --no-wait
	waitNothing                    // no sidecar has a readiness check to wait on
)

var waitWords = [...]string{"", "ready", "not ready", "stopped", "disabled", "not waited for", "nothing to wait for"}

func (s waitState) String() string { return waitWords[s] }

// quitState is how the quit phase ended: sent, or why nothing was sent.
type quitState int

const (
	quitNotRun           quitState = iota // the phase did not run
	quitOK                                // every sidecar took the quit
	quitFailed                            // a sidecar did not
	quitNone                              // no sidecar to tell (--disabled, none with a quit call)
	quitSkippedNever                      // --quit never
	quitSkippedOnSuccess                  // --quit on-success and the command did not succeed
	quitSkippedRestart                    // the kubelet restarts this container in place
	quitSkippedPeers                      // another wrapped container of the pod still runs
)

var quitWords = [...]string{"", "ok", "failed", "none to quit", "skipped (never)", "skipped (on-success)",
	"skipped (restart)", "skipped (peers)"}

func (s quitState) String() string { return quitWords[s] }

// detectState is what detection found, when it ran.
type detectState int

const (
	detectNotRun    detectState = iota // sidecars were configured: no detection
	detectFound                        // detection found at least one sidecar
	detectNoneFound                    // detection found none
)

var detectWords = [...]string{"", "detected", "none found"}

func (s detectState) String() string { return detectWords[s] }
