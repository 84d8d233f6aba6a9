//go:build linux

package kubetest

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// containerdConfig is containerd 2.x's configuration (version 3) for the node: every path under
// dir, the CRI's images unpacked with overlayfs, runc as Debian installs it, cgroupfs (the
// kubelet's driver on this machine's cgroup v1), and the sandbox image pinned so that it is
// never pulled or collected. restrict_oom_score_adj: the sandbox may not lower a process's
// oom_score_adj (no CAP_SYS_RESOURCE), so runc must not try.
func containerdConfig(dir, sock string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return `version = 3
root = ` + q(filepath.Join(dir, "containerd/root")) + `
state = ` + q(filepath.Join(dir, "containerd/state")) + `

[grpc]
  address = ` + q(sock) + `

[ttrpc]
  address = ` + q(sock+".ttrpc") + `

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ` + q(PauseImage) + `

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [` + q(cniBinDir) + `]
    conf_dir = ` + q(filepath.Join(dir, "cni/net.d")) + `
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ` + q(runcPath) + `
        Root = ` + q(filepath.Join(dir, "runc")) + `
        SystemdCgroup = false
`
}

// cniConfig is the pods' network: a veth pair per pod (the ptp plugin), the pod's end in the
// pod's namespace and the other in the node's, with a route to the pod's address there, so that
// the kubelet's probes reach it. The pod's default route leads to the node's namespace, which
// has none: a packet for anywhere else goes nowhere. No masquerade, so no iptables.
func cniConfig(ipamDir string) string {
	return `{
  "cniVersion": "1.0.0",
  "name": "sidesync-node",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "` + podSubnet + `"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "` + ipamDir + `"
      }
    }
  ]
}
`
}

// kubeletConfig is the kubelet's KubeletConfiguration: cgroup v1 allowed (this machine's), the
// cgroupfs driver under cgroupRoot, its API on the node's address only, anonymous with
// AlwaysAllow (only the node's namespace reaches it), no swap check, thresholds that a busy CI
// disk cannot trip, no DNS server for pods (there is none, and none outside may be asked), and
// a container restarted in place after 1 s rather than 10 (KubeletCrashLoopBackOffMax, beta and
// on since 1.35: the first back-off is the smaller of 10 s and this maximum).
func kubeletConfig(sock, cgroupRoot, podLogs string) string {
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://` + sock + `
address: ` + nodeIP + `
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ` + cgroupRoot + `
failSwapOn: false
oomScoreAdj: 0
resolvConf: ""
podLogsDir: ` + podLogs + `
serializeImagePulls: false
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
crashLoopBackOff: {maxContainerRestartPeriod: 1s}
maxPods: 250
`
}

// kubeconfig is a kubeconfig for server, trusting caFile, with a bearer token.
func kubeconfig(server, caFile, token string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: "` + server + `", certificate-authority: "` + caFile + `"}
users:
- name: user
  user: {token: "` + token + `"}
contexts:
- name: node
  context: {cluster: node, user: user}
current-context: node
`
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// cgroupHierarchies returns the machine's cgroup mounts under /sys/fs/cgroup: one per cgroup v1
// hierarchy (and the unified one of a hybrid machine), or /sys/fs/cgroup itself on cgroup v2.
func cgroupHierarchies() ([]string, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}, nil
	}
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if fi, err := os.Lstat(filepath.Join("/sys/fs/cgroup", e.Name())); err == nil && fi.IsDir() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return dirs, nil
}

// makeCgroupRoot makes the kubelet's cgroup root in every hierarchy; cpuset's gets its parent's
// CPUs and memory nodes, without which nothing could join it.
func makeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot removes root and every cgroup under it, in every hierarchy, deepest first. A
// cgroup whose last process has just been killed may be busy for a moment: it retries for a while.
func removeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h, root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for {
				err := os.Remove(dirs[i])
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("cgroup %s left behind: %w", dirs[i], err))
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return errors.Join(errs...)
}

// machineState is what a node could leave behind on the machine, read before and after it runs.
type machineState struct {
	mounts  []string // mount points of the test's own mount namespace
	cgroups []string // every cgroup directory
	// own are the test process's cgroups that are below a hierarchy's top level (ownCgroups):
	// the machine may make siblings of them for its other work while the node runs (a
	// sandbox's agent does, one per command), and those are not the node's.
	own     []string
	sysctls map[string]string // the kubelet's tunables and the network ones of the machine's namespace
	paths   map[string]bool   // whether each of the paths that containerd and the kubelet default to exists
	links   []string          // the network interfaces of the machine's namespace
}

// machineSysctls are read before and after; every one that a node's programs set is here.
func machineSysctls() []string {
	keys := sortedKeys(kubeletSysctls)
	return append(keys, "net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding", "net/ipv6/conf/all/forwarding",
		"net/bridge/bridge-nf-call-iptables", "net/ipv4/conf/all/route_localnet")
}

// defaultPaths are where containerd, runc, libcni and the kubelet write when not told otherwise.
var defaultPaths = []string{"/run/containerd", "/run/runc", "/var/lib/cni", "/var/lib/containerd", "/var/lib/kubelet",
	"/var/log/pods", "/var/log/containers", "/etc/cni", "/opt/cni", "/run/netns", "/etc/kubernetes"}

// readMachineState reads the machine's state as the test process sees it.
func readMachineState() (machineState, error) {
	s := machineState{sysctls: map[string]string{}, paths: map[string]bool{}}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			s.mounts = append(s.mounts, f[4])
		}
	}
	slices.Sort(s.mounts)
	hs, err := cgroupHierarchies()
	if err != nil {
		return s, err
	}
	for _, h := range hs {
		_ = filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				s.cgroups = append(s.cgroups, p)
			}
			return nil
		})
	}
	if s.own, err = ownCgroups(hs); err != nil {
		return s, err
	}
	for _, k := range machineSysctls() {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err == nil {
			s.sysctls[k] = strings.TrimSpace(string(v))
		}
	}
	for _, p := range defaultPaths {
		_, err := os.Lstat(p)
		s.paths[p] = err == nil
	}
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return s, err
	}
	for _, l := range links {
		s.links = append(s.links, l.Name())
	}
	return s, nil
}

// ownCgroups returns the directories of the process's own cgroups, one per hierarchy of hs,
// where it is below the hierarchy's top level (/proc/self/cgroup: "ID:CONTROLLERS:PATH"; the
// hierarchy's directory is named after its controllers, "name=" left out, and the unified one
// has none).
func ownCgroups(hs []string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var own []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || strings.Count(strings.TrimRight(f[2], "/"), "/") < 2 {
			continue // the root, or a cgroup at the top level, whose siblings a node may make
		}
		for _, h := range hs {
			base := filepath.Base(h)
			if f[1] == base || f[1] == "name="+base || f[1] == "" && (h == "/sys/fs/cgroup" || base == "unified") {
				own = append(own, filepath.Join(h, f[2]))
			}
		}
	}
	return own, nil
}

// othersCgroup reports whether the cgroup c is below a sibling of one of the process's own
// cgroups (which are below the top level): the machine's, made for its other work (a node's
// leftovers are in its cgroup root, at a hierarchy's top level, or below the process's own).
func (s machineState) othersCgroup(c string) bool {
	for _, o := range s.own {
		parent := filepath.Dir(o)
		if below(c, parent) && c != parent && !below(c, o) {
			return true
		}
	}
	return false
}

// below reports whether path is dir or below it.
func below(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// compare reports everything in after that differs from s: what the node whose cgroup root is
// root left behind. Other nodes' cgroup roots (another test package may run a node at the same
// time) are theirs.
func (s machineState) compare(after machineState, root string) error {
	var errs []error
	added := func(what string, before, now []string) {
		for _, x := range now {
			if !slices.Contains(before, x) {
				errs = append(errs, fmt.Errorf("%s left behind: %s", what, x))
			}
		}
	}
	added("mount", s.mounts, after.mounts)
	var cgroups []string
	for _, c := range after.cgroups {
		if (!strings.Contains(c, "/"+cgroupRootPrefix) || strings.Contains(c, root)) && !s.othersCgroup(c) {
			cgroups = append(cgroups, c)
		}
	}
	added("cgroup", s.cgroups, cgroups)
	added("network interface", s.links, after.links)
	for _, k := range sortedKeys(s.sysctls) {
		if after.sysctls[k] != s.sysctls[k] {
			errs = append(errs, fmt.Errorf("sysctl %s changed: %s, was %s", k, after.sysctls[k], s.sysctls[k]))
		}
	}
	for _, p := range defaultPaths {
		if after.paths[p] && !s.paths[p] {
			errs = append(errs, fmt.Errorf("%s created on the machine", p))
		}
	}
	return errors.Join(errs...)
}
