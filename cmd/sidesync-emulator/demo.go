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
	tl := &timeline{w: stderr, start: time.Now()}
	self, err := os.Executable()
	if err == nil && o.sidesync == "" {
		o.sidesync, err = buildSidesync(tl)
	}
	if err != nil {
		tl.say(time.Now(), "cannot run the demo: %v", err)
		return 1
	}
	em, err := startEnvoy(tl, self, o.readyAfter)
	if err != nil {
		tl.say(time.Now(), "cannot start the emulated Envoy: %v", err)
		return 1
	}
	code := runSidesync(tl, o, "http://"+em.Addr(), self, stdout)
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
// (static), into a temporary directory: the demo shows the real binary at work.
func buildSidesync(tl *timeline) (string, error) {
	dir, err := os.MkdirTemp("", "sidesync-demo-")
	if err != nil {
		return "", err
	}
	bin := dir + "/sidesync"
	started := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/sidesync/sidesync/cmd/sidesync")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sidesync (run this from a checkout of sidesync, or give --sidesync PATH): %v\n%s", err, out)
	}
	tl.say(time.Now(), "built sidesync from this checkout in %v", time.Since(started).Round(time.Millisecond))
	return bin, nil
}

// startEnvoy starts "emulate envoy" and relays its interesting events into the timeline.
func startEnvoy(tl *timeline, self string, readyAfter time.Duration) (*emuproc.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
// JSON log into timeline lines, and returns its exit code.
func runSidesync(tl *timeline, o demoOptions, admin, self string, stdout io.Writer) int {
	args := append([]string{"--admin", admin, "--log-format", "json", "--termination-log="}, o.sidesyncArgs...)
	args = append(args, "--", self, "demo-job")
	cmd := exec.Command(o.sidesync, args...)
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
