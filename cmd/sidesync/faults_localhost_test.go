package main

// The localhost row of docs/FAULTS.md: a sidecar URL with "localhost" reaches this pod's
// loopback interface, on 127.0.0.1 or ::1, whatever /etc/hosts and DNS say.

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFaultLocalhost: "localhost" is never looked up: sidesync tries 127.0.0.1, then ::1. A
// sidecar on either address is waited for (by an HTTP probe and by a TCP check) and told to quit, with or without an /etc/hosts
// entry for localhost, when /etc/hosts lists ::1 first, and when a hostile /etc/hosts points
// localhost at another machine (a quit there would go to someone else's sidecar: the loopback
// check of quit URLs trusts the name). The /etc/hosts cases run sidesync in a mount namespace
// of its own (root and util-linux's unshare; they skip otherwise, and the family cases still
// run).
func TestFaultLocalhost(t *testing.T) {
	t.Parallel()
	has6 := true
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		has6 = false
	} else {
		l.Close()
	}
	unshare, err := exec.LookPath("unshare")
	canHosts := err == nil && os.Geteuid() == 0
	for _, tc := range []struct {
		name, hosts, listen string
	}{
		{"sidecar on 127.0.0.1", "", "127.0.0.1:0"},
		{"sidecar on ::1", "", "[::1]:0"},
		{"no localhost in /etc/hosts", "127.0.0.1 other\n", "127.0.0.1:0"},
		{"::1 first in /etc/hosts, sidecar on 127.0.0.1", "::1 localhost\n127.0.0.1 localhost\n", "127.0.0.1:0"},
		{"127.0.0.1 only in /etc/hosts, sidecar on ::1", "127.0.0.1 localhost\n", "[::1]:0"},
		{"localhost is another machine in /etc/hosts", "192.0.2.7 localhost\n", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.listen == "[::1]:0" && !has6 {
				t.Skip("needs an IPv6 loopback (::1), which this machine lacks")
			}
			if tc.hosts != "" && !canHosts {
				t.Skip("needs root and unshare to give sidesync its own /etc/hosts")
			}
			sidesyncHere := func(args ...string) result {
				if tc.hosts == "" {
					return sidesync(t, nil, args...)
				}
				hosts := filepath.Join(t.TempDir(), "hosts")
				os.WriteFile(hosts, []byte(tc.hosts), 0o644)
				return runProgram(t, nil, unshare, append([]string{"--mount", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts, bin.sidesync}, args...)...)
			}
			e := startEmu(t, "--listen", tc.listen, "--ready-after-probes", "1")
			// The TCP check first: a connection accepted is all it needs, and the emulator's
			// admin listener accepts one before it is ready.
			tcp := "tcp://localhost:" + e.port("admin")
			r := sidesyncHere("--sidecar", "tcp:ready="+tcp, "--timeout", "5s", "--", bin.testcmd, "exit", "0")
			if r.code != 0 {
				t.Errorf("tcp check: exit %d; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "sidecar ready sidecar=tcp url="+tcp)
			url := "http://localhost:" + e.port("admin")
			r = sidesyncHere("--admin", url, "--timeout", "5s", "--", bin.testcmd, "exit", "0")
			if r.code != 0 {
				t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "sidecar ready sidecar=envoy url="+url+"/ready", "sidecar quit sidecar=envoy url="+url+"/quitquitquit")
			if e.waitExit() != 0 || e.quits() != 1 {
				t.Errorf("quits %d, want 1", e.quits())
			}
		})
	}
}
