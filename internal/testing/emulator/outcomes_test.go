package emulator

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

func outcomeHandler(r *Request) Reply {
	switch r.Path {
	case "/hang":
		return Reply{Outcome: Hang}
	case "/reset":
		return Reply{Outcome: Reset}
	case "/eof":
		return Reply{Outcome: Drop}
	}
	return hello(r)
}

func TestServerOutcomes(t *testing.T) {
	ts := startServer(t, outcomeHandler)
	base := "http://" + ts.addr
	_, err := try("GET", base+"/reset", guard)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reset: error %v, want ECONNRESET", err)
	}
	_, err = try("GET", base+"/eof", guard)
	if !errors.Is(err, io.EOF) {
		t.Errorf("eof: error %v, want EOF", err)
	}
	_, err = try("GET", base+"/hang", 200*time.Millisecond)
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Errorf("hang: error %v, want a client timeout", err)
	}
	if res := call(t, "GET", base+"/ok"); res.status != 200 {
		t.Errorf("after the hang the server answered %d", res.status)
	}
	for _, want := range []string{"reset", "eof", "hang", "200"} {
		if l := ts.nextLog(t); l.result != want {
			t.Errorf("logged %+v, want result %s", l, want)
		}
	}
}

// TestServerOutcomesOnKeptAliveConnection: a connection that was answered
// before can still be reset or dropped by its next request.
func TestServerOutcomesOnKeptAliveConnection(t *testing.T) {
	ts := startServer(t, outcomeHandler)
	for _, tc := range []struct {
		path string
		want error // what reading after the answer gives; nil is EOF
	}{{"/reset", syscall.ECONNRESET}, {"/eof", nil}} {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(guard))
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n")
		readAnswer(t, br, "GET")
		io.WriteString(c, "GET "+tc.path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		if rest, err := io.ReadAll(br); len(rest) != 0 || !errors.Is(err, tc.want) {
			t.Errorf("%s: read %q, %v; want %v", tc.path, rest, err, tc.want)
		}
		c.Close()
	}
}

// TestServerCloseEndsHangingConnections: Close must not wait for a hung
// connection's peer; it closes the connection, and the peer sees EOF.
func TestServerCloseEndsHangingConnections(t *testing.T) {
	ts := startServer(t, outcomeHandler)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	io.WriteString(c, "GET /hang HTTP/1.1\r\nHost: a\r\n\r\n")
	if l := ts.nextLog(t); l.result != "hang" {
		t.Fatalf("logged %+v", l)
	}
	ts.Close()
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Errorf("hung connection after Close: read %q, %v; want EOF without bytes", got, err)
	}
	if err := ts.Start(mustListen(t)); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// TestServerCloseWaitsForHandlers: Close returns only once a running
// handler has returned and its request has been logged.
func TestServerCloseWaitsForHandlers(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ts := startServer(t, func(r *Request) Reply {
		close(entered)
		<-release
		return hello(r)
	})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	closed := make(chan struct{})
	go func() { ts.Close(); close(closed) }()
	// Close has closed the connection before it waits for the handler.
	io.ReadAll(c)
	select {
	case <-closed:
		t.Fatal("Close returned while a handler was running")
	default:
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(guard):
		t.Fatal("Close did not return after the handler did")
	}
	if l, ok := ts.logged(); !ok || l.path != "/slow" {
		t.Errorf("log before Close returned: %+v, %v", l, ok)
	}
}

func TestServerRunsAfterOnceAnswered(t *testing.T) {
	after := make(chan string, 2)
	ts := startServer(t, func(r *Request) Reply {
		reply := outcomeHandler(r)
		reply.After = func() { after <- r.Path }
		return reply
	})
	res := call(t, "GET", "http://"+ts.addr+"/ok")
	try("GET", "http://"+ts.addr+"/reset", guard)
	// Each connection has its own goroutine, so the two may run in either
	// order.
	ran := map[string]bool{}
	for len(ran) < 2 {
		select {
		case path := <-after:
			ran[path] = true
		case <-time.After(guard):
			t.Fatalf("After ran only for %v", ran)
		}
	}
	if !ran["/ok"] || !ran["/reset"] {
		t.Errorf("After ran for %v, want /ok and /reset", ran)
	}
	if res.body != "hello\n" {
		t.Errorf("body %q", res.body)
	}
}

// TestServerAnswerBeforeAfter: After runs once the answer is on the wire:
// an After that waits for the client to have the answer does not wait in
// vain.
func TestServerAnswerBeforeAfter(t *testing.T) {
	got := make(chan struct{})
	ts := startServer(t, func(r *Request) Reply {
		reply := hello(r)
		reply.After = func() {
			select {
			case <-got:
			case <-time.After(guard):
				t.Error("After ran before the answer was sent")
			}
		}
		return reply
	})
	res := call(t, "GET", "http://"+ts.addr+"/x")
	close(got)
	if res.status != 200 || res.body != "hello\n" {
		t.Errorf("answer %d %q", res.status, res.body)
	}
	ts.Close() // waits for After
}

// TestServerHandlerPanic: net/http recovers from a handler's panic; the
// peer sees the connection closed, the panic goes to the diagnostics, and
// the server goes on serving and can still be closed.
func TestServerHandlerPanic(t *testing.T) {
	ts := startServer(t, func(r *Request) Reply {
		if r.Path == "/panic" {
			panic("profile bug")
		}
		return hello(r)
	})
	if _, err := try("GET", "http://"+ts.addr+"/panic", guard); !errors.Is(err, io.EOF) {
		t.Errorf("panicking handler: error %v, want EOF", err)
	}
	if res := call(t, "GET", "http://"+ts.addr+"/ok"); res.status != 200 {
		t.Errorf("after the panic the server answered %d", res.status)
	}
	ts.Close()
	if d := ts.diagnostics.String(); !strings.Contains(d, "emulator: ") || !strings.Contains(d, "profile bug") {
		t.Errorf("diagnostics %q, want the panic", d)
	}
}
