package httpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDoDeadline(t *testing.T) {
	addr := mustServeRaw(t, func(c net.Conn) {
		readRequest(c)
		waitClose(c) // a sidecar that accepts and never answers
	})
	const deadline = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err := Do(ctx, &Request{URL: mustURL(t, "http://"+addr+"/ready")}, 0)
	elapsed := time.Since(start)
	if !Timeout(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a timeout that is context.DeadlineExceeded", err)
	}
	if ClosedAfterSend(err) || Refused(err) {
		t.Errorf("ClosedAfterSend or Refused true for %v", err)
	}
	if elapsed > deadline+2*time.Second {
		t.Errorf("Do returned %v after start, want promptly after the %v deadline", elapsed, deadline)
	}
}

// TestDoCancel cancels while Do waits for the head or for the body. Do must return at once with
// the context's error, not a "use of closed network connection".
func TestDoCancel(t *testing.T) {
	shutdown := errors.New("sidesync shutting down")
	tests := []struct {
		name    string
		partial string // what the server writes before the test cancels
		cause   error  // nil: plain cancel
	}{
		{name: "waiting for the status line", partial: ""},
		{name: "inside the headers", partial: "HTTP/1.1 200 OK\r\nA: b\r\n"},
		{name: "inside the headers with a cause", partial: "HTTP/1.1 200 OK\r\n", cause: shutdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrote := make(chan struct{})
			addr := mustServeRaw(t, func(c net.Conn) {
				readRequest(c)
				io.WriteString(c, tt.partial)
				close(wrote)
				waitClose(c)
			})
			ctx, cancelTimeout := context.WithTimeout(context.Background(), testTimeout)
			defer cancelTimeout()
			ctx, cancel := context.WithCancelCause(ctx)
			cancelled := make(chan time.Time, 1)
			go func() {
				<-wrote
				cancelled <- time.Now()
				cancel(tt.cause)
			}()
			_, err := Do(ctx, &Request{URL: mustURL(t, "http://"+addr+"/ready")}, 0)
			if since := time.Since(<-cancelled); since > 2*time.Second {
				t.Errorf("Do returned %v after cancel, want promptly", since)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("err = %v, want it to wrap the cause %v", err, tt.cause)
			}
			if Timeout(err) {
				t.Errorf("Timeout(%v) = true for a cancel", err)
			}
		})
	}
}

// starvedConn reports when its reader has consumed n bytes and asks for more: the server has
// sent n bytes, so the reader is then certainly waiting for data the server holds back.
type starvedConn struct {
	net.Conn
	n       int
	starved chan struct{}
}

func (c *starvedConn) Read(p []byte) (int, error) {
	if c.n <= 0 && c.starved != nil {
		close(c.starved)
		c.starved = nil
	}
	n, err := c.Conn.Read(p)
	c.n -= n
	return n, err
}

// TestExchangeCancelInBody cancels once the head has been parsed: the response comes back with
// the status and the context error in BodyErr. It goes through exchange to know when to cancel.
func TestExchangeCancelInBody(t *testing.T) {
	const partial = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"
	addr := mustServeRaw(t, func(c net.Conn) {
		readRequest(c)
		io.WriteString(c, partial)
		waitClose(c)
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	starved := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-starved
		cancel()
	}()
	out, err := buildRequest(&Request{URL: mustURL(t, "http://"+addr+"/ready")}, closeAfter)
	if err != nil {
		t.Fatal(err)
	}
	c := &starvedConn{Conn: conn, n: len(partial), starved: starved}
	resp, err := exchange(ctx, c, out.method, out.raw, 1000, &Error{})
	if err != nil {
		t.Fatalf("exchange: %v, want a response with BodyErr", err)
	}
	if got, want := resp.StatusCode, 200; got != want {
		t.Errorf("StatusCode = %d, want %d", got, want)
	}
	if got, want := string(resp.Body), "abc"; got != want {
		t.Errorf("Body = %q, want %q", got, want)
	}
	if !errors.Is(resp.BodyErr, context.Canceled) {
		t.Errorf("BodyErr = %v, want context.Canceled", resp.BodyErr)
	}
}

func TestDoContextDoneBeforeStart(t *testing.T) {
	addr := mustServeRaw(t, waitClose)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Do(ctx, &Request{URL: mustURL(t, "http://"+addr+"/")}, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDoRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the port is now free: nothing listens there
	_, err = doURL(t, "POST", "http://admin:secret@"+addr+"/quitquitquit", 0)
	if !Refused(err) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want connection refused", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Sent || e.Op != "dial" {
		t.Errorf("err = %#v, want *Error with Op dial and not Sent", err)
	}
	if ClosedAfterSend(err) || Timeout(err) {
		t.Errorf("ClosedAfterSend or Timeout true for %v", err)
	}
	want := "POST http://" + addr + "/quitquitquit: dial: connect: connection refused"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// serveHost answers 200 and reports the Host field and peer address it saw in headers.
func serveHost(c net.Conn) {
	req, _, err := readRequest(c)
	if err != nil {
		return
	}
	resp := &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{
		"X-Host": {req.Host}, "X-Peer": {c.RemoteAddr().String()}, "Content-Length": {"0"},
	}}
	resp.Write(c)
}

func TestDoAddressFamilies(t *testing.T) {
	addrs, _ := net.DefaultResolver.LookupHost(context.Background(), "localhost")
	resolves := func(ip string) bool {
		for _, a := range addrs {
			if a == ip {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name            string
		network, listen string
		host            string // host part of the URL; the port is added
		needs           string // address localhost must resolve to, if any
	}{
		{name: "IPv4 literal", network: "tcp4", listen: "127.0.0.1:0", host: "127.0.0.1"},
		{name: "IPv6 literal", network: "tcp6", listen: "[::1]:0", host: "[::1]"},
		{name: "localhost on IPv4 only", network: "tcp4", listen: "127.0.0.1:0", host: "localhost", needs: "127.0.0.1"},
		{name: "localhost on IPv6 only", network: "tcp6", listen: "[::1]:0", host: "localhost", needs: "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs != "" && !resolves(tt.needs) {
				t.Skipf("localhost resolves to %v, not %s", addrs, tt.needs)
			}
			addr, ok := serveRaw(t, tt.network, tt.listen, serveHost)
			if !ok {
				t.Skipf("no %s loopback here: %s", tt.network, addr)
			}
			_, port, _ := net.SplitHostPort(addr)
			hostport := tt.host + ":" + port
			resp, err := doURL(t, "GET", "http://"+hostport+"/ready", 0)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got, want := resp.Get("X-Host"), hostport; got != want {
				t.Errorf("server saw Host %q, want %q", got, want)
			}
		})
	}
}

func TestDoLocalAddr(t *testing.T) {
	addr := mustServeRaw(t, serveHost)
	local := net.ParseIP("127.0.0.2")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := Do(ctx, &Request{URL: mustURL(t, "http://"+addr+"/"), LocalAddr: local}, 0)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("cannot bind %v here: %v", local, err)
	}
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if got, want := resp.Get("X-Peer"), "127.0.0.2:"; !strings.HasPrefix(got, want) {
		t.Errorf("server saw peer %q, want %q...", got, want)
	}
}
