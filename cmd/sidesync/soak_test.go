package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/emulator"
	"github.com/sidesync/sidesync/internal/testing/procmem"
)

// The soaks look for the failures that show only once in thousands of runs (envoy-preflight
// exited 1 at random on a runtime signal) and under many runs at once. Their sizes are
// environment variables, so that `go test ./...` stays quick; CI runs them at the sizes that
// .ci/run gives, with its reasons. By hand:
//
//	SIDESYNC_SOAK_RUNS=10000 go test ./cmd/sidesync -run '^TestSoak$' -count=1 -v
//	SIDESYNC_SOAK_CONCURRENT=200 go test ./cmd/sidesync -run '^TestSoakConcurrent$' -count=1 -v
//
// SIDESYNC_SOAK_BINARY runs that sidesync binary (a release build, say) instead of this test
// binary in its place.
const (
	envSoakRuns       = "SIDESYNC_SOAK_RUNS"
	envSoakConcurrent = "SIDESYNC_SOAK_CONCURRENT"
	envSoakBinary     = "SIDESYNC_SOAK_BINARY"
)

// soakBinary is the sidesync the soaks run.
func soakBinary() string {
	if b := os.Getenv(envSoakBinary); b != "" {
		return b
	}
	return bin.sidesync
}

// soakSize reads a soak's size from its variable, with a default small enough for every run.
func soakSize(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// soakRun is one run of sidesync in a soak: its arguments, and what it must end with.
type soakRun struct {
	mode string
	args []string
	want int
	// quitTo, when not nil, is the emulated sidecar of this run alone, which must be told to quit.
	quitTo *emulator.Sidecar
}

// startSidecar starts an emulated Envoy in this process (no fork: the soak measures sidesync).
func startSidecar(t testing.TB, opts emulator.Options) *emulator.Sidecar {
	t.Helper()
	sc := emulator.NewEnvoy(opts)
	if err := sc.Start(context.Background()); err != nil {
		t.Fatalf("starting an emulated Envoy: %v", err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

// checkSoakOutput returns what is wrong with a run's stderr: every line must be one of
// sidesync's own log lines at INFO, and the last must be the summary with the exit code.
func checkSoakOutput(stderr string, want int) string {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	for _, l := range lines {
		if !strings.Contains(l, " sidesync INFO ") {
			return "unexpected line: " + l
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, " sidesync INFO done exit="+strconv.Itoa(want)+" ") {
		return "the last line is not the summary of exit " + strconv.Itoa(want) + ": " + last
	}
	return ""
}

// TestSoak runs sidesync SIDESYNC_SOAK_RUNS times (default 60), a few at a time, in three modes
// by turns: no sidecar (detection finds none), a ready emulated sidecar of its own that must be
// told to quit, and a shared ready sidecar with --quit never; the command exits 0 or 1 by turns.
// Every run must exit with the command's code and log nothing but INFO lines ending with the
// summary: no error, no warning, no stray exit code.
func TestSoak(t *testing.T) {
	runs := soakSize(t, envSoakRuns, 60)
	shared := startSidecar(t, emulator.Options{})
	sharedAdmin := "http://" + shared.Addr()
	noPodInfo := t.TempDir() // an empty directory: no downward-API files

	plan := func(i int) soakRun {
		code := i / 3 % 2 // 0 or 1, each mode gets both
		// true and false: the smallest commands there are, so that the soak spends its time in sidesync.
		cmd := []string{"--", []string{"true", "false"}[code]}
		switch i % 3 {
		case 0:
			return soakRun{mode: "no sidecar", want: code,
				args: append([]string{"--kube-api=false", "--pod-info=" + noPodInfo}, cmd...)}
		case 1:
			sc := startSidecar(t, emulator.Options{})
			return soakRun{mode: "ready sidecar", want: code, quitTo: sc,
				args: append([]string{"--admin", "http://" + sc.Addr()}, cmd...)}
		default:
			return soakRun{mode: "quit never", want: code,
				args: append([]string{"--admin", sharedAdmin, "--quit", "never"}, cmd...)}
		}
	}

	var (
		mu       sync.Mutex
		failures []string
		byMode   = map[string]int{}
		maxRSS   int64
	)
	next := atomic.Int64{}
	workers := 4
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= runs {
					return
				}
				r := plan(i)
				code, stderr, rss := soakOnce(t, r.args)
				problem := ""
				if code != r.want {
					problem = fmt.Sprintf("exit %d, want %d", code, r.want)
				} else if p := checkSoakOutput(stderr, r.want); p != "" {
					problem = p
				} else if r.quitTo != nil {
					select {
					case <-r.quitTo.Done(): // told to quit, and stopped
					case <-time.After(guard):
						problem = "its sidecar was not told to quit"
					}
				}
				mu.Lock()
				byMode[r.mode]++
				maxRSS = max(maxRSS, rss)
				if problem != "" && len(failures) < 20 {
					failures = append(failures, fmt.Sprintf("run %d (%s, %q): %s\n%s", i, r.mode, r.args, problem, stderr))
				}
				mu.Unlock()
				if r.quitTo != nil {
					r.quitTo.Close()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("soak: %s: %d runs (%d no sidecar, %d ready sidecar, %d quit never), %d unexpected exit codes or log lines, %.0f runs/s with %d at a time, peak RSS of one sidesync or its command %d KiB (as wait4 reports it)",
		soakBinary(), runs, byMode["no sidecar"], byMode["ready sidecar"], byMode["quit never"], len(failures), float64(runs)/elapsed.Seconds(), workers, maxRSS)
}

// soakOnce runs sidesync once and returns its exit code, its stderr and its peak RSS in KiB.
func soakOnce(t *testing.T, args []string) (code int, stderr string, rssKiB int64) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, soakBinary(), args...)
	cmd.Env = testEnv(nil)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGABRT) } // stacks, as in runProgram
	cmd.WaitDelay = guard
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, "did not finish within the guard; stderr (ending with its stacks):\n" + errb.String(), 0
	}
	if cmd.ProcessState == nil {
		return -1, fmt.Sprintf("did not start: %v", err), 0
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rssKiB = ru.Maxrss
	}
	return cmd.ProcessState.ExitCode(), errb.String(), rssKiB
}

// TestSoakConcurrent starts SIDESYNC_SOAK_CONCURRENT (default 20) sidesyncs at once against
// shared sidecars: half wait for an emulated Envoy and never quit it, half wait for and quit a
// generic HTTP sidecar that counts the quits. Each command leaves an orphan grandchild, which
// sidesync (--subreaper) must reap, and then holds until the test closes its stdin: once every
// command has said it started, all the sidesyncs are alive at once, and the test reads each
// one's peak memory (VmHWM) and open descriptors from /proc. Then every run must exit with its
// command's code, the sidecar must get exactly one quit per run of the second half, and no
// sidesync may be left a zombie of this process. With the release binary (SIDESYNC_SOAK_BINARY)
// each sidesync must stay within 10 MiB and 16 descriptors; a test binary in its place, far
// bigger, is only reported on. (wait4's peak RSS is not used: after a vfork it can include the
// test's own.)
func TestSoakConcurrent(t *testing.T) {
	n := soakSize(t, envSoakConcurrent, 20)
	envoy := startSidecar(t, emulator.Options{})
	var quits, probes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) { probes.Add(1) })
	mux.HandleFunc("POST /quit", func(w http.ResponseWriter, _ *http.Request) { quits.Add(1) })
	generic := httptest.NewServer(mux)
	defer generic.Close()

	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout <-chan string
		stderr bytes.Buffer
		want   int
	}
	procs := make([]*proc, n)
	pidDir := t.TempDir()
	start := time.Now()
	for i := range procs {
		p := &proc{want: i % 7}
		args := []string{"--admin", "http://" + envoy.Addr(), "--quit", "never"}
		if i%2 == 1 {
			args = []string{"--ready-url", generic.URL + "/ready", "--quit-url", generic.URL + "/quit"}
		}
		// The command says it started, leaves an orphan grandchild, waits for stdin to close,
		// then exits i%7 (soakOrphanScript).
		args = append(args, "--subreaper", "--", "/bin/sh", "-c", soakOrphanScript,
			"sh", filepath.Join(pidDir, strconv.Itoa(i)), strconv.Itoa(p.want))
		p.cmd = exec.Command(soakBinary(), args...)
		p.cmd.Env = testEnv(nil)
		p.cmd.Stderr = &p.stderr
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p.cmd.Stdout = w
		err = p.cmd.Start()
		w.Close()
		if err != nil {
			t.Fatalf("starting sidesync %d: %v", i, err)
		}
		p.stdout = lines(out)
		procs[i] = p
	}
	// All alive at once: every command has started, and none can end before its stdin closes.
	var hwmMax, hwmSum, fdMax int64
	for i, p := range procs {
		if l := next(t, p.stdout, fmt.Sprintf("sidesync %d's command starting", i)); l != "started" {
			t.Fatalf("sidesync %d's command said %q; stderr:\n%s", i, l, p.stderr.String())
		}
	}
	alive := time.Since(start)
	for i, p := range procs {
		hwm, fds, err := procUsage(p.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("sidesync %d: %v", i, err)
		}
		hwmMax, hwmSum, fdMax = max(hwmMax, hwm), hwmSum+hwm, max(fdMax, fds)
	}
	for _, p := range procs {
		p.stdin.Close()
	}
	for i, p := range procs {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * guard):
			p.cmd.Process.Kill()
			<-done
			t.Fatalf("sidesync %d did not finish; stderr:\n%s", i, p.stderr.String())
		}
		if got := p.cmd.ProcessState.ExitCode(); got != p.want {
			t.Errorf("sidesync %d: exit %d, want %d; stderr:\n%s", i, got, p.want, p.stderr.String())
		} else if problem := checkSoakOutput(p.stderr.String(), p.want); problem != "" {
			t.Errorf("sidesync %d: %s", i, problem)
		}
	}
	elapsed := time.Since(start)
	// Each orphan writes its PID file and exits, maybe after its sidesync: wait for all of them,
	// so that none still writes in pidDir when the test removes it.
	for i := range n {
		f := filepath.Join(pidDir, strconv.Itoa(i))
		for deadline := time.Now().Add(guard); ; {
			if _, err := os.Stat(f); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("orphan %d never wrote %s", i, f)
			}
			time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
		}
	}
	if got, want := quits.Load(), int64(n/2); got != want {
		t.Errorf("the shared generic sidecar was told to quit %d times, want %d (one per run that quits it)", got, want)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children of the test process: %v", z)
	}
	if os.Getenv(envSoakBinary) != "" && (hwmMax > 10<<10 || fdMax > 16) {
		t.Errorf("a sidesync peaked at %d KiB and %d open descriptors; the bounds are 10 MiB and 16", hwmMax, fdMax)
	}
	t.Logf("soak: %s: %d sidesyncs alive at once (all started in %v), %d quits to the shared sidecar, %d readiness probes, no zombie; "+
		"peak memory (VmHWM) of one sidesync at most %d KiB, %d MiB for all %d together; at most %d open descriptors each; all done in %v",
		soakBinary(), n, alive.Round(time.Millisecond), quits.Load(), probes.Load(), hwmMax, hwmSum>>10, n, fdMax, elapsed.Round(time.Millisecond))
}

// procUsage reads a live process's peak resident memory (VmHWM, KiB) and its number of open
// file descriptors from /proc.
func procUsage(pid int) (hwmKiB, fds int64, err error) {
	m, err := procmem.Read(pid)
	if err != nil {
		return 0, 0, err
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return m.HWM, int64(len(entries)), err
}

// zombieChildren lists the children of this process that have exited and not been reaped.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var zombies []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) >= 2 && fields[0] == "Z" && fields[1] == strconv.Itoa(self) {
			zombies = append(zombies, pid)
		}
	}
	return zombies
}

// soakOrphanScript is TestSoakConcurrent's command, in sh rather than in the test binary (a
// process of the -race test binary costs a tenth of a second of CPU to start, and each run
// needed three): it says it started, leaves a grandchild that writes its PID to $1 and exits
// (an orphan once the subshell that started it has gone, a zombie until its sidesync reaps
// it), waits for stdin to close, and exits $2.
const soakOrphanScript = `echo started && (sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1"' sh "$1" &) && cat >/dev/null; exit "$2"`
