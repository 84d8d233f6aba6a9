package main

// Hardening rows of docs/FAULTS.md that need a real process: probes and quit calls only to
// loopback unless allowed.

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFaultRemoteQuitRefused: a quit URL outside loopback (here the machine's own non-loopback
// address, where an emulated sidecar does listen) is a usage error without --allow-remote-quit:
// exit 2, the command does not run, and not one request (probe or quit) reaches the sidecar.
// (scuttle's ENVOY_ADMIN_API on another address keeps scuttle's meaning: waited for but never
// told to quit: TestScuttleContract, internal/shared/config's TestCompat.)
func TestFaultRemoteQuitRefused(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	e := startEmu(t, "--listen", "0.0.0.0:0")
	remote := "http://" + ip + ":" + e.port("admin")
	for _, args := range [][]string{
		{"--admin", remote},
		{"--quit-url", remote + "/quitquitquit"},
		{"--sidecar", "envoy:host=" + ip + ",port=" + e.port("admin")},
		{"--disabled", "--admin", remote},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		r := sidesync(t, nil, append(args, "--", bin.testcmd, "touch", marker)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", args, r.code, r.stderr)
		}
		mustContain(t, r.stderr, "is not on a loopback address", "--allow-remote-quit")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%v: the command ran", args)
		}
	}
	if n := e.count("request", anyEvent); n != 0 {
		t.Errorf("the sidecar got %d requests", n)
	}
	// Allowed, the same quit goes out (and the sidecar, which does not check its peer, takes it).
	r := sidesync(t, nil, "--quit-url", remote+"/quitquitquit", "--allow-remote-quit", "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("with --allow-remote-quit: exit %d, %d quits; stderr:\n%s", r.code, e.quits(), r.stderr)
	}
}

// TestFaultRemoteReadyRefused: a readiness check outside loopback (an HTTP probe or a tcp://
// check, at the machine's own non-loopback address, where an emulated sidecar does listen) is a
// usage error without --allow-remote-ready: exit 2, the command does not run, no request reaches
// the sidecar. Allowed, the probe goes out and the command runs.
func TestFaultRemoteReadyRefused(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	e := startEmu(t, "--listen", "0.0.0.0:0")
	remote := "http://" + ip + ":" + e.port("admin")
	for _, args := range [][]string{
		{"--ready-url", remote + "/ready"},
		{"--sidecar", "tcp:ready=tcp://" + ip + ":" + e.port("admin")},
		{"--sidecar", "http:ready=" + remote + "/ready"},
		{"--disabled", "--ready-url", remote + "/ready"},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		r := sidesync(t, nil, append(args, "--", bin.testcmd, "touch", marker)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", args, r.code, r.stderr)
		}
		mustContain(t, r.stderr, "readiness URL", "is not on a loopback address", "--allow-remote-ready (SIDESYNC_ALLOW_REMOTE_READY=true)")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%v: the command ran", args)
		}
	}
	if n := e.count("request", anyEvent); n != 0 {
		t.Errorf("the sidecar got %d requests", n)
	}
	r := sidesync(t, []string{"SIDESYNC_ALLOW_REMOTE_READY=true"}, "--ready-url", remote+"/ready", "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.requests("/ready") == 0 {
		t.Errorf("with SIDESYNC_ALLOW_REMOTE_READY=true: exit %d, %d probes; stderr:\n%s", r.code, e.requests("/ready"), r.stderr)
	}
}
