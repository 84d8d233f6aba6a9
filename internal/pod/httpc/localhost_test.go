package httpc

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"
)

// TestDialLocalhost: "localhost" is the loopback interface, not a lookup: a server on 127.0.0.1
// only and one on ::1 only are both reached, whatever /etc/hosts says (the process-level test,
// TestFaultLocalhost in cmd/sidesync, gives sidesync odd hosts files).
func TestDialLocalhost(t *testing.T) {
	for _, network := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := net.Listen("tcp", network)
		if err != nil {
			t.Logf("%s: %v (no such loopback here)", network, err)
			continue
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"))
				c.Close()
			}
		}()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		for _, host := range []string{"localhost", "LOCALHOST", "localhost."} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			u, _ := url.Parse("http://" + net.JoinHostPort(host, port) + "/")
			resp, err := Do(ctx, &Request{Method: "GET", URL: u}, 0)
			cancel()
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s via %s: %v", network, host, err)
			}
		}
	}
	for host, want := range map[string]bool{"localhost": true, "Localhost.": true, "localhost.localdomain": false, "x.localhost": false, "127.0.0.1": false} {
		if IsLocalhost(host) != want {
			t.Errorf("IsLocalhost(%q) = %v", host, !want)
		}
	}
	// Nothing listening: a refusal, as with any address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	u, _ := url.Parse("http://localhost:" + port + "/")
	if _, err := Do(context.Background(), &Request{Method: "GET", URL: u}, 0); err == nil || !Refused(err) {
		t.Errorf("nothing listening: %v", err)
	}
}
