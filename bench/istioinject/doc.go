// Package istioinject runs sidesync's admission webhook and Istio's sidecar injector side by
// side on the same pods, for BENCHMARKS.md ("Beside Istio's injector"): the CPU, bytes and
// allocations of one admission in-process, and the latency each adds to a pod's creation through
// a real kube-apiserver.
//
// It is a module of its own (require istio.io/istio, replace github.com/sidesync/sidesync =>
// ../..), so that the main module's go.mod never gains Istio and `go test ./...` at the root,
// which stops at a nested module, never builds it (minutes of CPU). Run it from this directory:
//
//	go test -v -run '^$' -bench BenchmarkAdmission -benchtime 300x -count 1 .
//	SIDESYNC_KUBE_BIN=/root/.cache/sidesync-ci/kube SIDESYNC_KUBE_REQUIRED=1 go test -v -run '^$' -bench BenchmarkThroughAPIServer -benchtime 1x -count 1 -timeout 30m .
package istioinject
