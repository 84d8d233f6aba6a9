//go:build linux

package kubetest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTestNode starts a node for one test, or skips (fails, with EnvNodeRequired) where the
// machine cannot run one.
func startTestNode(t *testing.T) *Node {
	t.Helper()
	if why := NodeUnavailable(); why != "" {
		if NodeRequired() {
			t.Fatalf("kubetest: %s; %s is set, so this is a failure", why, EnvNodeRequired)
		}
		t.Skip("kubetest: " + why)
	}
	n, err := StartNode(t.Logf)
	if err != nil {
		t.Fatalf("kubetest: starting a node: %v", err)
	}
	return n
}

// TestNode runs a Job to completion on a real node in a namespace that enforces Pod Security
// "restricted", checks that the node's network namespace has no route out, then stops the node
// and checks that it left nothing on the machine: no mount, cgroup, process, interface, changed
// sysctl or default directory of containerd or the kubelet.
func TestNode(t *testing.T) {
	n := startTestNode(t)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := n.Stop(); err != nil {
				t.Error(err)
			}
		}
	})

	// The network rule: the node's namespace has no default route, IPv4 or IPv6.
	for _, f := range []string{"net/route", "net/ipv6_route"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", n.init.Process.Pid, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if f == "net/route" && len(fields) > 7 && fields[1] == "00000000" && fields[7] == "00000000" {
				t.Errorf("the node's namespace has a default route: %s", line)
			}
			const rtfReject = 0x0200 // the kernel's "unreachable" entry for ::/0 is no route
			if f == "net/ipv6_route" && len(fields) > 8 && fields[0] == strings.Repeat("0", 32) && fields[1] == "00" &&
				!hasFlag(fields[8], rtfReject) {
				t.Errorf("the node's namespace has an IPv6 default route: %s", line)
			}
		}
	}

	// A control-plane program that dies is started again (as the kubelet restarts a static
	// pod): without kube-controller-manager, the Job below would never complete.
	killNodeProgram(t, n, "kube-controller")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := t.TempDir()
	if err := BuildStatic(ctx, bin, "github.com/sidesync/sidesync/cmd/sidesync"); err != nil {
		t.Fatal(err)
	}
	if err := n.ImportImages(ctx, Image{Ref: "sidesync.invalid/hello:1",
		Files: map[string]string{"/sidesync": filepath.Join(bin, "sidesync")}}); err != nil {
		t.Fatal(err)
	}
	n.CreateNamespaceLabelled(t, "hello", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	n.Create(t, "/apis/batch/v1/namespaces/hello/jobs", map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "hello"},
		"spec": map[string]any{"backoffLimit": 0, "template": map[string]any{"spec": map[string]any{
			"restartPolicy":   "Never",
			"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 10001, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{
				"name": "hello", "image": "sidesync.invalid/hello:1", "imagePullPolicy": "Never",
				"command":         []any{"/sidesync", "version"},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
			}},
		}}},
	})
	if cond := n.WaitJob(t, "hello", "hello", 2*time.Minute); cond != "Complete" {
		t.Fatalf("Job hello: %s, want Complete%s", cond, n.LogTails())
	}
	var pods struct {
		Items []map[string]any
	}
	n.Do(t, http.MethodGet, "/api/v1/namespaces/hello/pods", nil, &pods)
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods, want 1", len(pods.Items))
	}

	stopped = true
	if err := n.Stop(); err != nil {
		t.Fatalf("the node left something behind: %v", err)
	}
}

// killNodeProgram kills, with SIGKILL, the node's process whose command name (as /proc/PID/comm
// has it, at most 15 bytes) is comm.
func killNodeProgram(t *testing.T, n *Node, comm string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		if strings.TrimSpace(string(name)) == comm && ns == n.pidns {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no process %s in the node", comm)
}

// hasFlag reports whether the hex field of /proc/net/ipv6_route has flag set.
func hasFlag(hex string, flag int64) bool {
	v, err := strconv.ParseInt(hex, 16, 64)
	return err == nil && v&flag != 0
}

// TestMachineStateCompare: the check that TestNode's clean stop relies on finds each kind of
// leftover, and leaves another node's cgroups to that node.
func TestMachineStateCompare(t *testing.T) {
	before := machineState{
		mounts:  []string{"/", "/proc"},
		cgroups: []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory/agent", "/sys/fs/cgroup/memory/agent/me"},
		own:     []string{"/sys/fs/cgroup/memory/agent/me"},
		sysctls: map[string]string{"vm/overcommit_memory": "0"},
		paths:   map[string]bool{"/run/containerd": false},
		links:   []string{"lo", "eth0"},
	}
	if err := before.compare(before, "/sidesync-node-aa"); err != nil {
		t.Fatalf("the same state: %v", err)
	}
	after := machineState{
		mounts: []string{"/", "/proc", "/run/netns/cni-1"},
		cgroups: []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory/agent", "/sys/fs/cgroup/memory/agent/me",
			"/sys/fs/cgroup/memory/sidesync-node-aa/kubepods", "/sys/fs/cgroup/memory/sidesync-node-bb",
			"/sys/fs/cgroup/memory/agent/another-command", "/sys/fs/cgroup/memory/agent/me/child", "/sys/fs/cgroup/memory/kubepods"},
		sysctls: map[string]string{"vm/overcommit_memory": "1"},
		paths:   map[string]bool{"/run/containerd": true},
		links:   []string{"lo", "eth0", "veth1234"},
	}
	err := before.compare(after, "/sidesync-node-aa")
	if err == nil {
		t.Fatal("no leftover found")
	}
	for _, want := range []string{"mount left behind: /run/netns/cni-1", "cgroup left behind: /sys/fs/cgroup/memory/sidesync-node-aa/kubepods",
		"cgroup left behind: /sys/fs/cgroup/memory/agent/me/child", "cgroup left behind: /sys/fs/cgroup/memory/kubepods",
		"sysctl vm/overcommit_memory changed: 1, was 0", "/run/containerd created", "network interface left behind: veth1234"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q not in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "sidesync-node-bb") {
		t.Errorf("another node's cgroup reported:\n%v", err)
	}
	if strings.Contains(err.Error(), "another-command") {
		t.Errorf("a cgroup the machine made beside the test process's own reported:\n%v", err)
	}
}
