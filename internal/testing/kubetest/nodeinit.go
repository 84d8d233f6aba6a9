//go:build linux

package kubetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// envNodeInit, set to the path of a nodePlan, makes a binary that links this package run as the
// node's init (the first process of the node's namespaces) instead of its main or its tests.
// StartNode re-executes the test binary with it: the init must be a single-threaded process to
// set up a mount namespace, and a new process is the only way to get one from Go.
const envNodeInit = "SIDESYNC_KUBETEST_NODE_INIT"

func init() {
	if plan := os.Getenv(envNodeInit); plan != "" {
		os.Exit(runNodeInit(plan))
	}
}

// nodePlan is what the init sets up and starts, written as JSON by StartNode.
type nodePlan struct {
	Hostname string   // the UTS namespace's
	Addrs    []string // CIDRs put on lo: the node's address, the kubernetes Service's ClusterIP
	// Sysctls are the files under /proc/sys that the kubelet sets on the machine (its kernel
	// tunables), each with the value it wants: the init bind-mounts a file with that value over
	// each, in the node's mount namespace only, so the kubelet finds them set and the machine's
	// stay as they are.
	Sysctls map[string]string
	Dir     string // the node's directory: the sysctl files go there; removed when the node stops
	// CgroupRoot is the kubelet's cgroup root, removed in every hierarchy when the node stops.
	CgroupRoot string
	Tmpfs      []string // directories given an empty tmpfs in the node's mount namespace
	Procs      []nodeProc
}

// nodeProc is one program of the node.
type nodeProc struct {
	Name string
	Argv []string
	Env  []string
	Log  string
	// WaitTCP, when set, is an address that must accept a connection before the next program
	// starts; WaitFile, a path that must exist.
	WaitTCP, WaitFile string
}

// initStartTimeout bounds the init's wait for one program to be ready; initStopTimeout, its wait
// for one program to exit after SIGTERM.
const (
	initStartTimeout = 60 * time.Second
	initStopTimeout  = 10 * time.Second
)

// A program that exits once the node has started is started again, as the kubelet restarts a
// control plane's static pods: kube-controller-manager, for one, exits when the API server is
// not healthy within its own wait, which a starved CPU can stretch. At most initRestarts times
// each, initRestartDelay after the exit; then its exit is final.
const (
	initRestarts     = 5
	initRestartDelay = time.Second
)

// lockFD is the descriptor of the node directory's lock, which StartNode passes to the init
// (exec.Cmd's first ExtraFiles): held while the init runs, it tells a sweep that the node lives.
const lockFD = 3

// runNodeInit is the node's init: PID 1 of its PID namespace, in new mount, network, UTS and IPC
// namespaces (StartNode's clone flags). It prepares the namespaces, starts the programs in
// order, says "started" on stdout, then reaps every process of the namespace until SIGTERM or
// until stdin closes (the test process died): it then stops the programs in reverse order, kills
// whatever is left, and once the namespace is empty removes the node's cgroup root and directory,
// so that a test process killed without a chance to call Stop leaves nothing either. When it
// exits, every mount made here dies with the mount namespace.
func runNodeInit(planPath string) int {
	syscall.CloseOnExec(lockFD) // held by the init alone, not by the programs it starts
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, a ...any) {
		fmt.Fprintf(out, format+"\n", a...)
		out.Flush()
	}
	data, err := os.ReadFile(planPath)
	var plan nodePlan
	if err == nil {
		err = json.Unmarshal(data, &plan)
	}
	if err == nil {
		err = setUpNamespaces(&plan)
	}
	if err != nil {
		say("error %v", err)
		return 1
	}

	// Signals first, so that a SIGTERM during start-up is not lost. Once the test process has
	// died, a line on stdout finds no reader: the write's SIGPIPE, caught (not ignored, which
	// the programs would inherit), leaves it an error instead of killing the init before it
	// removed the node.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		close(stdinClosed)
	}()

	running := map[int]string{} // pid → name, of the plan's programs
	var order []*os.Process
	exited := make(chan struct{ pid, status int }, 64)
	go reapAll(exited)

	for _, p := range plan.Procs {
		proc, err := startNodeProc(p)
		if err != nil {
			say("error starting %s: %v", p.Name, err)
			stopAll(order, running, exited)
			return 1
		}
		running[proc.Pid] = p.Name
		order = append(order, proc)
		if err := waitNodeProc(p, proc.Pid, exited, running); err != nil {
			say("error %s: %v", p.Name, err)
			stopAll(order, running, exited)
			return 1
		}
	}
	say("started")
	restarts := map[string]int{}
	for stop := false; !stop; {
		select {
		case e := <-exited:
			name, ok := running[e.pid]
			if !ok {
				continue
			}
			delete(running, e.pid)
			i := slices.IndexFunc(order, func(p *os.Process) bool { return p.Pid == e.pid })
			if restarts[name] == initRestarts {
				say("exited %s %s", name, waitStatus(e.status))
				continue
			}
			restarts[name]++
			time.Sleep(initRestartDelay) // a SIGTERM meanwhile waits in term
			proc, err := startNodeProc(plan.Procs[i])
			if err != nil {
				say("exited %s %s; restarting it: %v", name, waitStatus(e.status), err)
				continue
			}
			running[proc.Pid] = name
			order[i] = proc
			say("restarted %s after %s (%d of %d)", name, waitStatus(e.status), restarts[name], initRestarts)
		case <-term:
			stop = true
		case <-stdinClosed:
			stop = true
		}
	}
	say("stopping") // to nobody when the test process died: the write must not kill the init
	stopAll(order, running, exited)
	if err := removeWhenAlone(plan); err != nil {
		say("error removing the node: %v", err)
		return 1
	}
	return 0
}

// removeWhenAlone waits until the init is the last process of its PID namespace (stopAll has
// killed the others; reapAll reaps them), then removes the node's cgroup root, whatever is
// mounted under its directory, and the directory.
func removeWhenAlone(plan nodePlan) error {
	deadline := time.Now().Add(initStopTimeout)
	for {
		procs, err := os.ReadDir("/proc") // the namespace's own /proc, mounted by setUpNamespaces
		if err != nil {
			return err
		}
		others := 0
		for _, p := range procs {
			if p.Name() != "1" && strings.Trim(p.Name(), "0123456789") == "" {
				others++
			}
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes left %s after SIGKILL", others, initStopTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling /proc for the last exit, bounded by the deadline
	}
	return removeNodeLeftovers(plan.Dir, plan.CgroupRoot)
}

// setUpNamespaces makes the node's mounts private to it, gives it its own /proc, the kubelet's
// sysctls, its tmpfs directories, its hostname and its addresses.
func setUpNamespaces(plan *nodePlan) error {
	// Nothing mounted here may reach the machine's mount namespace: private first, then shared
	// again inside (the kubelet wants shared mounts for its volumes' mount propagation).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	for key, value := range plan.Sysctls {
		file := filepath.Join(plan.Dir, "sysctl-"+strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(file, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		if err := unix.Mount(file, filepath.Join("/proc/sys", key), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering /proc/sys/%s: %w", key, err)
		}
	}
	for _, dir := range plan.Tmpfs {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making / shared inside: %w", err)
	}
	if err := unix.Sethostname([]byte(plan.Hostname)); err != nil {
		return fmt.Errorf("setting the hostname: %w", err)
	}
	ip := [][]string{{"link", "set", "lo", "up"}}
	for _, a := range plan.Addrs {
		ip = append(ip, []string{"addr", "add", a, "dev", "lo"})
	}
	for _, args := range ip {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// startNodeProc starts one program, its output going to its log.
func startNodeProc(p nodeProc) (*os.Process, error) {
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	return os.StartProcess(p.Argv[0], p.Argv, &os.ProcAttr{
		Env:   p.Env,
		Files: []*os.File{null, logf, logf},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
}

// waitNodeProc waits until p is ready, as its plan says, or has exited.
func waitNodeProc(p nodeProc, pid int, exited chan struct{ pid, status int }, running map[int]string) error {
	if p.WaitTCP == "" && p.WaitFile == "" {
		return nil
	}
	deadline := time.Now().Add(initStartTimeout)
	for time.Now().Before(deadline) {
		if p.WaitTCP != "" {
			if c, err := net.DialTimeout("tcp", p.WaitTCP, time.Second); err == nil {
				c.Close()
				return nil
			}
		} else if _, err := os.Stat(p.WaitFile); err == nil {
			return nil
		}
		select {
		case e := <-exited:
			if name, ok := running[e.pid]; ok {
				delete(running, e.pid)
				return fmt.Errorf("%s exited (%s) before it was ready", name, waitStatus(e.status))
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %s", initStartTimeout)
}

// reapAll waits for every child, the programs and the orphans that the PID namespace gives its
// init, and reports each.
func reapAll(exited chan<- struct{ pid, status int }) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: nothing to wait for yet
			time.Sleep(20 * time.Millisecond)
			continue
		}
		exited <- struct{ pid, status int }{pid, int(ws)}
	}
}

// stopAll stops the programs in reverse order of start, each with SIGTERM and then SIGKILL, and
// then kills every other process of the PID namespace.
func stopAll(order []*os.Process, running map[int]string, exited <-chan struct{ pid, status int }) {
	for i := len(order) - 1; i >= 0; i-- {
		p := order[i]
		if _, ok := running[p.Pid]; !ok {
			continue
		}
		_ = p.Signal(syscall.SIGTERM)
		timeout := time.After(initStopTimeout)
	wait:
		for {
			select {
			case e := <-exited:
				delete(running, e.pid)
				if e.pid == p.Pid {
					break wait
				}
			case <-timeout:
				_ = p.Kill()
				timeout = nil
			}
		}
	}
	_ = unix.Kill(-1, unix.SIGKILL) // PID 1 of the namespace: everything but itself
}

// waitStatus describes a wait status as the kernel gave it.
func waitStatus(status int) string {
	ws := unix.WaitStatus(status)
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("status %#x", status)
}
