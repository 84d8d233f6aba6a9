package emulator

import (
	"net"
	"strings"
	"testing"
)

// nonLoopbackIPv4 returns an IPv4 address of this machine that is not
// loopback, or skips the test.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("cannot list interface addresses (%v): no way to connect from a non-loopback peer", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip := ipn.IP.To4(); ip != nil && !ip.IsLoopback() {
				return ip.String()
			}
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address: cannot test the 403 for a peer that is not loopback")
	return ""
}

// remoteBase starts the profile with listener on 0.0.0.0 and returns a
// base URL that reaches it through ip, so that the peer the emulator sees
// is ip rather than loopback.
func remoteBase(t *testing.T, profile, listener, ip string, opts Options) (*Sidecar, *recorder, string) {
	t.Helper()
	opts.Addrs = map[string]string{listener: "0.0.0.0:0"}
	sc, rec := startProfile(t, profile, opts)
	host, port, err := net.SplitHostPort(sc.AddrOf(listener))
	if err != nil || host != "0.0.0.0" {
		t.Fatalf("listener %s on %q (%v), want 0.0.0.0:PORT", listener, sc.AddrOf(listener), err)
	}
	return sc, rec, "http://" + net.JoinHostPort(ip, port)
}

// checkPeer checks that the last request event saw ip as the peer.
func checkPeer(t *testing.T, rec *recorder, ip string) {
	t.Helper()
	reqs := eventsNamed(rec, "request")
	if len(reqs) == 0 || !strings.HasPrefix(reqs[len(reqs)-1].Get("peer"), ip+":") {
		t.Errorf("peer is not %s; events:\n%s", ip, rec.text())
	}
}

// TestIstioRemotePeer: the agent refuses a peer that is not loopback with
// 403 before it looks at the method (ref §3.3).
func TestIstioRemotePeer(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	sc, rec, base := remoteBase(t, "istio", "status", ip, Options{})
	for _, path := range []string{"/quitquitquit", "/drain"} {
		for _, method := range []string{"POST", "GET"} {
			res := send(t, method, base+path)
			if res.status != 403 || res.body != "Only requests from localhost are allowed\n" {
				t.Errorf("%s %s = %d %q", method, path, res.status, res.body)
			}
			checkContentType(t, res, goTextType)
			checkPeer(t, rec, ip)
		}
	}
	if res := send(t, "GET", base+"/healthz/ready"); res.status != 200 {
		t.Errorf("readiness from %s = %d; it has no loopback check", ip, res.status)
	}
	if rec.has("quit") {
		t.Fatal("a refused request quit")
	}
	if res := send(t, "POST", "http://"+sc.AddrOf("status")+"/quitquitquit"); res.status != 200 || !rec.has("quit") {
		t.Errorf("POST from loopback to 0.0.0.0 = %d %q", res.status, res.body)
	}
}

// TestLinkerdRemotePeer: a POST from a peer that is not loopback gets 403,
// even with the endpoint disabled; a wrong method still gets 405 first
// (ref §4.2).
func TestLinkerdRemotePeer(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	for _, disabled := range []bool{false, true} {
		_, rec, base := remoteBase(t, "linkerd", "admin", ip, Options{ShutdownDisabled: disabled})
		res := send(t, "POST", base+"/shutdown")
		if res.status != 403 || res.body != "Requests are only permitted from localhost." {
			t.Errorf("disabled=%v: POST = %d %q", disabled, res.status, res.body)
		}
		checkContentType(t, res, "text/plain")
		checkPeer(t, rec, ip)
		if res := send(t, "GET", base+"/shutdown"); res.status != 405 || res.body != "" {
			t.Errorf("disabled=%v: GET = %d %q", disabled, res.status, res.body)
		}
		if res := send(t, "GET", base+"/ready"); res.status != 200 {
			t.Errorf("disabled=%v: /ready = %d", disabled, res.status)
		}
		if rec.has("quit") {
			t.Errorf("disabled=%v: a refused request quit", disabled)
		}
	}
}

// TestFromLoopback: the loopback test of Istio and Linkerd, including an
// IPv4-mapped loopback peer (ref §3.3, §4.2).
func TestFromLoopback(t *testing.T) {
	for _, tc := range []struct {
		peer string
		want bool
	}{
		{"127.0.0.1:5", true},
		{"127.0.0.2:5", true},
		{"[::1]:5", true},
		{"[::ffff:127.0.0.1]:5", true},
		{(&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 5}).String(), true},
		{"192.0.2.1:5", false},
		{"[::ffff:192.0.2.1]:5", false},
		{"[fe80::1%eth0]:5", false},
		{"garbage", false},
		{"", false},
	} {
		if got := (&Request{Peer: tc.peer}).FromLoopback(); got != tc.want {
			t.Errorf("FromLoopback(%q) = %v, want %v", tc.peer, got, tc.want)
		}
	}
}
