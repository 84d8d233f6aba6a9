package sidecar

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/emulator"
)

// TestConcurrentWaitAndQuit is the in-process soak: SIDESYNC_SOAK_CONCURRENT (default 20)
// goroutines at once each wait for a shared emulated Envoy (which turns ready only after
// answering "not ready" n times, so that the goroutines probe it again and again on their kept
// connections) and then quit a shared generic sidecar. Afterwards the package must have left nothing behind: no
// goroutine, no open file descriptor, and the heap back near where it was.
func TestConcurrentWaitAndQuit(t *testing.T) {
	n := 20
	if v := os.Getenv("SIDESYNC_SOAK_CONCURRENT"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SIDESYNC_SOAK_CONCURRENT=%q: want a positive number", v)
		}
	}
	envoy := emulator.NewEnvoy(emulator.Options{ReadyAfterProbes: n})
	if err := envoy.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer envoy.Close()
	var quits, probes atomic.Int64
	generic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/quit" {
			quits.Add(1)
		}
	}))
	defer generic.Close()

	// Warm up what is created once per process (the resolver, timers), then take the baseline.
	warm(t, envoy.Addr(), generic.URL)
	goroutines, fds, heap := runtime.NumGoroutine(), openFDs(t), heapInUse()

	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			check := Check{Kind: EnvoyAdmin, URL: "http://" + envoy.Addr()}
			res, err := WaitReady(ctx, check, WaitOptions{Backoff: Constant{5 * time.Millisecond}})
			probes.Add(int64(res.Probes))
			if err != nil {
				errs <- err
				return
			}
			if _, err := Quit(ctx, Call{URL: generic.URL + "/quit"}, QuitOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := quits.Load(); got != int64(n) {
		t.Errorf("%d quits reached the sidecar, want %d", got, n)
	}

	// The servers' own connections close asynchronously after the clients close theirs; the
	// package's must be gone when WaitReady and Quit return. Wait (bounded) for the count to
	// settle, then compare.
	generic.CloseClientConnections()
	settle := func(now func() int, base, slack int) int {
		deadline := time.Now().Add(10 * time.Second)
		for now() > base+slack && time.Now().Before(deadline) {
			runtime.Gosched()
			time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
		}
		return now()
	}
	// The emulator's and httptest's handler goroutines end as their connections close.
	if g := settle(runtime.NumGoroutine, goroutines, 0); g > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left after %d concurrent waits and quits (baseline %d):\n%s", g, n, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if f := settle(func() int { return openFDs(t) }, fds, 0); f > fds {
		t.Errorf("%d file descriptors open after %d concurrent waits and quits (baseline %d)", f, n, fds)
	}
	// Bounded memory: what is left in use after a GC is not proportional to n.
	if h := heapInUse(); h > heap+4<<20 {
		t.Errorf("heap in use %d bytes after, %d before: grew by more than 4 MiB", h, heap)
	}
	t.Logf("soak: %d concurrent WaitReady+Quit in one process: %d probes, %d quits, goroutines %d → %d, fds %d → %d, heap in use %d → %d KiB",
		n, probes.Load(), quits.Load(), goroutines, runtime.NumGoroutine(), fds, openFDs(t), heap>>10, heapInUse()>>10)
}

// warm runs one wait and one quit, so that the baseline includes what is made once.
func warm(t *testing.T, envoyAddr, genericURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Probe(ctx, Check{Kind: EnvoyAdmin, URL: "http://" + envoyAddr}) // "not ready" yet: only the path is warmed
	if _, err := Quit(ctx, Call{URL: genericURL + "/warm"}, QuitOptions{}); err != nil {
		t.Fatal(err)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// heapInUse is the heap in use after a full collection.
func heapInUse() int {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.HeapInuse)
}
