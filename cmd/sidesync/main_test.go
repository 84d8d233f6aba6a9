package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sidesync/sidesync/internal/pod/child"
	"github.com/sidesync/sidesync/internal/testing/emulator"
)

// The tests run sidesync as a real process, as the os/exec tests do: the test binary re-executes
// itself. It is linked under the names "sidesync", "testcmd" and "sidesync-emulator", and
// TestMain dispatches on argv[0], so that the environment (which sidesync passes on to its
// command) decides nothing. The emulator is linked into this test binary only: the sidesync
// binary itself never links it.
var bin struct {
	sidesync, testcmd, emulator string
}

// guard bounds every wait in these tests; reaching it is a failure, never a synchronisation.
const guard = 20 * time.Second

func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "sidesync":
		os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr))
	case "testcmd":
		exitNow(testCommand(os.Args[1:]))
	case "sidesync-emulator": // sidesync-emulator emulate PROFILE [flags], as cmd/sidesync-emulator
		if len(os.Args) < 2 || os.Args[1] != "emulate" {
			exitNow(2)
		}
		exitNow(emulator.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "sidesync-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	self, err := os.Executable()
	if err == nil {
		bin.sidesync, bin.testcmd, bin.emulator = filepath.Join(dir, "sidesync"), filepath.Join(dir, "testcmd"), filepath.Join(dir, "sidesync-emulator")
		for _, name := range []string{bin.sidesync, bin.testcmd, bin.emulator} {
			if err == nil {
				err = os.Symlink(self, name)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parallelTests(4)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// exitNow ends the test's own helpers, the command and the emulated sidecar, at once. os.Exit(0)
// in a binary built with -race first sleeps a second (the race detector's atexit_sleep_ms), so
// every command that succeeded held its sidesync, and every emulator its test, a second longer:
// minutes over the package. sidesync itself still exits through os.Exit, race checks and all.
func exitNow(code int) {
	unix.Exit(code)
}

// parallelTests runs n tests at once (go test's -parallel) unless -test.parallel was given:
// they spend their time waiting on the processes they start, so the default of one per core
// left the cores idle, and this package's tests took two minutes one after another. The few
// that change the whole process (signals sent to it, the soaks' counts of its children) do not
// call t.Parallel, and so run before the others start.
func parallelTests(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// testCommand is the wrapped command of the tests: testcmd MODE [ARGS...].
func testCommand(args []string) int {
	if len(args) == 0 {
		return 100
	}
	switch args[0] {
	case "exit": // exit N
		n, _ := strconv.Atoi(args[1])
		return n
	case "kill": // kill SIGNUM: die by that signal
		// A Go program ignores some signals (SIGUSR1, ...) by default; a shell does not.
		syscall.Exec("/bin/sh", []string{"sh", "-c", "kill -" + args[1] + " $$"}, os.Environ())
		return 104
	case "print": // print TEXT: write TEXT to stdout, exactly
		os.Stdout.WriteString(args[1])
	case "cat": // copy stdin to stdout
		io.Copy(os.Stdout, os.Stdin)
	case "touch": // touch FILE
		os.WriteFile(args[1], []byte("ran\n"), 0o644)
	case "signals":
		return echoSignals()
	case "group":
		return signalGroup()
	case "orphan":
		return makeOrphan(args[1])
	case "orphan-child":
		return orphanChild(args[1])
	case "write-pid":
		return writeHostPID(args[1])
	case "nofile": // nofile N PROGRAM ARGS...: run PROGRAM with at most N open files, as prlimit --nofile=N
		n, _ := strconv.ParseUint(args[1], 10, 64)
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return 105
		}
		syscall.Exec(args[2], args[2:], os.Environ())
		return 106
	case "ignore-term": // ignore SIGTERM, print "started", then wait for stdin to close
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("started")
		io.Copy(io.Discard, os.Stdin)
	case "block": // print "started", then wait for stdin to close
		fmt.Println("started")
		io.Copy(io.Discard, os.Stdin)
	}
	return 0
}

// echoSignals prints the name of every signal it gets, one per line, until stdin closes. It
// listens for SIGURG and SIGCHLD too, to prove sidesync never forwards them; GODEBUG
// asyncpreemptoff=1 (set by the tests) keeps its own runtime from sending it SIGURG.
func echoSignals() int {
	c := make(chan os.Signal, 32)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGURG, syscall.SIGCHLD)
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	fmt.Printf("ready %d\n", os.Getpid())
	for {
		select {
		case s := <-c:
			fmt.Println(child.SignalName(s.(syscall.Signal)))
		case <-done:
			return 0
		}
	}
}

// signalGroup starts a second echoSignals in its process group, then echoes signals itself.
func signalGroup() int {
	cmd := exec.Command(os.Args[0], "signals")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		return 101
	}
	defer func() { in.Close(); cmd.Wait() }()
	return echoSignals()
}

// makeOrphan leaves behind a grandchild whose parent has exited: it runs orphan-child, which
// starts write-pid and exits at once. The grandchild is re-parented to the nearest subreaper or
// PID 1. makeOrphan then waits for stdin to close.
func makeOrphan(pidFile string) int {
	if err := exec.Command(os.Args[0], "orphan-child", pidFile).Run(); err != nil {
		return 102
	}
	fmt.Println("orphaned")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

func orphanChild(pidFile string) int {
	cmd := exec.Command(os.Args[0], "write-pid", pidFile)
	if err := cmd.Start(); err != nil {
		return 103
	}
	return 0 // without waiting: the grandchild is orphaned
}

// writeHostPID records the process's PID as the test sees it: /proc/self resolves in the PID
// namespace of the /proc mount, the test's, even inside a new PID namespace. Then it exits, to
// become a zombie unless someone reaps it.
func writeHostPID(pidFile string) int {
	self, _ := os.Readlink("/proc/self")
	tmp := pidFile + ".tmp"
	os.WriteFile(tmp, []byte(self), 0o644)
	os.Rename(tmp, pidFile)
	return 0
}

// result is a finished sidesync run.
type result struct {
	code           int
	stdout, stderr string
}

// sidesync runs sidesync with args and extra environment variables, and waits for it.
func sidesync(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runProgram(t, env, bin.sidesync, args...)
}

// runProgram runs a program that runs sidesync, and waits for it.
func runProgram(t *testing.T, env []string, program string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = testEnv(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// At the guard, SIGABRT, which sidesync does not catch: the Go runtime prints every
	// goroutine's stack, so a hang says where it hung.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGABRT) }
	// A stray grandchild holding the pipes must not hang the test; the delay is long enough for
	// a starved reader to drain what sidesync wrote.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sidesync %q did not finish within %v; stderr (ending with its stacks):\n%s", args, guard, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("sidesync %q exited, but something held its output open %v longer", args, cmd.WaitDelay)
	} else if err != nil {
		t.Fatalf("sidesync %q: %v", args, err)
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("data race in sidesync %q:\n%s", args, stderr.String())
	}
	return result{code, stdout.String(), stderr.String()}
}

// testEnv is the environment of a sidesync under test: no variable of any contract leaks in
// from the machine, the termination log goes nowhere, and testcmd's runtime sends itself no
// SIGURG.
func testEnv(extra []string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "GODEBUG=asyncpreemptoff=1", "SIDESYNC_TERMINATION_LOG=",
		// Under -race every process sleeps 1s at exit by default; reports are not lost without it.
		"GORACE=atexit_sleep_ms=0 " + os.Getenv("GORACE")}
	return append(env, extra...)
}

// lines reads stream line by line into a channel, closed at EOF.
func lines(r io.Reader) <-chan string {
	c := make(chan string, 1024)
	go func() {
		defer close(c)
		s := bufio.NewScanner(r)
		for s.Scan() {
			c <- s.Text()
		}
	}()
	return c
}

// next returns the next line from c, failing the test at the guard or EOF.
func next(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-c:
		if !ok {
			t.Fatalf("EOF while waiting for %s", what)
		}
		return l
	case <-time.After(guard):
		t.Fatalf("no %s within %v", what, guard)
	}
	return ""
}

// mustContain fails unless s contains every one of subs.
func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("output does not contain %q:\n%s", sub, s)
		}
	}
}

// writeServiceAccount writes what Kubernetes mounts into a pod for its service account (token,
// ca.crt in PEM, namespace) into a new directory, and returns it.
func writeServiceAccount(t *testing.T, caPEM []byte, token, namespace string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string][]byte{"token": []byte(token), "ca.crt": caPEM, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
