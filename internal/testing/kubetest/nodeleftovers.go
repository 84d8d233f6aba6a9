//go:build linux

package kubetest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A node's directory (containerd's root, etcd, the logs: hundreds of MB) and its cgroup root are
// removed by whoever outlives the other: the node's init when the test process dies (its stdin
// closes) or asks it to stop, Stop as a fallback, and, should both the test process and the init
// be killed, the next StartNode on the machine, which sweeps what a dead node left.
//
// Which node is dead is told by a lock, never by a guess: the directory's lockFile is flock'ed
// by the test process and inherited by the node's init, so the lock is free exactly when neither
// runs any more. Another test binary's node, running in parallel, holds its own.

// nodeDirPrefix begins the name of every node's directory, in os.TempDir().
const nodeDirPrefix = "kubenode-"

// lockFile is the node directory's lock: present and unlocked means the node is dead.
const lockFile = "owner.lock"

// legacyAge is how old a node directory without a lock file (made by an earlier kubetest) must
// be before the sweep takes it for a dead node's, when no init of it runs: older than any start.
const legacyAge = 2 * nodeReadyTimeout

// makeNodeDir makes a node's directory with its lock held by the returned file. The lock file
// is locked before it gets its name, so a sweep never finds it unlocked while its node starts.
func makeNodeDir() (dir string, lock *os.File, err error) {
	dir, err = os.MkdirTemp("", nodeDirPrefix)
	if err != nil {
		return "", nil, err
	}
	tmp := filepath.Join(dir, lockFile+".new")
	lock, err = os.OpenFile(tmp, os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, lockFile))
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("locking the node's directory: %w", err)
	}
	return dir, lock, nil
}

// sweepDeadNodes removes the directories and cgroup roots of the nodes whose test process and
// init are both gone, and returns what it removed.
func sweepDeadNodes() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), nodeDirPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		lock, dead := deadNode(dir)
		if !dead {
			continue
		}
		// The lock, held while removing, keeps a parallel sweep off this directory.
		if err := removeNodeLeftovers(dir, nodeCgroupRoot(dir)); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, dir)
		}
		if lock != nil {
			lock.Close()
		}
	}
	return removed, errors.Join(errs...)
}

// deadNode reports whether dir is a dead node's directory, and returns its lock, then held.
func deadNode(dir string) (*os.File, bool) {
	lock, err := os.Open(filepath.Join(dir, lockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, legacyDead(dir)
	}
	if err != nil {
		return nil, false
	}
	if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		lock.Close()
		return nil, false // its test process or its init runs
	}
	return lock, true
}

// legacyDead reports whether dir, which has no lock file, is a dead node's of an earlier kubetest:
// its plan is older than any start, and no init of it runs (an init's environment names the
// plan). A directory still being made has no plan yet, or a new one.
func legacyDead(dir string) bool {
	plan := filepath.Join(dir, "plan.json")
	fi, err := os.Stat(plan)
	if err != nil || time.Since(fi.ModTime()) < legacyAge {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, p := range procs {
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), envNodeInit+"="+plan) {
			return false
		}
	}
	return true
}

// nodeCgroupRoot reads the node's cgroup root from its kubelet's configuration, or "" when there
// is none (the node died before it was written; its cgroup root was made after).
func nodeCgroupRoot(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "kubelet.yaml"))
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if root, ok := strings.CutPrefix(line, "cgroupRoot: "); ok && strings.HasPrefix(root, "/"+cgroupRootPrefix) {
			return strings.TrimSpace(root)
		}
	}
	return ""
}

// removeNodeLeftovers removes a node's cgroup root (when not "") in every hierarchy, then
// whatever is mounted under its directory in the caller's mount namespace, then the directory.
// The node's processes must be gone.
func removeNodeLeftovers(dir, cgroupRoot string) error {
	var errs []error
	if cgroupRoot != "" {
		if err := removeCgroupRoot(cgroupRoot); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount under dir in the caller's mount namespace, deepest first:
// in the node's own, containerd's snapshots, the pods' volumes and network namespaces.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
