//go:build linux

package nodejobs

import (
	"testing"
	"time"
)

// This file holds the package's longest test, TestRescueMany, and its name sorts first: go test
// starts tests in the order of their files and, with -test.parallel tests running at once, the
// longest one started first ends the run soonest.

// manyPods is how many stuck pods TestRescueMany frees with one rescue: more than the command's
// 8 patches and polls in flight, so that its bound is used several times over. BenchmarkRescue
// measures 50 (BENCHMARKS.md); on 2 cores shared with the package's other tests, starting 50
// pods at once cost the node minutes.
const manyPods = 20

// TestRescueMany: one rescue frees manyPods stuck pods at once, within its bounded wait. How long
// it takes is BenchmarkRescue's.
func TestRescueMany(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	t.Logf("%d pods rescued in %s", manyPods, rescueMany(t, n, manyPods).Round(time.Millisecond))
}
