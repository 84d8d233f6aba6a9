package httpc

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// conns serves scripted connections on loopback and counts them and the requests they carry.
type conns struct {
	addr     string
	accepted atomic.Int64
	requests atomic.Int64
}

// serveCounted is mustServeRaw that counts connections; script gets the connection's reader,
// through which it reads requests with next.
func serveCounted(t *testing.T, script func(s *conns, c net.Conn, br *bufio.Reader)) *conns {
	t.Helper()
	s := &conns{}
	s.addr = mustServeRaw(t, func(c net.Conn) {
		s.accepted.Add(1)
		script(s, c, bufio.NewReader(c))
	})
	return s
}

// next reads one request and counts it; it returns the request, or nil when the peer is gone.
func (s *conns) next(br *bufio.Reader) *http.Request {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil
	}
	io.Copy(io.Discard, req.Body)
	s.requests.Add(1)
	return req
}

// keepAnswering answers every request of a connection with answer, until the peer closes.
func keepAnswering(answer string) func(s *conns, c net.Conn, br *bufio.Reader) {
	return func(s *conns, c net.Conn, br *bufio.Reader) {
		for s.next(br) != nil {
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	}
}

func (s *conns) prepare(t testing.TB, method, path string) *Prepared {
	t.Helper()
	p, err := Prepare(&Request{Method: method, URL: mustURL(t, "http://"+s.addr+path)})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p
}

// do runs c.Do with testTimeout.
func do(t testing.TB, c *Client, p *Prepared) (*Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return c.Do(ctx, p)
}

const live = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nLIVE\n"

// TestClientKeepsConnection: requests go out without "Connection: close" and share one
// connection while the answers allow it.
func TestClientKeepsConnection(t *testing.T) {
	closeAsked := make(chan bool, 10)
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		for req := s.next(br); req != nil; req = s.next(br) {
			closeAsked <- req.Close
			io.WriteString(c, live)
		}
	})
	var c Client
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	for i := range 5 {
		resp, err := do(t, &c, p)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if got, want := string(resp.Body), "LIVE\n"; resp.StatusCode != 200 || got != want {
			t.Fatalf("request %d: %d %q, want 200 %q", i+1, resp.StatusCode, got, want)
		}
		if <-closeAsked {
			t.Errorf("request %d asked the server to close the connection", i+1)
		}
	}
	if got, want := s.accepted.Load(), int64(1); got != want {
		t.Errorf("the server accepted %d connections, want %d", got, want)
	}
}

// TestClientClosesConnection: an answer that does not allow another request on its connection
// makes the next request use a new one, and is itself read as Do reads it.
func TestClientClosesConnection(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		method string
		limit  int
		close  bool // the server closes after its answer (a body read until EOF needs it)
		keep   bool
	}{
		{name: "Content-Length", answer: live, keep: true},
		{name: "chunked with trailers", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nLIVE\n\r\n0\r\nX: y\r\n\r\n", keep: true},
		{name: "204 without length", answer: "HTTP/1.1 204 No Content\r\n\r\n", keep: true},
		{name: "HEAD", method: "HEAD", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", keep: true},
		{name: "Connection: close", answer: "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 5\r\n\r\nLIVE\n"},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nLIVE\n"},
		{name: "body until EOF", answer: "HTTP/1.1 200 OK\r\n\r\nLIVE\n", close: true},
		{name: "truncated body", answer: live, limit: 4},
		{name: "bad framing", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nLIVE\n"},
		{name: "more than the length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nLIVE\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
				for s.next(br) != nil {
					io.WriteString(c, tt.answer)
					if tt.close {
						return
					}
				}
			})
			c := Client{BodyLimit: tt.limit}
			defer c.Close()
			p := s.prepare(t, tt.method, "/")
			for i := range 2 {
				if _, err := do(t, &c, p); err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
			}
			want := int64(2)
			if tt.keep {
				want = 1
			}
			if got := s.accepted.Load(); got != want {
				t.Errorf("two requests took %d connections, want %d", got, want)
			}
		})
	}
}

// TestClientAnswersChange: the reused Response holds each answer exactly, whether its fields
// and body are shorter, longer or the same as the previous one's.
func TestClientAnswersChange(t *testing.T) {
	answers := []string{
		"HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nX-A: 1\r\nContent-Length: 13\r\n\r\nINITIALIZING\n",
		"HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nX-A: 1\r\nContent-Length: 13\r\n\r\nINITIALIZING\n",
		"HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nContent-Length: 9\r\n\r\nDRAINING\n",
		"HTTP/1.1 200\r\nServer: envoy\r\nX-B: 2\r\nX-C: 3\r\nContent-Length: 5\r\n\r\nLIVE\n",
		"HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nX-A: 1\r\nContent-Length: 13\r\n\r\nINITIALIZING\n",
	}
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		for i := 0; s.next(br) != nil; i++ {
			io.WriteString(c, answers[i%len(answers)])
		}
	})
	var c Client
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	for i, answer := range answers {
		got, err := do(t, &c, p)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		want, err := exchangeBytes("GET", answer, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffResponses(want, got); d != "" {
			t.Errorf("request %d: %s", i+1, d)
		}
	}
	if got := s.accepted.Load(); got != 1 {
		t.Errorf("the server accepted %d connections, want 1", got)
	}
}

// exchangeBytes reads answer as a fresh response.
func exchangeBytes(method, answer string, limit int) (*Response, error) {
	if limit <= 0 {
		limit = defaultBodyLimit
	}
	resp := new(Response)
	_, err := readResponse(bufio.NewReader(strings.NewReader(answer)), resp, method, limit)
	return resp, err
}

// diffResponses describes how got differs from want, or returns "".
func diffResponses(want, got *Response) string {
	var b strings.Builder
	if want.StatusCode != got.StatusCode || want.Status != got.Status || want.Proto != got.Proto {
		b.WriteString("status line " + got.Proto + " " + got.Status + ", want " + want.Proto + " " + want.Status + "; ")
	}
	if len(want.Header) != len(got.Header) {
		b.WriteString("header count differs; ")
	} else {
		for i := range want.Header {
			if want.Header[i] != got.Header[i] {
				b.WriteString("header " + got.Header[i].Name + ": " + got.Header[i].Value + ", want " + want.Header[i].Name + ": " + want.Header[i].Value + "; ")
			}
		}
	}
	if !bytes.Equal(want.Body, got.Body) || want.Truncated != got.Truncated {
		b.WriteString("body " + string(got.Body) + ", want " + string(want.Body) + "; ")
	}
	if (want.BodyErr == nil) != (got.BodyErr == nil) || want.BodyErr != nil && want.BodyErr.Error() != got.BodyErr.Error() {
		b.WriteString("body errors differ; ")
	}
	return b.String()
}

// TestClientAllocations: once the connection is open, a repeated answer costs no allocation.
func TestClientAllocations(t *testing.T) {
	addr := serveFast(t, "HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nINITIALIZING\n")
	p, err := Prepare(&Request{URL: mustURL(t, "http://"+addr+"/ready")})
	if err != nil {
		t.Fatal(err)
	}
	c := Client{Timeout: testTimeout}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Do(ctx, p); err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("Do allocated %v times per request, want 0", allocs)
	}
}

// serveFast answers every request with answer on kept connections, allocating nothing per
// request, so that an allocation count sees the client's alone.
func serveFast(t testing.TB, answer string) string {
	t.Helper()
	reply := []byte(answer)
	return mustServeRaw(t, func(c net.Conn) {
		buf := make([]byte, 4<<10)
		n := 0
		for {
			if end := bytes.Index(buf[:n], []byte("\r\n\r\n")); end >= 0 {
				if _, err := c.Write(reply); err != nil {
					return
				}
				n = copy(buf, buf[end+4:n])
				continue
			}
			m, err := c.Read(buf[n:])
			if err != nil || n+m == len(buf) {
				return
			}
			n += m
		}
	})
}

// BenchmarkClientDo is one request of a Client on a kept connection, the probe of a wait.
func BenchmarkClientDo(b *testing.B) {
	addr := serveFast(b, "HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nContent-Length: 13\r\n\r\nINITIALIZING\n")
	p, err := Prepare(&Request{URL: mustURL(b, "http://"+addr+"/ready")})
	if err != nil {
		b.Fatal(err)
	}
	c := Client{Timeout: testTimeout}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
