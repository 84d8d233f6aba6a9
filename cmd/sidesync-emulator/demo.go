package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/testing/emulator"
	"github.com/sidesync/sidesync/internal/testing/emuproc"
)

// demoOptions are the demo's own flags; every other argument goes to sidesync.
type demoOptions struct {
	sidesync     string        // the sidesync binary; "" builds one from this checkout
	readyAfter   time.Duration // how long the emulated Envoy takes to turn LIVE
	sidesyncArgs []string
}

// demo runs sidesync's main job end to end, as processes on loopback: an emulated Envoy (this
// program, "emulate envoy"), and the real sidesync binary waiting for it, running a small job
// (this program, "demo-job"), and telling it to quit. It prints one timeline of what both did.
// SIGINT or SIGTERM stops it at any point (the build, the wait, the job), sidesync being told
// the signal as Kubernetes would tell it, and it exits 128+N; the binary it built is removed
// however it ends.
func demo(args []string, stdout, stderr io.Writer) int {
	o, err := parseDemoArgs(args)
	if err == errHelp {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sidesync-emulator demo: %v\n", err)
		return 2
	}
	ctx, stop := onStopSignal()
	defer stop()
	tl := &timeline{w: stderr, start: time.Now()}
	code := demoRun(ctx, tl, o, stdout)
	if sig, ok := stopSignal(ctx); ok {
		tl.say(time.Now(), "stopped by signal %d (%v)", int(sig), sig)
		return 128 + int(sig)
	}
	return code
}

// demoRun builds sidesync unless given one, starts the emulated Envoy and runs sidesync against
// it; it returns sidesync's exit code, or 1 when the demo could not run.
func demoRun(ctx context.Context, tl *timeline, o demoOptions, stdout io.Writer) int {
	self, err := os.Executable()
	if err == nil && o.sidesync == "" {
		var dir string
		if dir, err = os.MkdirTemp("", "sidesync-demo-"); err == nil {
			defer os.RemoveAll(dir)
			o.sidesync, err = buildSidesync(ctx, tl, dir)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			tl.say(time.Now(), "cannot run the demo: %v", err)
		}
		return 1
	}
	em, err := startEnvoy(ctx, tl, self, o.readyAfter)
	if err != nil {
		if ctx.Err() == nil {
			tl.say(time.Now(), "cannot start the emulated Envoy: %v", err)
		}
		return 1
	}
	code := runSidesync(ctx, tl, o, "http://"+em.Addr(), self, stdout)
	awaitEnvoy(tl, em)
	return code
}

var errHelp = fmt.Errorf("help requested")

// parseDemoArgs takes --sidesync and --ready-after, and leaves the rest for sidesync.
func parseDemoArgs(args []string) (demoOptions, error) {
	o := demoOptions{readyAfter: 1500 * time.Millisecond}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		switch name {
		case "-h", "-help", "--help":
			return o, errHelp
		case "--sidesync", "--ready-after":
		default:
			o.sidesyncArgs = append(o.sidesyncArgs, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return o, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if name == "--sidesync" {
			o.sidesync = value
			continue
		}
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return o, fmt.Errorf("--ready-after %q: not a duration (like 1.5s)", value)
		}
		o.readyAfter = d
	}
	return o, nil
}

// buildSidesync builds cmd/sidesync from the checkout the demo runs in, as a release is built
// (static), into dir: the demo shows the real binary at work. It says so first: from a cold
// cache the build takes a minute or two. A stop signal interrupts the build, which then removes
// its own work directory (SIGINT is the signal the go command cleans up after).
func buildSidesync(ctx context.Context, tl *timeline, dir string) (string, error) {
	const pkg = "github.com/sidesync/sidesync/cmd/sidesync"
	bin := filepath.Join(dir, "sidesync")
	started := time.Now()
	tl.say(started, "building sidesync from this checkout: CGO_ENABLED=0 go build -trimpath ./cmd/sidesync (a minute or two from a cold cache)")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("building sidesync (run this from a checkout of sidesync, or give --sidesync PATH): %v\n%s", err, out)
	}
	tl.say(time.Now(), "built sidesync from this checkout in %v", time.Since(started).Round(time.Millisecond))
	return bin, nil
}

// startEnvoy starts "emulate envoy" and relays its interesting events into the timeline.
func startEnvoy(ctx context.Context, tl *timeline, self string, readyAfter time.Duration) (*emuproc.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	argv := []string{self, "emulate", "envoy", "--ready-after", readyAfter.String()}
	em, err := emuproc.Start(ctx, argv, emuproc.Options{Stderr: os.Stderr, OnEvent: func(ev emulator.Event) {
		if msg := describeEvent(ev); msg != "" {
			tl.say(ev.Time, "envoy: %s", msg)
		}
	}})
	if err != nil {
		return nil, err
	}
	tl.say(time.Now(), "started an emulated Envoy that turns LIVE after %v pid=%d", readyAfter, em.Pid())
	return em, nil
}

// describeEvent says what an emulator event means for the demo, or "" to leave it out.
func describeEvent(ev emulator.Event) string {
	switch {
	case ev.Name == "state":
		return "state " + ev.Get("state")
	case ev.Name == "listening":
		return "admin listening on " + ev.Get("addr")
	case ev.Name == "request" && ev.Get("path") == "/quitquitquit":
		return fmt.Sprintf("got %s %s, answered %s", ev.Get("method"), ev.Get("path"), ev.Get("status"))
	case ev.Name == "exit":
		return "exiting with code " + ev.Get("code")
	}
	return ""
}

// runSidesync runs sidesync against the emulated Envoy at admin with the demo's job, turning its
// JSON log into timeline lines, and returns its exit code. A stop signal is passed on to
// sidesync, which stops waiting or passes it to the job, and tells the Envoy to quit.
func runSidesync(ctx context.Context, tl *timeline, o demoOptions, admin, self string, stdout io.Writer) int {
	args := append([]string{"--admin", admin, "--log-format", "json", "--termination-log="}, o.sidesyncArgs...)
	args = append(args, "--", self, "demo-job")
	cmd := exec.CommandContext(ctx, o.sidesync, args...)
	cmd.Cancel = func() error {
		sig, _ := stopSignal(ctx)
		return cmd.Process.Signal(sig)
	}
	cmd.WaitDelay = 15 * time.Second // sidesync's whole quit phase is bounded by 10 s
	cmd.Stdout = stdout
	logs, err := cmd.StderrPipe()
	if err != nil {
		tl.say(time.Now(), "cannot run sidesync: %v", err)
		return 1
	}
	shown := append([]string{"sidesync"}, args...)
	shown[len(shown)-2] = filepath.Base(self) // the job: this program, wherever go run built it
	tl.say(time.Now(), "running %s", strings.Join(shown, " "))
	if err := cmd.Start(); err != nil {
		tl.say(time.Now(), "cannot run sidesync: %v", err)
		return 1
	}
	relayLog(tl, logs) // until sidesync and its job have exited
	cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	tl.say(time.Now(), "sidesync exited %d", code)
	return code
}

// awaitEnvoy waits for the emulated Envoy to exit after its quit, killing it if it does not.
func awaitEnvoy(tl *timeline, em *emuproc.Process) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, err := em.Wait(ctx)
	if err != nil {
		tl.say(time.Now(), "emulated Envoy still running; killing it")
		em.Kill()
		return
	}
	tl.say(time.Now(), "emulated Envoy exited %s", strconv.Itoa(code))
}

// demoJob is the demo's command: it stands for the real job.
func demoJob(stdout io.Writer) int {
	fmt.Fprintln(stdout, "hello from the job: the sidecar is ready, doing the work")
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(stdout, "job done")
	return 0
}
