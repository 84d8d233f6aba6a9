package main

// Tests of the faults that issue 7 lists, each with a real sidesync process unless the fault is
// an ordering that only an in-process test can pin down.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/pod/child"
)

// TestStopSignalBeforeStart (fault 1): a stop signal taken before the command starts is never
// lost, whatever the wait said meanwhile (its last probe may answer "ready" after the signal):
// the command does not start. One taken after the start is forwarded. The signal owner is
// driven directly, so the order is certain.
func TestStopSignalBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	s := newSignals(stop)
	close(s.ready)             // as if signal.Notify had returned
	s.deliver(syscall.SIGUSR1) // not a stop signal: ignored before the start
	if ctx.Err() != nil {
		t.Fatal("SIGUSR1 stopped the run")
	}
	s.deliver(syscall.SIGTERM)
	s.deliver(syscall.SIGINT) // the first stop signal is the one reported
	started := false
	_, se, err := s.startCommand(ctx, func() (*child.Process, error) { started = true; return nil, nil })
	if started || err != nil || se == nil || se.sig != syscall.SIGTERM {
		t.Errorf("startCommand after SIGTERM: started %v, stopped by %v, err %v; want not started, SIGTERM", started, se, err)
	}
	if got := stopSignal(ctx); got == nil || got.sig != syscall.SIGTERM {
		t.Errorf("the run's context says %v, want SIGTERM", got)
	}
}

// TestStopSignalWhileProbing (fault 1, end to end): SIGTERM sent while a probe is in flight, as
// the sidecar answers ready, never goes missing: either the command does not start (143), or it
// starts and receives the signal. Which of the two happens depends on timing; both are right.
func TestStopSignalWhileProbing(t *testing.T) {
	t.Parallel()
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var quits sync.WaitGroup
	quits.Add(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
			once.Do(func() { close(inFlight); <-release })
			fmt.Fprint(w, "LIVE\n")
		case "/quitquitquit":
			fmt.Fprint(w, "OK\n")
			quits.Done()
		}
	}))
	defer srv.Close()
	r := startSidesync(t, nil, "--admin", srv.URL, "--timeout", "0", "--", bin.testcmd, "signals")
	<-inFlight
	r.signal(syscall.SIGTERM)
	close(release)
	if l, ok := <-r.stdout; ok {
		// The command started: the signal must reach it.
		if !strings.HasPrefix(l, "ready") {
			t.Fatalf("command said %q", l)
		}
		if got := next(t, r.stdout, "SIGTERM"); got != "SIGTERM" {
			t.Fatalf("command got %q, want SIGTERM", got)
		}
		r.stdin.Close()
		if code := r.exit(); code != 0 {
			t.Errorf("exit %d, want the command's 0", code)
		}
	} else if code := r.exit(); code != 143 {
		t.Errorf("the command did not run, yet sidesync exited %d, not 143; stderr:\n%s", code, r.stderr)
	}
	quits.Wait() // the sidecar is told to quit either way
}

// TestStderrReaderGone (fault 2): with nobody reading sidesync's stderr, its log writes fail, and
// it still runs the command, tells the sidecar to quit and exits with the command's code,
// instead of dying of SIGPIPE at its first log line.
func TestStderrReaderGone(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	defer pw.Close()
	cmd := exec.Command(bin.sidesync, "--admin", e.admin(), "--", bin.testcmd, "exit", "3")
	cmd.Env = testEnv(nil)
	cmd.Stderr = pw
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("sidesync ended with %v, want exit status 3", err)
	}
	if e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("the sidecar got %d quit requests, want 1", e.quits())
	}
}

// TestCommandSIGPIPEDefault (fault 2): the command starts with SIGPIPE at its default
// disposition; an ignored SIGPIPE would be inherited across exec. cat reads its own status.
func TestCommandSIGPIPEDefault(t *testing.T) {
	t.Parallel()
	r := sidesync(t, nil, "--disabled", "--", "cat", "/proc/self/status")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for l := range strings.SplitSeq(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if mask&(1<<(syscall.SIGPIPE-1)) != 0 {
				t.Errorf("the command ignores SIGPIPE (SigIgn %s)", strings.TrimSpace(v))
			}
			return
		}
	}
	t.Fatalf("no SigIgn line in %q", r.stdout)
}

// TestTerminationLogNeverBlocks (fault 3): a termination-message file that would block (a FIFO
// nobody reads, a full pipe) or cannot be written (a directory) never holds up sidesync's exit
// or changes its code. Before the fix the FIFO's open blocked forever, past the test's guard.
func TestTerminationLogNeverBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noReader := filepath.Join(dir, "no-reader")
	full := filepath.Join(dir, "full")
	for _, p := range []string{noReader, full} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Hold full's only reader (this test) and fill it, so that a write would block.
	fd, err := syscall.Open(full, syscall.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	chunk := bytes.Repeat([]byte("x"), 4096)
	for {
		if _, err := syscall.Write(fd, chunk); err != nil {
			break
		}
	}
	tests := []struct{ name, path, want string }{
		{"FIFO without a reader", noReader, "a pipe that nobody reads"},
		{"full pipe", full, "a pipe that is full"},
		{"directory", dir, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sidesync(t, nil, "--disabled", "--termination-log", tt.path, "--", bin.testcmd, "exit", "4")
			if r.code != 4 {
				t.Errorf("exit %d, want the command's 4; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "cannot write the termination message", tt.want)
		})
	}
}

// TestBadInterpreter (fault 4): a script whose interpreter is missing exits 127, and the message
// names the interpreter as shells do, not "command not found".
func TestBadInterpreter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/nonexistent/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{script}, {"job.sh"}} {
		r := sidesync(t, []string{"PATH=" + dir + ":" + os.Getenv("PATH")}, append([]string{"--disabled", "--"}, argv...)...)
		if r.code != 127 {
			t.Errorf("%v: exit %d, want 127", argv, r.code)
		}
		mustContain(t, r.stderr, "job.sh: /nonexistent/sh: bad interpreter: no such file or directory")
		if strings.Contains(r.stderr, "command not found") {
			t.Errorf("%v: said command not found:\n%s", argv, r.stderr)
		}
	}
}

// TestRequireSidecar (fault 10): with --require-sidecar, finding no sidecar is fatal: exit 69,
// the command does not run. Without it, a detection that could not look (here: a Kubernetes
// pod without a service-account token) is a warning with the fix, and the command runs.
func TestRequireSidecar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noPodInfo, marker := filepath.Join(dir, "no-podinfo"), filepath.Join(dir, "ran")
	inPod := []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=1"}
	detectArgs := []string{"--pod-info", noPodInfo, "--service-account-dir", dir}

	r := sidesync(t, inPod, append(detectArgs, "--", bin.testcmd, "exit", "5")...)
	if r.code != 5 {
		t.Errorf("without --require-sidecar: exit %d, want the command's 5", r.code)
	}
	mustContain(t, r.stderr, "WARN no sidecar configured or detected, but detection could not look",
		"no service-account token", "automountServiceAccountToken")

	for _, env := range [][]string{inPod, nil} {
		r = sidesync(t, env, append(detectArgs, "--require-sidecar", "--", bin.testcmd, "touch", marker)...)
		if r.code != 69 {
			t.Errorf("--require-sidecar (env %v): exit %d, want 69; stderr:\n%s", env, r.code, r.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran")
		}
		mustContain(t, r.stderr, "--require-sidecar is set: not running the command")
	}
	for _, sub := range []string{"wait", "quit", "check"} {
		if r := sidesync(t, []string{"SIDESYNC_REQUIRE_SIDECAR=true"}, append([]string{sub}, detectArgs...)...); r.code != 69 {
			t.Errorf("sidesync %s with SIDESYNC_REQUIRE_SIDECAR=true: exit %d, want 69", sub, r.code)
		}
	}
}

// TestSubcommandHelp (fault 11): each subcommand prints its own usage; a near-miss of a
// subcommand that is not a program exits 127 with a suggestion.
func TestSubcommandHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"wait", "--help"}, []string{"Usage:\n  sidesync wait [flags]", "only", "69", "--timeout"}},
		{[]string{"quit", "-h"}, []string{"Usage:\n  sidesync quit [flags]", "took the request", "--quit-timeout"}},
		{[]string{"check", "--help"}, []string{"Usage:\n  sidesync check [flags]", "prints a table", "69"}},
		{[]string{"version", "--help"}, []string{"Usage:\n  sidesync version"}},
		{[]string{"help", "wait"}, []string{"Usage:\n  sidesync wait [flags]"}},
	} {
		r := sidesync(t, nil, tt.args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d; stderr:\n%s", tt.args, r.code, r.stderr)
		}
		mustContain(t, r.stdout, tt.want...)
	}
	r := sidesync(t, nil, "verison")
	if r.code != 127 {
		t.Errorf("verison: exit %d, want 127", r.code)
	}
	mustContain(t, r.stderr, `did you mean \"sidesync version\"?`)
	if r := sidesync(t, nil, "help", "wiat"); r.code != 2 || !strings.Contains(r.stderr, `did you mean "sidesync wait"?`) {
		t.Errorf("help wiat: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := sidesync(t, nil, "--disabled", "--", "sidesync-no-such-command"); r.code != 127 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("a command far from any subcommand: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestNoCredentialsInOutput (fault 12): a password in a sidecar URL appears nowhere: not in the
// log (text or JSON, any level), the check table, a usage error or the termination message.
func TestNoCredentialsInOutput(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	admin := "http://user:s3cret@" + e.addr
	termLog := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(termLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []result{
		sidesync(t, nil, "check", "--admin", admin),
		sidesync(t, nil, "--admin", admin, "--log-level", "debug", "--", bin.testcmd, "exit", "0"),
	}
	e.waitExit()
	runs = append(runs,
		sidesync(t, nil, "--admin", admin, "--log-format", "json", "--log-level", "debug", "--timeout", "100ms",
			"--quit-timeout", "300ms", "--termination-log", termLog, "--", bin.testcmd, "exit", "0"),
		sidesync(t, []string{"ENVOY_ADMIN_API=http://u:s3cret@10.0.0.1:15000"}, "--timeout", "100ms", "--", bin.testcmd, "exit", "0"),
		sidesync(t, nil, "--admin", "http://user:s3cret@127.0.0.1:99999", "--", "true"),
		sidesync(t, nil, "--sidecar", "http:ready=http://user:s3cret@127.0.0.1:1/,name=x", "--timeout", "50ms", "--", "true"),
	)
	for i, r := range runs {
		if strings.Contains(r.stdout+r.stderr, "s3cret") {
			t.Errorf("run %d shows the password:\nstdout:\n%s\nstderr:\n%s", i, r.stdout, r.stderr)
		}
	}
	mustContain(t, runs[0].stdout, "http://xxxxx@"+e.addr)
	mustContain(t, runs[1].stderr, "sidecar quit", "url=http://xxxxx@"+e.addr+"/quitquitquit")
	if b, _ := os.ReadFile(termLog); len(b) == 0 || bytes.Contains(b, []byte("s3cret")) {
		t.Errorf("termination message %q", b)
	}
}

// TestQuitUnderLowDescriptorLimit (fault 13): with 16 file descriptors and 50 sidecars to quit,
// every one of them is told to quit within the budget; running out of descriptors is not a
// failed attempt. The sidecars take a while to answer, as a draining proxy does, so the
// descriptors stay busy for longer than the retries of a failed attempt would wait.
func TestQuitUnderLowDescriptorLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := make(map[string]bool)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = true
		mu.Unlock()
		time.Sleep(300 * time.Millisecond) // a slow sidecar, not a synchronisation
		fmt.Fprint(w, "OK\n")
	}))
	defer srv.Close()
	var urls []string
	for i := range 50 {
		urls = append(urls, srv.URL+"/quit/"+strconv.Itoa(i))
	}
	r := runProgram(t, nil, bin.testcmd, "nofile", "16", bin.sidesync, "--quit-url", strings.Join(urls, ","), "--", bin.testcmd, "exit", "0")
	if r.code != 0 {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 50 {
		t.Errorf("%d of 50 sidecars were told to quit; stderr:\n%s", len(got), r.stderr)
	}
	if strings.Contains(r.stderr, "quit failed") {
		t.Errorf("a quit failed:\n%s", r.stderr)
	}
}

// TestCloudSQLQuitOnHealthPort (fault 9): a quit sent to the Cloud SQL proxy's health port gets
// a 404, and the log says where the quit endpoint really is.
func TestCloudSQLQuitOnHealthPort(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "cloudsql")
	r := sidesync(t, nil, "--sidecar", "cloudsql:ready-port="+e.port("http")+",quit-port="+e.port("http"), "--", bin.testcmd, "exit", "0")
	if r.code != 0 {
		t.Errorf("exit %d, want the command's 0", r.code)
	}
	mustContain(t, r.stderr, "sidecar quit failed sidecar=cloudsql", "404", "--admin-port", "--quitquitquit")
}
