package emulator

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// logLine is one call of the server's log function.
type logLine struct{ method, path, result string }

// testServer is a Server on a loopback port whose log and diagnostics
// the test can read.
type testServer struct {
	*Server
	addr        string
	seen        chan logLine
	diagnostics lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startServer(t *testing.T, h Handler) *testServer {
	t.Helper()
	ts := &testServer{seen: make(chan logLine, 100)}
	ts.Server = NewServer(h, func(r *Request, result string) {
		ts.seen <- logLine{r.Method, r.Path, result}
	}, &ts.diagnostics)
	ln := mustListen(t)
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

// logged returns the log call made already, if any, without waiting: a
// request is logged before it is answered, so once the answer is in, its
// log call is too.
func (ts *testServer) logged() (logLine, bool) {
	select {
	case l := <-ts.seen:
		return l, true
	default:
		return logLine{}, false
	}
}

// hello answers 200 "hello\n" with one header of its own.
func hello(*Request) Reply {
	return Reply{Response: Response{Status: 200, Header: []Field{{"x-test", "yes"}}, Body: []byte("hello\n")}}
}

func TestServerServesNetHTTPClient(t *testing.T) {
	got := make(chan *Request, 1)
	ts := startServer(t, func(r *Request) Reply { got <- r; return hello(r) })
	req, _ := http.NewRequest("GET", "http://"+ts.addr+"/a/b%2Fc?x=1&y=2", nil)
	req.Header.Set("X-Custom", "v")
	resp, err := newClient(guard).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello\n" || resp.Header.Get("X-Test") != "yes" || resp.ContentLength != 6 {
		t.Errorf("response = %d %q %v len=%d", resp.StatusCode, body, resp.Header, resp.ContentLength)
	}
	r := <-got
	if r.Method != "GET" || r.Path != "/a/b%2Fc" || r.RawQuery != "x=1&y=2" || r.Get("x-custom") != "v" {
		t.Errorf("request = %+v", r)
	}
	if !r.FromLoopback() || !strings.HasPrefix(r.Peer, "127.0.0.1:") {
		t.Errorf("peer = %q, want a loopback address", r.Peer)
	}
	if l := ts.nextLog(t); l != (logLine{"GET", "/a/b%2Fc", "200"}) {
		t.Errorf("log = %+v", l)
	}
}

// readAnswer reads one response to method from br.
func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(body)
}

// TestServerKeepAlive: requests on one connection, one after the other
// and pipelined, each get their answer and their log call in order, until
// the client asks to close.
func TestServerKeepAlive(t *testing.T) {
	ts := startServer(t, hello)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != "hello\n" || resp.Close {
		t.Errorf("first answer %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	io.WriteString(c, "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if resp, body := readAnswer(t, br, "POST"); resp.StatusCode != 200 || body != "hello\n" || resp.Close {
		t.Errorf("second answer %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != "hello\n" || !resp.Close {
		t.Errorf("third answer %d %q close=%v, want Connection: close", resp.StatusCode, body, resp.Close)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after Connection: close: %q, %v; want EOF", rest, err)
	}
	for _, path := range []string{"/1", "/2", "/3"} {
		if l := ts.nextLog(t); l.path != path || l.result != "200" {
			t.Errorf("log %+v, want %s 200", l, path)
		}
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
		if resp.StatusCode != 200 || r.Method != "POST" {
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
	if resp, body := readAnswer(t, br, "POST"); resp.StatusCode != 200 || body != "hello\n" {
		t.Errorf("final response %d %q", resp.StatusCode, body)
	}
}

// TestServerHeaderFields: an answer carries exactly the Response's fields
// plus content-length, even for HEAD (without the body): no date, and no
// sniffed content type unless asked for.
func TestServerHeaderFields(t *testing.T) {
	ts := startServer(t, func(r *Request) Reply {
		if r.Path == "/sniff" {
			return Reply{Response: Response{Status: 503, Body: []byte("not ready"), Sniff: true}}
		}
		return hello(r)
	})
	for _, tc := range []struct {
		method, path, body string
		header             http.Header
	}{
		{"GET", "/x", "hello\n", http.Header{"X-Test": {"yes"}, "Content-Length": {"6"}}},
		{"HEAD", "/x", "", http.Header{"X-Test": {"yes"}, "Content-Length": {"6"}}},
		{"GET", "/sniff", "not ready", http.Header{"Content-Type": {goTextType}, "Content-Length": {"9"}}},
		{"HEAD", "/sniff", "", http.Header{"Content-Type": {goTextType}, "Content-Length": {"9"}}},
	} {
		answer := raw(t, ts.addr, tc.method+" "+tc.path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := readAnswer(t, bufio.NewReader(strings.NewReader(answer)), tc.method)
		if body != tc.body || !equalHeader(resp.Header, tc.header) {
			t.Errorf("%s %s: header %v body %q, want %v %q", tc.method, tc.path, resp.Header, body, tc.header, tc.body)
		}
	}
	res := call(t, "HEAD", "http://"+ts.addr+"/x")
	if res.status != 200 || res.body != "" || res.header.Get("Content-Length") != "6" {
		t.Errorf("net/http HEAD = %+v", res)
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}
