package emulator

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logLine is one call of the server's log function.
type logLine struct{ method, path, result string }

// testServer is a Server on a loopback port whose log the test can read.
type testServer struct {
	*Server
	addr string
	mu   sync.Mutex
	logs []logLine
	seen chan logLine
}

func startServer(t *testing.T, h Handler) *testServer {
	t.Helper()
	ts := &testServer{seen: make(chan logLine, 100)}
	ts.Server = NewServer(h, func(r *Request, result string) {
		l := logLine{r.Method, r.Path, result}
		ts.mu.Lock()
		ts.logs = append(ts.logs, l)
		ts.mu.Unlock()
		ts.seen <- l
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Start(ln); err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	t.Cleanup(func() { ts.Close() })
	return ts
}

// nextLog waits for the next log call.
func (ts *testServer) nextLog(t *testing.T) logLine {
	t.Helper()
	select {
	case l := <-ts.seen:
		return l
	case <-time.After(guard):
		t.Fatal("no request logged")
	}
	return logLine{}
}

// hello answers 200 "hello\n" with one header of its own.
func hello(*Request) Reply {
	return Reply{Response: Response{Status: 200, Header: []Field{{"x-test", "yes"}}, Body: []byte("hello\n")}}
}

func TestServerServesNetHTTPClient(t *testing.T) {
	got := make(chan *Request, 1)
	ts := startServer(t, func(r *Request) Reply { got <- r; return hello(r) })
	req, _ := http.NewRequest("GET", "http://"+ts.addr+"/a/b?x=1&y=2", nil)
	req.Header.Set("X-Custom", "v")
	resp, err := newClient(guard).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello\n" || resp.Header.Get("X-Test") != "yes" ||
		resp.ContentLength != 6 || !resp.Close {
		t.Errorf("response = %d %q %v len=%d close=%v", resp.StatusCode, body, resp.Header, resp.ContentLength, resp.Close)
	}
	r := <-got
	if r.Method != "GET" || r.Path != "/a/b" || r.RawQuery != "x=1&y=2" || r.Target != "/a/b?x=1&y=2" ||
		r.Proto != "HTTP/1.1" || r.Get("x-custom") != "v" {
		t.Errorf("request = %+v", r)
	}
	if tcp, ok := r.Peer.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		t.Errorf("peer = %v, want a loopback TCP address", r.Peer)
	}
	if l := ts.nextLog(t); l != (logLine{"GET", "/a/b", "200"}) {
		t.Errorf("log = %+v", l)
	}
}

// TestServerReadsBodies proves both body framings are consumed, so the
// answer is not destroyed by a reset.
func TestServerReadsBodies(t *testing.T) {
	got := make(chan *Request, 2)
	ts := startServer(t, func(r *Request) Reply { got <- r; return hello(r) })
	for _, tc := range []struct {
		name string
		body io.Reader
		te   string
	}{
		{"content-length", strings.NewReader(strings.Repeat("x", 100000)), ""},
		{"chunked", struct{ io.Reader }{strings.NewReader(strings.Repeat("y", 100000))}, "chunked"},
	} {
		resp, err := newClient(guard).Post("http://"+ts.addr+"/p", "text/plain", tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		r := <-got
		if resp.StatusCode != 200 || r.Method != "POST" || r.Get("Transfer-Encoding") != tc.te {
			t.Errorf("%s: status %d, request %+v", tc.name, resp.StatusCode, r)
		}
	}
}

func TestServerExpectContinue(t *testing.T) {
	ts := startServer(t, hello)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	io.WriteString(c, "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(c)
	interim := make([]byte, len("HTTP/1.1 100 Continue\r\n\r\n"))
	if _, err := io.ReadFull(br, interim); err != nil || string(interim) != "HTTP/1.1 100 Continue\r\n\r\n" {
		t.Fatalf("interim response %q, %v", interim, err)
	}
	io.WriteString(c, "abc")
	rest, _ := io.ReadAll(br)
	if !strings.HasPrefix(string(rest), "HTTP/1.1 200 OK\r\n") {
		t.Errorf("final response %q", rest)
	}
}

func TestServerHEADHasNoBody(t *testing.T) {
	ts := startServer(t, hello)
	got := raw(t, ts.addr, "HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n")
	want := "HTTP/1.1 200 OK\r\nx-test: yes\r\ncontent-length: 6\r\nconnection: close\r\n\r\n"
	if got != want {
		t.Errorf("HEAD answer = %q, want %q", got, want)
	}
	res := call(t, "HEAD", "http://"+ts.addr+"/x")
	if res.status != 200 || res.body != "" || res.header.Get("Content-Length") != "6" {
		t.Errorf("net/http HEAD = %+v", res)
	}
}

func TestServerRefusesMalformedRequests(t *testing.T) {
	ts := startServer(t, func(r *Request) Reply {
		t.Errorf("handler called for %+v", r)
		return hello(r)
	})
	big := strings.Repeat("a", maxHeadBytes)
	for _, tc := range []struct{ name, request, status string }{
		{"garbage", "GARBAGE\r\n\r\n", "400 Bad Request"},
		{"two spaces", "GET  /x HTTP/1.1\r\nHost: a\r\n\r\n", "400 Bad Request"},
		{"bad method", "G@T /x HTTP/1.1\r\nHost: a\r\n\r\n", "400 Bad Request"},
		{"relative target", "GET x HTTP/1.1\r\nHost: a\r\n\r\n", "400 Bad Request"},
		{"not http", "GET /x FTP/1.1\r\nHost: a\r\n\r\n", "400 Bad Request"},
		{"http/2.0", "GET /x HTTP/2.0\r\nHost: a\r\n\r\n", "505 HTTP Version Not Supported"},
		{"no host", "GET /x HTTP/1.1\r\n\r\n", "400 Bad Request"},
		{"two hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400 Bad Request"},
		{"no colon", "GET /x HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", "400 Bad Request"},
		{"space before colon", "GET /x HTTP/1.1\r\nHost : a\r\n\r\n", "400 Bad Request"},
		{"obs-fold", "GET /x HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", "400 Bad Request"},
		{"bare CR", "GET /x HTTP/1.1\r\nHost: a\rb\r\n\r\n", "400 Bad Request"},
		{"bad length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", "400 Bad Request"},
		{"signed length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx", "400 Bad Request"},
		{"two lengths", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", "400 Bad Request"},
		{"te and length", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n0\r\n\r\n", "400 Bad Request"},
		{"gzip coding", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501 Not Implemented"},
		{"bad chunk size", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400 Bad Request"},
		{"chunk without CRLF", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n", "400 Bad Request"},
		{"huge chunk", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n", "413 Content Too Large"},
		{"huge body", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", "413 Content Too Large"},
		{"huge header", "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + big + "\r\n\r\n", "431 Request Header Fields Too Large"},
		{"huge head", "GET /x HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: "+big[:1000]+"\r\n", 17) + "\r\n", "431 Request Header Fields Too Large"},
	} {
		got := raw(t, ts.addr, tc.request)
		if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status+"\r\n") || !strings.Contains(got, "\r\nconnection: close\r\n") {
			t.Errorf("%s: answer %q, want status %s", tc.name, got, tc.status)
		}
		if l := ts.nextLog(t); l.result != tc.status[:3] {
			t.Errorf("%s: logged %+v", tc.name, l)
		}
	}
}

// TestServerIgnoresSilentPeers: a peer that connects and leaves is not a
// request, so nothing is answered or logged.
func TestServerIgnoresSilentPeers(t *testing.T) {
	ts := startServer(t, hello)
	if got := raw(t, ts.addr, ""); got != "" {
		t.Errorf("answer to nothing = %q", got)
	}
	if got := raw(t, ts.addr, "GET /x HTTP/1.1\r\nHost"); got != "" {
		t.Errorf("answer to a cut-off head = %q", got)
	}
	call(t, "GET", "http://"+ts.addr+"/after")
	if l := ts.nextLog(t); l.path != "/after" {
		t.Errorf("first log = %+v, want the /after request", l)
	}
}

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
