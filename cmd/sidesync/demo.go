package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/child"
	"github.com/sidesync/sidesync/internal/emulator"
	"github.com/sidesync/sidesync/sidecar"
)

// demoReadyAfter is how long the demo's emulated Envoy stays PRE_INITIALIZING/INITIALIZING.
const demoReadyAfter = 1500 * time.Millisecond

// demo runs the whole job end to end on loopback: it starts sidesync's emulated Envoy as a real
// process, waits for it with the configured policy, runs a small command, tells the emulator to
// quit and watches it exit, printing a timeline. Flags such as --backoff polly --interval 1s
// show how another policy behaves.
func (a *app) demo() int {
	a.listen()
	defer signal.Stop(a.sigs)
	a.startReaper()
	defer a.reaper.Close()
	self, err := os.Executable()
	if err != nil {
		a.log.Error("cannot find sidesync's own executable", "err", err)
		return exitSoftware
	}
	em, addr, err := a.startEmulator(self)
	if err != nil {
		a.log.Error("cannot start the emulated Envoy", "err", err)
		return exitSoftware
	}
	a.cfg.Disabled, a.cfg.Detect, a.cfg.Wait, a.cfg.TerminationLog = false, false, true, ""
	a.cfg.Sidecars = []sidecar.Sidecar{emulatedEnvoy("http://" + addr)}
	a.cfg.Command = []string{self, "demo-job"}
	code := a.lifecycle()
	a.awaitEmulator(em)
	a.finish(code)
	return code
}

// emulatedEnvoy is the demo's sidecar: an Envoy admin at admin.
func emulatedEnvoy(admin string) sidecar.Sidecar {
	q := sidecar.EnvoyQuit(admin)
	return sidecar.Sidecar{Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: admin}, Quit: &q}
}

// startEmulator starts "sidesync emulate envoy" and returns it with its address once known;
// its events are then relayed into the timeline.
func (a *app) startEmulator(self string) (*child.Process, string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	defer w.Close()
	argv := []string{self, "emulate", "envoy", "--ready-after", demoReadyAfter.String()}
	em, err := a.reaper.Start(argv, child.Options{Stdout: w, Stderr: a.stderr, NewGroup: true})
	if err != nil {
		r.Close()
		return nil, "", err
	}
	a.log.Info(fmt.Sprintf("started an emulated Envoy that turns LIVE after %v", demoReadyAfter), "pid", em.Pid)
	events := bufio.NewScanner(r)
	for events.Scan() {
		if ev, err := emulator.ParseEvent(events.Text()); err == nil && ev.Name == "address" {
			go a.relay(events, r)
			return em, ev.Get("addr"), nil
		}
	}
	r.Close()
	_ = em.Signal(syscall.SIGKILL, false)
	<-em.Done()
	return nil, "", fmt.Errorf("the emulator ended before telling its address")
}

// relay logs the emulator's interesting events: state changes, the quit request, its exit.
func (a *app) relay(events *bufio.Scanner, r io.Closer) {
	defer r.Close()
	for events.Scan() {
		e, err := emulator.ParseEvent(events.Text())
		if err != nil {
			continue
		}
		ev, f := e.Name, e.Fields
		switch {
		case ev == "state":
			a.log.Info("envoy: state " + f["state"])
		case ev == "listening":
			a.log.Info("envoy: admin listening on " + f["addr"])
		case ev == "request" && f["path"] == "/quitquitquit":
			a.log.Info(fmt.Sprintf("envoy: got %s %s, answered %s", f["method"], f["path"], f["status"]))
		case ev == "exit":
			a.log.Info("envoy: exiting with code " + f["code"])
		}
	}
}

// awaitEmulator waits for the emulator to exit after its quit, killing it if it does not.
func (a *app) awaitEmulator(em *child.Process) {
	select {
	case st := <-em.Done():
		a.log.Info("emulated Envoy "+st.String(), "exit", st.ExitCode())
	case <-time.After(5 * time.Second):
		a.log.Warn("emulated Envoy still running; killing it")
		_ = em.Signal(syscall.SIGKILL, false)
		<-em.Done()
	}
}

// demoJob is the demo's command: it stands for the real job.
func demoJob(stdout io.Writer) int {
	fmt.Fprintln(stdout, "hello from the job: the sidecar is ready, doing the work")
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(stdout, "job done")
	return 0
}
