//go:build linux

package kubetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EnvNodeRequired, when set to anything but "" or "0", turns a node test's skip (no root, no
// cgroups, a missing binary) into a failure, as EnvRequired does for the API server alone.
const EnvNodeRequired = "SIDESYNC_NODE_REQUIRED"

// The node's addresses and names. Every one of them lives only in the node's own network
// namespace, which has no route out: nothing the node does can send a packet off the machine.
const (
	nodeName      = "sidesync-node"
	nodeIP        = "10.99.0.1" // the node's InternalIP, on lo in its namespace
	nodeServiceIP = "10.0.0.1"  // the kubernetes Service's ClusterIP, on lo too: no kube-proxy needed
	podSubnet     = "10.244.0.0/24"
	// cgroupRootPrefix begins the name of each node's cgroup root, under every hierarchy.
	cgroupRootPrefix = "sidesync-node-"
	serviceRange     = "10.0.0.0/24"
	apiserverPort    = "443" // the kubernetes Service's port: a pod reaches 10.0.0.1:443 as is
	// PauseImage is the sandbox image of every pod, built by the harness and pinned in containerd.
	PauseImage = "sidesync.invalid/pause:1"
)

// nodeReadyTimeout bounds the whole start of a node; nodeStopTimeout, its init's exit after SIGTERM.
const (
	nodeReadyTimeout = 3 * time.Minute
	nodeStopTimeout  = 90 * time.Second
	// nodeRequestTimeout bounds one request to the node's API server.
	nodeRequestTimeout = 2 * time.Minute
)

// nodePrograms are the binaries of BinDir that a node runs, built by .ci/build-kube.sh.
var nodePrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
	"containerd", "containerd-shim-runc-v2", "ctr"}

// Debian's parts: runc, which the shim runs, and the CNI plugins that give pods their network.
const (
	runcPath   = "/usr/sbin/runc"
	cniBinDir  = "/usr/lib/cni"
	cniPlugins = "ptp host-local loopback"
)

// kubeletSysctls are the kernel tunables that the kubelet sets on its machine, with the values
// it wants (k8s.io/kubernetes pkg/kubelet/cm, setupKernelTunables). The node's init covers each
// with a file of that value in the node's own mount namespace.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// nodeTmpfs are the machine's directories that containerd, libcni and the kubelet write to
// whatever they are configured with: the node sees an empty tmpfs there, the machine nothing.
var nodeTmpfs = []string{"/run", "/var/lib", "/var/log"}

// Node is a real single-node Kubernetes: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd with runc, and a kubelet, all in namespaces of their own (mount,
// network, PID, UTS, IPC) made by StartNode. Its API (the embedded Cluster) is reached through
// the node's network namespace.
type Node struct {
	*Cluster
	// Name is the Node object's name.
	Name string

	init      *exec.Cmd
	initDone  chan struct{}
	events    chan string // the init's lines after "started"
	netns     *os.File    // the node's network namespace, held open while it runs
	hostNetns *os.File    // the test process's own
	// nsMu guards netns and hostNetns: inNetns uses them under its read lock, Stop closes
	// them (and sets netns to nil) under its write lock, as a forwarded connection may be
	// dialling while Stop runs.
	nsMu       sync.RWMutex
	initStdin  io.Closer
	pidns      string    // the node's PID namespace, as /proc/PID/ns/pid names it
	pidnsFile  *os.File  // holds it
	lock       *os.File  // the node directory's lock, held while the node lives (nodeleftovers.go)
	forward    forwarder // Kubeconfig's forwarder to the API server, for programs on the machine
	cgroupRoot string    // the kubelet's --cgroup-root, under every hierarchy
	sock       string    // containerd's socket
	bin        string
	before     machineState
	logf       func(string, ...any)

	programs []string // the plan's, in order of start: their logs are NAME.log
}

// NodeUnavailable says why this machine cannot run a node ("" when it can): not root, no
// cgroup hierarchy, a program missing.
func NodeUnavailable() string {
	if os.Geteuid() != 0 {
		return "a node needs root (namespaces, mounts, cgroups)"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
			return "no cgroup hierarchy under /sys/fs/cgroup"
		}
	}
	bin := BinDir()
	for _, p := range nodePrograms {
		if fi, err := os.Stat(filepath.Join(bin, p)); err != nil || fi.Mode()&0o111 == 0 {
			return fmt.Sprintf("no %s in %s: build it with `bash .ci/build-kube.sh` (or set %s)", p, bin, EnvBinDir)
		}
	}
	if _, err := os.Stat(runcPath); err != nil {
		return "no " + runcPath + ": apt-get install runc"
	}
	for _, p := range strings.Fields(cniPlugins) {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			return fmt.Sprintf("no CNI plugin %s in %s: apt-get install containernetworking-plugins", p, cniBinDir)
		}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip command: apt-get install iproute2"
	}
	return ""
}

// NodeRequired reports whether EnvNodeRequired is set.
func NodeRequired() bool {
	r := os.Getenv(EnvNodeRequired)
	return r != "" && r != "0"
}

// StartNode starts a node and returns once its Node is Ready and the default ServiceAccount
// exists. logf gets one line per step. Stop it with Stop, which also checks that nothing of it
// is left on the machine.
func StartNode(logf func(string, ...any)) (*Node, error) {
	return StartNodeWith(NodeOptions{Logf: logf})
}

// NodeOptions are StartNodeWith's.
type NodeOptions struct {
	// Logf gets one line per step.
	Logf func(string, ...any)
	// Prepare, when set, runs while the node starts, with a directory of the node's own that
	// goes with the node (also when the test process is killed): the tests' binaries, say.
	// StartNodeWith returns once both are done.
	Prepare func(ctx context.Context, dir string) error
}

// StartNodeWith is StartNode with options. It first removes what dead nodes left on the
// machine: those whose test process and init were both killed (see nodeleftovers.go).
func StartNodeWith(opts NodeOptions) (n *Node, err error) {
	if why := NodeUnavailable(); why != "" {
		return nil, errors.New(why)
	}
	logf := opts.Logf
	begin := time.Now()
	swept, err := sweepDeadNodes()
	for _, d := range swept {
		logf("kubetest: removed %s and its cgroups, left by a node whose test process and init were killed", d)
	}
	if err != nil {
		logf("kubetest: removing what dead nodes left: %v", err)
	}
	dir, lock, err := makeNodeDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, tokens: map[string]string{}, controllers: true}
	n = &Node{Cluster: c, Name: nodeName, bin: BinDir(), logf: logf, sock: filepath.Join(dir, "containerd.sock"), lock: lock}
	n.before, err = readMachineState()
	if err != nil {
		lock.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := n.Stop(); stopErr != nil {
				logf("kubetest: stopping the node that failed to start: %v", stopErr)
			}
			n = nil
		}
	}()
	if err := c.writeFiles(); err != nil {
		return n, err
	}
	// Named after the directory, and written in its kubelet.yaml before it is made, so that a
	// sweep finds it from the directory.
	n.cgroupRoot = "/" + cgroupRootPrefix + strings.TrimPrefix(filepath.Base(dir), nodeDirPrefix)
	plan, err := n.writeConfig()
	if err != nil {
		return n, err
	}
	if err := makeCgroupRoot(n.cgroupRoot); err != nil {
		return n, err
	}
	prepared, cancel := n.prepare(opts.Prepare)
	defer func() { // before the deferred Stop on failure: Prepare writes in the node's directory
		if err != nil {
			cancel()
		}
		if perr := <-prepared; err == nil && perr != nil {
			err = fmt.Errorf("preparing the tests while the node started: %w", perr)
		}
		cancel()
	}()
	helpers := n.buildHelpers()
	if err := n.startInit(plan); err != nil {
		<-helpers // its files are in the node's directory, which Stop removes
		return n, err
	}
	n.logf("kubetest: node programs started after %s", time.Since(begin).Round(time.Millisecond))

	c.Host, c.Port = nodeServiceIP, apiserverPort
	c.URL = "https://" + net.JoinHostPort("127.0.0.1", apiserverPort)
	c.CAFile = c.path(caCertFile)
	// The test's client dials inside the node's network namespace.
	if c.client, err = newAPIClient(c.CAFile, n.DialContext); err != nil {
		return n, err
	}
	// A node's API server shares 2 cores with the kubelet, containerd and the pods the tests
	// start at once: under CI's load a request took over 30 s (the first MutatingAdmissionPolicy's
	// creation, at load 60), which must not fail the test. Still a bound, never a wait.
	c.client.Timeout = nodeRequestTimeout
	if err := n.importPause(<-helpers); err != nil {
		return n, err
	}
	deadline := begin.Add(nodeReadyTimeout)
	if err := n.waitReady(deadline); err != nil {
		return n, err
	}
	c.Version, _ = c.gitVersion() // only for the log line: "" if it cannot be read
	n.logf("kubetest: node %s Ready, kubelet %s, after %s", n.Name, c.Version, time.Since(begin).Round(time.Millisecond))
	return n, nil
}

// prepare runs f, when not nil, in the node's directory "prepared" while the node starts, and
// sends its outcome.
func (n *Node) prepare(f func(context.Context, string) error) (<-chan error, context.CancelFunc) {
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*nodeReadyTimeout)
	if f == nil {
		done <- nil
		return done, cancel
	}
	go func() {
		dir := n.path("prepared")
		if err := os.Mkdir(dir, 0o755); err != nil {
			done <- err
			return
		}
		done <- f(ctx, dir)
	}()
	return done, cancel
}

// writeConfig writes the node's configuration files and returns the init's plan.
func (n *Node) writeConfig() (string, error) {
	c := n.Cluster
	bin := func(name string) string { return filepath.Join(n.bin, name) }
	for _, d := range []string{"etcd", "containerd/root", "containerd/state", "runc", "kubelet", "pod-logs", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(c.path(d), 0o755); err != nil {
			return "", err
		}
	}
	server := "https://" + net.JoinHostPort("127.0.0.1", apiserverPort)
	files := map[string]string{
		"containerd.toml":            containerdConfig(c.dir, n.sock),
		"cni/net.d/10-node.conflist": cniConfig(c.path("cni/ipam")),
		"kubelet.yaml":               kubeletConfig(n.sock, n.cgroupRoot, c.path("pod-logs")),
		"kubelet.kubeconfig":         kubeconfig(server, c.path(caCertFile), c.tokens[nodeUser]),
		"admin.kubeconfig":           kubeconfig(server, c.path(caCertFile), c.AdminToken),
	}
	for name, data := range files {
		if err := os.WriteFile(c.path(name), []byte(data), 0o600); err != nil {
			return "", err
		}
	}
	path := "PATH=" + n.bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	etcdURL := "http://127.0.0.1:2379"
	apiserver := append([]string{bin("kube-apiserver")}, c.apiserverArgs(etcdURL)...)
	apiserver = setFlags(apiserver, map[string]string{
		"--bind-address":                    "0.0.0.0", // inside the node's namespace only
		"--advertise-address":               nodeIP,
		"--secure-port":                     apiserverPort,
		"--authorization-mode":              "Node,RBAC",
		"--endpoint-reconciler-type":        "lease",
		"--kubelet-preferred-address-types": "InternalIP",
		"--service-cluster-ip-range":        serviceRange,
		"--allow-privileged":                "true",
		// No kube-proxy routes ClusterIPs here: the API server reaches a webhook's Service (an
		// injector installed by its chart) at the Service's endpoints, the pods' IPs.
		"--enable-aggregator-routing": "true",
	})
	admin := c.path("admin.kubeconfig")
	plan := nodePlan{
		Hostname:   nodeName,
		Addrs:      []string{nodeIP + "/32", nodeServiceIP + "/32"},
		Sysctls:    kubeletSysctls,
		Dir:        c.dir,
		CgroupRoot: n.cgroupRoot,
		Tmpfs:      nodeTmpfs,
		Procs: []nodeProc{
			{Name: "etcd", Argv: append([]string{bin("etcd")}, etcdArgs(c.path("etcd"), etcdURL, "http://127.0.0.1:2380")...),
				WaitTCP: "127.0.0.1:2379"},
			{Name: "kube-apiserver", Argv: apiserver, WaitTCP: "127.0.0.1:" + apiserverPort},
			{Name: "containerd", Argv: []string{bin("containerd"), "--config", c.path("containerd.toml")}, WaitFile: n.sock},
			{Name: "kube-controller-manager", Argv: []string{bin("kube-controller-manager"),
				"--kubeconfig=" + admin, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10257",
				"--root-ca-file=" + c.path(caCertFile), "--service-account-private-key-file=" + c.path(saPrivateKeyFile),
				"--use-service-account-credentials=false", "--allocate-node-cidrs=false",
				"--concurrent-job-syncs=5", "--profiling=false"}},
			{Name: "kube-scheduler", Argv: []string{bin("kube-scheduler"),
				"--kubeconfig=" + admin, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10259",
				"--profiling=false"}},
			{Name: "kubelet", Argv: []string{bin("kubelet"),
				"--config=" + c.path("kubelet.yaml"), "--kubeconfig=" + c.path("kubelet.kubeconfig"),
				"--root-dir=" + c.path("kubelet"), "--hostname-override=" + nodeName, "--node-ip=" + nodeIP}},
		},
	}
	for i := range plan.Procs {
		n.programs = append(n.programs, plan.Procs[i].Name)
		plan.Procs[i].Env = []string{path, "HOME=" + c.dir, "TMPDIR=" + c.dir}
		plan.Procs[i].Log = c.path(plan.Procs[i].Name + ".log")
	}
	data, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return "", err
	}
	planPath := c.path("plan.json")
	return planPath, os.WriteFile(planPath, data, 0o600)
}

// setFlags replaces the values of flags in argv, and appends those argv does not have.
func setFlags(argv []string, flags map[string]string) []string {
	out := argv[:0:0]
	seen := map[string]bool{}
	for _, a := range argv {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := flags[name]; ok {
			a, seen[name] = name+"="+v, true
		}
		out = append(out, a)
	}
	for _, name := range sortedKeys(flags) {
		if !seen[name] {
			out = append(out, name+"="+flags[name])
		}
	}
	return out
}

// startInit starts the node's init in new namespaces and waits for its "started".
func (n *Node) startInit(plan string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envNodeInit+"="+plan)
	cmd.Stderr, err = os.Create(n.path("init.log"))
	if err != nil {
		return err
	}
	stdin, err := cmd.StdinPipe() // closed when the test process dies: the init then stops all
	if err != nil {
		return err
	}
	n.initStdin = stdin // held open for the node's life
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.ExtraFiles = []*os.File{n.lock} // lockFD in the init
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// No Pdeathsig: it follows the thread that started the init, which the Go runtime may
		// end. The init stops the node when its stdin closes, which the test process's death does.
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the node's init: %w", err)
	}
	n.init = cmd
	n.initDone = make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = cmd.Wait()
		close(n.initDone)
	}()
	for line := range lines {
		switch {
		case line == "started":
			n.events = lines
			go n.logEvents()
			ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
			if err != nil {
				return err
			}
			n.netns = ns
			// Held open until Stop has looked for leftovers: a freed namespace's number may
			// be reused by another node's pods, and be taken for this one's.
			pidnsPath := fmt.Sprintf("/proc/%d/ns/pid", cmd.Process.Pid)
			if n.pidnsFile, err = os.Open(pidnsPath); err != nil {
				return err
			}
			if n.pidns, err = os.Readlink(pidnsPath); err != nil {
				return err
			}
			n.hostNetns, err = os.Open("/proc/self/ns/net")
			return err
		case strings.HasPrefix(line, "error"):
			return fmt.Errorf("the node's init: %s%s", line, n.logTails())
		}
	}
	return fmt.Errorf("the node's init exited before it started the node%s", n.logTails())
}

// logEvents logs what the init says after start-up: a program of the node that exits.
func (n *Node) logEvents() {
	for line := range n.events {
		n.logf("kubetest: node: %s", line)
	}
}

// logTails returns the last lines of the init's and the programs' logs, for an error message.
func (n *Node) logTails() string {
	var b strings.Builder
	for _, name := range append([]string{"init"}, n.programs...) {
		if tail := lastLines(n.path(name+".log"), 15); tail != "" {
			fmt.Fprintf(&b, "\n--- %s.log:\n%s", name, tail)
		}
	}
	return b.String()
}

// LogTails returns the last lines of each of the node's logs, for a failing test.
func (n *Node) LogTails() string { return n.logTails() }

// DialContext dials inside the node's network namespace: the socket is made on an OS thread
// that has entered it, and stays in it whatever thread then uses it. The thread then goes back
// to the machine's namespace before it is given back to the Go runtime; should that fail, it
// stays locked and the runtime ends it with the goroutine.
func (n *Node) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.inNetns(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens inside the node's network namespace, as DialContext dials there: a webhook
// that the node's API server calls, a server that the node's pods reach at the node's address.
func (n *Node) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.inNetns(func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// inNetns runs f on an OS thread in the node's network namespace.
func (n *Node) inNetns(f func() error) error {
	n.nsMu.RLock()
	defer n.nsMu.RUnlock()
	if n.netns == nil {
		return errors.New("the node's network namespace is gone: the node has stopped")
	}
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(n.netns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("entering the node's network namespace: %w", err)
			return
		}
		err := f()
		if unix.Setns(int(n.hostNetns.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// IP is the node's address, in its own network namespace.
func (n *Node) IP() string { return nodeIP }

// waitReady waits until the API server is ready, the Node is Ready and the default namespace's
// ServiceAccount exists (pods are refused until then).
func (n *Node) waitReady(deadline time.Time) error {
	checks := []struct {
		what string
		ok   func() bool
	}{
		{"kube-apiserver /readyz", func() bool { return n.status(http.MethodGet, "/readyz", n.AdminToken) == http.StatusOK }},
		{"Node " + nodeName + " Ready", n.nodeReady},
		{"the default ServiceAccount", func() bool {
			return n.status(http.MethodGet, "/api/v1/namespaces/default/serviceaccounts/default", n.AdminToken) == http.StatusOK
		}},
	}
	for _, check := range checks {
		for !check.ok() {
			select {
			case <-n.initDone:
				return fmt.Errorf("the node's init exited while waiting for %s%s", check.what, n.logTails())
			case <-time.After(pollInterval):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no %s after %s%s", check.what, nodeReadyTimeout, n.logTails())
			}
		}
	}
	return nil
}

// nodeReady reports whether the Node's Ready condition is True.
func (n *Node) nodeReady() bool {
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	code, body, _, err := n.roundTrip(context.Background(), n.AdminToken, http.MethodGet, "/api/v1/nodes/"+nodeName, nil)
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &node) != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// Stop stops the node: SIGTERM to its init, which stops the kubelet, the control plane and
// containerd and kills every other process of the node's PID namespace; then it removes the
// node's cgroups and directory, and checks that the machine is as StartNode found it.
func (n *Node) Stop() error {
	var errs []error
	begin := time.Now()
	if n.forward.l != nil {
		n.forward.l.Close()
	}
	if n.init != nil && n.init.Process != nil {
		_ = n.init.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.initDone:
		case <-time.After(nodeStopTimeout):
			errs = append(errs, fmt.Errorf("the node's init did not exit within %s of SIGTERM: killed", nodeStopTimeout))
			_ = n.init.Process.Kill()
			<-n.initDone
		}
	}
	if n.client != nil {
		n.client.CloseIdleConnections()
	}
	n.nsMu.Lock()
	if n.netns != nil {
		n.netns.Close()
		n.hostNetns.Close()
		n.netns = nil
	}
	n.nsMu.Unlock()
	// The init removed the node's directory and cgroups once its processes were gone; a node
	// whose init never said "started" has them still.
	if err := n.leftByInit(); err != nil {
		errs = append(errs, err)
	}
	if err := removeNodeLeftovers(n.dir, n.cgroupRoot); err != nil {
		errs = append(errs, err)
	}
	n.lock.Close()
	if err := n.processesLeft(); err != nil {
		errs = append(errs, err)
	}
	if n.pidnsFile != nil {
		n.pidnsFile.Close()
	}
	after, err := readMachineState()
	if err == nil {
		err = n.before.compare(after, n.cgroupRoot)
	}
	if err != nil {
		errs = append(errs, err)
	}
	if n.logf != nil {
		n.logf("kubetest: node stopped in %s", time.Since(begin).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

// leftByInit reports the node's directory or cgroups when its init, which said "started", left
// them.
func (n *Node) leftByInit() error {
	if n.events == nil {
		return nil
	}
	var errs []error
	if _, err := os.Stat(n.dir); err == nil {
		errs = append(errs, fmt.Errorf("the node's init left its directory %s", n.dir))
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, n.cgroupRoot)); err == nil {
			errs = append(errs, fmt.Errorf("the node's init left its cgroup %s", filepath.Join(h, n.cgroupRoot)))
		}
	}
	return errors.Join(errs...)
}

// ctr runs containerd's ctr against the node's containerd, in its "k8s.io" namespace (the CRI's).
func (n *Node) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(n.bin, "ctr"), append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Dir returns the node's directory (its logs are there while it runs).
func (n *Node) Dir() string { return n.dir }

// PodLogs returns the kubelet's log files of a pod's container that are still there, oldest
// first. The kubelet keeps one ended run of a container: when a run restarted in place ends, the
// run before it and its log are removed (its termination message stays in lastState). The files
// go when the pod is deleted.
func (n *Node) PodLogs(namespace, pod, container string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(n.path("pod-logs"), namespace+"_"+pod+"_*", container, "*.log"))
	if err != nil {
		return nil, err
	}
	var logs []string
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		logs = append(logs, string(data))
	}
	return logs, nil
}

// processesLeft reports any process still in the node's PID namespace. Other nodes' processes
// (another test package may run one at the same time) are not this node's concern.
func (n *Node) processesLeft() error {
	if n.pidns == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		ns, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/pid"))
		if err != nil || ns != n.pidns {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		errs = append(errs, fmt.Errorf("process %s (%s) left behind", e.Name(), exe))
	}
	return errors.Join(errs...)
}

// WaitJob waits until the Job has a Complete or Failed condition that is True and returns its
// type, or returns "" once timeout has passed. It waits on the API server's events (WaitList).
func (n *Node) WaitJob(t testing.TB, namespace, name string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cond string
	_ = n.WaitList(ctx, "/apis/batch/v1/namespaces/"+namespace+"/jobs", NameIs(name), func(items []json.RawMessage) bool {
		for _, item := range items {
			var job struct {
				Status struct {
					Conditions []struct{ Type, Status string }
				}
			}
			if json.Unmarshal(item, &job) != nil {
				continue
			}
			for _, c := range job.Status.Conditions {
				if (c.Type == "Complete" || c.Type == "Failed") && c.Status == "True" {
					cond = c.Type
					return true
				}
			}
		}
		return false
	})
	return cond
}
