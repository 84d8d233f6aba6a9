package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The SSRF guard is checked on addresses without connecting (a dial to a private or
// link-local address must never leave this machine, even if the guard were wrong), and by real
// connections on loopback, where a refusal is seen by the server: no connection arrives.

func TestDialGuardRefusesEachRange(t *testing.T) {
	g := &dialGuard{}
	for _, tc := range []struct{ addr, what string }{
		{"0.0.0.0:443", "this network"},
		{"0.1.2.3:443", "this network"},
		{"10.0.0.1:443", "RFC 1918"},
		{"10.255.255.255:5000", "RFC 1918"},
		{"100.64.0.1:443", "CGNAT"},
		{"100.127.255.254:443", "CGNAT"},
		{"127.0.0.1:5000", "loopback"},
		{"127.255.0.9:80", "loopback"},
		{"169.254.169.254:80", "link-local"},
		{"172.16.0.1:443", "RFC 1918"},
		{"172.31.255.1:443", "RFC 1918"},
		{"192.168.1.1:443", "RFC 1918"},
		{"192.0.0.170:443", "IETF"},
		{"198.18.0.1:443", "benchmarking"},
		{"224.0.0.1:443", "multicast"},
		{"239.255.255.250:1900", "multicast"},
		{"255.255.255.255:443", "broadcast"},
		{"[::]:443", "unspecified"},
		{"[::1]:5000", "loopback"},
		{"[::a9fe:a9fe]:80", "IPv4-compatible"},
		{"[::ffff:169.254.169.254]:80", "link-local"}, // IPv4-mapped: checked as IPv4
		{"[::ffff:127.0.0.1]:80", "loopback"},
		{"[64:ff9b::a9fe:a9fe]:80", "NAT64 of 169.254.169.254"},
		{"[64:ff9b::0a00:0001]:80", "NAT64 of 10.0.0.1"},
		{"[fc00::1]:443", "RFC 4193"},
		{"[fd12:3456:789a::1]:443", "RFC 4193"},
		{"[fe80::1%eth0]:443", "link-local"},
		{"[febf::1]:443", "link-local"},
		{"[fec0::1]:443", "site-local"},
		{"[ff02::1]:443", "multicast"},
	} {
		err := g.check(tc.addr)
		var re *refusedError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want refused", tc.addr, err)
			continue
		}
		host, _, _ := net.SplitHostPort(tc.addr)
		host, _, _ = strings.Cut(host, "%")
		host = netip.MustParseAddr(host).Unmap().String()
		msg := err.Error()
		if !strings.Contains(msg, tc.what) || !strings.Contains(msg, "--registry-allow=") || !strings.Contains(msg, re.addr.String()) {
			t.Errorf("%s: %q: want the range (%s), the address and --registry-allow", tc.addr, msg, tc.what)
		}
		if !strings.Contains(msg, "address "+host+" ") {
			t.Errorf("%s: %q does not name the address %s", tc.addr, msg, host)
		}
	}
}

func TestDialGuardAdmitsPublicAndAllowed(t *testing.T) {
	for _, addr := range []string{"8.8.8.8:443", "1.1.1.1:443", "100.63.255.255:443", "100.128.0.0:443", "172.15.255.255:443",
		"172.32.0.0:443", "192.169.0.1:443", "[2001:4860:4860::8888]:443", "[64:ff9b::808:808]:443"} {
		if err := (&dialGuard{}).check(addr); err != nil {
			t.Errorf("%s: %v, want admitted", addr, err)
		}
	}
	allow, err := parseAllow("10.1.0.0/16, 127.0.0.0/8,fd00::/8,169.254.169.254,::ffff:192.168.0.0/112")
	if err != nil {
		t.Fatal(err)
	}
	g := &dialGuard{allow: allow}
	for _, addr := range []string{"10.1.2.3:5000", "127.0.0.1:5000", "[fd00::5]:443", "169.254.169.254:80", "[64:ff9b::a9fe:a9fe]:80", "192.168.7.7:443"} {
		if err := g.check(addr); err != nil {
			t.Errorf("%s allowed by %v: %v", addr, allow, err)
		}
	}
	for _, addr := range []string{"10.2.0.1:5000", "[fc00::5]:443", "[::1]:5000", "169.254.169.253:80"} {
		if err := g.check(addr); err == nil {
			t.Errorf("%s: admitted by %v, want refused", addr, allow)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,nope"} {
		if _, err := parseAllow(bad); err == nil || !strings.Contains(err.Error(), "--registry-allow") {
			t.Errorf("parseAllow(%q): %v, want an error naming the flag", bad, err)
		}
	}
}

// TestDialGuardOnLoopback connects for real: refused without the allow-list (the listener
// sees no connection, and a name resolving to loopback is refused by the address it resolves
// to), admitted with it.
func TestDialGuardOnLoopback(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	get := func(g *dialGuard, host string) error {
		c := &http.Client{Transport: g.transport(), Timeout: time.Minute}
		defer c.CloseIdleConnections()
		resp, err := c.Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		err := get(&dialGuard{}, host)
		var re *refusedError
		if !errors.As(err, &re) || !re.addr.IsLoopback() || !strings.Contains(err.Error(), "--registry-allow="+re.addr.String()) {
			t.Errorf("GET via %s: %v, want refused naming the loopback address and the flag", host, err)
		}
	}
	allow, _ := parseAllow("127.0.0.0/8")
	if err := get(&dialGuard{allow: allow}, "127.0.0.1"); err != nil {
		t.Errorf("allowed 127.0.0.0/8: %v", err)
	}
	srv.Close()
	if n := conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want 1 (the allowed one)", n)
	}
	// A context ending while dialling is the context's error, not the guard's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&dialGuard{allow: allow}).dialContext()(ctx, "tcp", srv.Listener.Addr().String()); errors.As(err, new(*refusedError)) {
		t.Errorf("cancelled dial: %v", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	ps, err := parsePlatforms("linux/amd64, linux/arm64,linux/arm/v7")
	if err != nil || len(ps) != 3 || ps[1].Architecture != "arm64" || ps[2].Variant != "v7" {
		t.Errorf("%v %v", ps, err)
	}
	if ps, err := parsePlatforms(""); err != nil || ps != nil {
		t.Errorf("empty: %v %v, want every platform (none)", ps, err)
	}
	for _, bad := range []string{"windows/amd64", "linux", "linux/amd64,darwin/arm64"} {
		if _, err := parsePlatforms(bad); err == nil || !strings.Contains(err.Error(), "--platforms") {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}
