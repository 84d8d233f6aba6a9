//go:build linux

// Package kubetest starts a real kube-apiserver backed by a real etcd for integration tests.
//
// Kubernetes pieces are tested against the real Kubernetes API machinery, not a hand-made
// imitation of it. The two binaries are built from source by .ci/build-kube.sh into a cache
// directory outside the repository; this package only runs them, and skips the test when they
// are missing (or fails it, when SIDESYNC_KUBE_REQUIRED is set, as CI may do).
//
// It talks to the apiserver with net/http and JSON, exactly as a program inside a pod would.
//
// StartNode runs a whole node besides (controller manager, scheduler, containerd with runc, a
// kubelet), in namespaces of its own with no route off the machine (docs/NODE.md); it needs
// golang.org/x/sys for the namespaces and go-containerregistry for the images it imports.
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Environment variables read by Start.
const (
	// EnvBinDir names the directory that holds kube-apiserver and etcd. When it is unset the
	// directory is ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube, as in .ci/build-kube.sh.
	EnvBinDir = "SIDESYNC_KUBE_BIN"
	// EnvRequired, when set to anything but "" or "0", turns the skip for missing binaries into a
	// test failure, so that a CI run which built them cannot silently skip these tests.
	EnvRequired = "SIDESYNC_KUBE_REQUIRED"
)

// Users that the apiserver authenticates by bearer token (its --token-auth-file). Every
// authenticated user is also in group system:authenticated.
const (
	// Admin is in group system:masters: it may do anything.
	Admin = "admin"
	// PodReader has no permissions of its own; tests bind it to roles.
	PodReader = "pod-reader"
	// Nobody has no permissions and is never bound; its requests are authenticated and denied (403).
	Nobody = "nobody"
	// nodeUser is a node's kubelet, as the Node authorizer knows it (StartNode).
	nodeUser = "system:node:" + nodeName
)

// users lists the token users and their groups beyond system:authenticated.
var users = []struct{ name, groups string }{
	{Admin, "system:masters"},
	{PodReader, ""},
	{Nobody, ""},
	{nodeUser, "system:nodes"},
}

// Timeouts. They bound waits on conditions; nothing sleeps for synchronisation.
const (
	readyTimeout = 90 * time.Second // etcd healthy, then kube-apiserver /readyz
	stopTimeout  = 15 * time.Second // per process, after SIGTERM and before SIGKILL
	pollInterval = 100 * time.Millisecond
	startTries   = 5 // fresh ports after a bind failure
)

// The Kubernetes releases whose API servers the tests run.
const (
	// Newest is the release of the whole control plane and node in BinDir (.ci/build-kube.sh's
	// KUBE_VERSION).
	Newest = "1.37"
	// Oldest is the oldest release sidesync supports (kubeversion.Oldest), whose API server alone
	// .ci/build-kube.sh builds into BinDir()/1.33 (its OLDEST_KUBE_VERSION).
	Oldest = "1.33"
)

// Versions are the releases a test of what each supported Kubernetes stores runs on, oldest
// first: one API server of each (StartWith).
var Versions = []string{Oldest, Newest}

// versionOrNewest is v, or Newest for "".
func versionOrNewest(v string) string {
	if v == "" {
		return Newest
	}
	return v
}

// versionDir is the directory in bin of the API server of version ("": Newest): bin itself for
// Newest, bin/1.33 for Oldest.
func versionDir(bin, version string) (string, error) {
	switch versionOrNewest(version) {
	case Newest:
		return bin, nil
	case Oldest:
		return filepath.Join(bin, Oldest), nil
	}
	return "", fmt.Errorf("no Kubernetes %q: the API servers built are %q", version, Versions)
}

// BinDir returns the directory where Start looks for kube-apiserver and etcd.
func BinDir() string {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), ".cache")
	}
	return filepath.Join(cache, "sidesync-ci", "kube")
}
