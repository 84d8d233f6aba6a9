// Package inject is the one mutation that puts sidesync into a pod: a pure function over a Pod,
// Job or CronJob object (as decoded JSON, so that fields it does not know survive), used by
// `kubectl sidesync inject` and, later, by the admission webhook. It does no I/O: entrypoints
// that must come from a registry are resolved beforehand and passed in. What it writes is the
// contract with the sidesync binary and image (internal/shared/contract).
package inject
