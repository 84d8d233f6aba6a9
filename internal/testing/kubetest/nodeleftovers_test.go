//go:build linux

package kubetest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// envKilledChild makes TestNodeKilled, run again in a child process, start the node that its
// parent kills.
const envKilledChild = "SIDESYNC_KUBETEST_KILLED_CHILD"

// killedNode is what the child says of its node: "node DIR CGROUP-ROOT INIT-PID".
type killedNode struct {
	dir, cgroupRoot string
	initPID         int
}

// TestNodeKilled starts a node in a child process (the test binary run again, as go test runs
// it), checks that a sweep leaves the live node alone, then SIGKILLs the child, as go test's
// timeout or a CI runner does: the node's init, whose stdin closes, stops the node and removes
// its directory and cgroups. Once the init has exited (its pidfd says so), nothing of the node is
// left: no directory, cgroup, process, mount, interface or changed sysctl.
func TestNodeKilled(t *testing.T) {
	if os.Getenv(envKilledChild) == "1" {
		runKilledChild()
		return
	}
	if why := NodeUnavailable(); why != "" {
		if NodeRequired() {
			t.Fatalf("kubetest: %s; %s is set, so this is a failure", why, EnvNodeRequired)
		}
		t.Skip("kubetest: " + why)
	}
	before, err := readMachineState()
	if err != nil {
		t.Fatal(err)
	}
	// The init, orphaned when its test process dies, comes to this process to be reaped, as it
	// would come to the machine's init; so its exit is seen, and no zombie taken for a leftover.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	child := exec.Command(os.Args[0], "-test.run=^TestNodeKilled$", "-test.v")
	child.Env = append(os.Environ(), envKilledChild+"=1")
	child.Stderr = os.Stderr // the node's log lines, under this test's
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	node, err := readKilledNode(stdout)
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the child's node: %v", err)
	}
	t.Logf("the child's node: %+v", node)
	pidfd, err := unix.PidfdOpen(node.initPID, 0)
	if err != nil {
		t.Fatalf("pidfd of the node's init: %v", err)
	}
	defer unix.Close(pidfd)
	pidns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", node.initPID))
	if err != nil {
		t.Fatal(err)
	}
	// Held until the end, so that the namespace's number is not reused by another's.
	pidnsFile, err := os.Open(fmt.Sprintf("/proc/%d/ns/pid", node.initPID))
	if err != nil {
		t.Fatal(err)
	}
	defer pidnsFile.Close()

	// A live node is not swept.
	swept, err := sweepDeadNodes()
	if err != nil {
		t.Errorf("sweep: %v", err)
	}
	for _, d := range swept {
		if d == node.dir {
			t.Fatalf("the sweep removed the live node's directory %s", d)
		}
	}
	if _, err := os.Stat(filepath.Join(node.dir, lockFile)); err != nil {
		t.Fatalf("the live node's lock: %v", err)
	}

	begin := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if err := waitPidfd(pidfd, nodeStopTimeout); err != nil {
		t.Fatalf("the node's init after its test process was killed: %v", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(node.initPID, &ws, 0, nil); err != nil {
		t.Fatalf("reaping the node's init: %v", err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("the node's init ended with status %#x, want exit 0 (it removed the node)", int(ws))
	}
	t.Logf("the node's init exited %s after its test process was killed", time.Since(begin).Round(time.Millisecond))

	if _, err := os.Stat(node.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the node's directory %s is left (%v)", node.dir, err)
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, node.cgroupRoot)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the node's cgroup %s is left (%v)", filepath.Join(h, node.cgroupRoot), err)
		}
	}
	if err := (&Node{pidns: pidns}).processesLeft(); err != nil {
		t.Error(err)
	}
	after, err := readMachineState()
	if err != nil {
		t.Fatal(err)
	}
	if err := before.compare(after, node.cgroupRoot); err != nil {
		t.Errorf("the killed node left: %v", err)
	}
}

// runKilledChild is the child of TestNodeKilled: it starts a node, says where it is, and waits
// to be killed.
func runKilledChild() {
	n, err := StartNode(func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) })
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("node %s %s %d\n", n.dir, n.cgroupRoot, n.init.Process.Pid)
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until killed: the parent never closes it first
	os.Exit(1)
}

// readKilledNode reads the child's line about its node.
func readKilledNode(stdout interface{ Read([]byte) (int, error) }) (killedNode, error) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "node":
			if len(f) != 4 {
				return killedNode{}, fmt.Errorf("a line %q", sc.Text())
			}
			pid, err := strconv.Atoi(f[3])
			return killedNode{dir: f[1], cgroupRoot: f[2], initPID: pid}, err
		case "error":
			return killedNode{}, errors.New(sc.Text())
		}
	}
	return killedNode{}, fmt.Errorf("the child exited without starting a node: %v", sc.Err())
}

// waitPidfd waits until the process of pidfd has exited, or fails after timeout.
func waitPidfd(pidfd int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("still running after %s", timeout)
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// TestSweepDeadNodes: a sweep removes a node directory whose lock nobody holds, with the cgroup
// root its kubelet.yaml names (and the cgroups under it), and leaves alone a directory whose lock
// is held and one still being made (no lock file yet).
func TestSweepDeadNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	dead, deadLock, err := makeNodeDir()
	if err != nil {
		t.Fatal(err)
	}
	deadLock.Close() // its test process and init are gone
	root := "/" + cgroupRootPrefix + strings.TrimPrefix(filepath.Base(dead), nodeDirPrefix)
	if err := os.WriteFile(filepath.Join(dead, "kubelet.yaml"), []byte("cgroupDriver: cgroupfs\ncgroupRoot: "+root+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := makeCgroupRoot(root); err != nil {
		t.Fatal(err)
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(hs[0], root, "kubepods"), 0o755); err != nil {
		t.Fatal(err)
	}
	live, liveLock, err := makeNodeDir()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		liveLock.Close()
		os.RemoveAll(live)
	}()
	starting, err := os.MkdirTemp("", nodeDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(starting)

	swept, err := sweepDeadNodes()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(swept, dead) {
		t.Errorf("swept %v, want %s among them", swept, dead)
	}
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead node's directory is left (%v)", err)
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, root)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the dead node's cgroup %s is left (%v)", filepath.Join(h, root), err)
		}
	}
	for _, d := range []string{live, starting} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a live node's directory %s: %v", d, err)
		}
	}
}
