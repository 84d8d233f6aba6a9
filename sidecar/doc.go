// Package sidecar waits until a Kubernetes sidecar is ready and asks it to quit, for Go programs
// that want the pattern of the article sidesync started from (poll Envoy's admin /ready with a
// backoff, do the work, POST /quitquitquit) without wrapping themselves in the sidesync command.
//
// A sidecar is data: a Check says how to tell that it is ready, a Call how to ask it to quit.
// WaitReady probes a Check until it passes, and returns a *WaitError, which keeps both why the wait
// stopped and what the sidecar last answered, when it does not. Quit sends a Call, retrying within
// a bounded time. Backoff policies (Constant, Exponential and Polly's DecorrelatedJitter, with the
// Limit and Cap wrappers) are pure functions of their settings and of the random samples given.
//
// The package never logs unless given a *slog.Logger, never writes to stdout, never exits the
// process and holds no mutable package state. It talks plain HTTP/1.1 over loopback with a small
// client of its own (no net/http), so that it adds little to a binary.
package sidecar
