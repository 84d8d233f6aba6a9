package httpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestClientRetriesStaleConnection: a kept connection that the server closed while it was idle
// (cleanly or with a reset) costs nothing: the request goes out again, once, on a new one.
func TestClientRetriesStaleConnection(t *testing.T) {
	for _, reset := range []bool{false, true} {
		name := map[bool]string{false: "closed", true: "reset"}[reset]
		t.Run(name, func(t *testing.T) {
			closed := make(chan struct{}, 1)
			s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
				if s.next(br) == nil {
					return
				}
				io.WriteString(c, live)
				if s.accepted.Load() == 1 {
					// The first connection goes away after its first answer, as an idle
					// timeout would close it, without saying so in the answer.
					if reset {
						c.(*net.TCPConn).SetLinger(0)
					}
					c.Close()
					closed <- struct{}{}
					return
				}
				keepAnswering(live)(s, c, br)
			})
			var c Client
			defer c.Close()
			p := s.prepare(t, "GET", "/ready")
			if _, err := do(t, &c, p); err != nil {
				t.Fatal(err)
			}
			<-closed
			for i := range 3 {
				resp, err := do(t, &c, p)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("request %d after the close: %v, want 200", i+2, err)
				}
			}
			if got, want := s.accepted.Load(), int64(2); got != want {
				t.Errorf("the server accepted %d connections, want %d", got, want)
			}
			if got, want := s.requests.Load(), int64(4); got != want {
				t.Errorf("the server read %d requests, want %d (each exactly once)", got, want)
			}
		})
	}
}

// TestClientRetriesOnce: when the new connection fails too, that failure is the answer, and
// it is classified as Do's would be.
func TestClientRetriesOnce(t *testing.T) {
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		if s.next(br) != nil && s.accepted.Load() == 1 {
			io.WriteString(c, live)
		}
		// Later connections take the request and go away without answering.
	})
	var c Client
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	if _, err := do(t, &c, p); err != nil {
		t.Fatal(err)
	}
	_, err := do(t, &c, p)
	if !ClosedAfterSend(err) || !errors.Is(err, io.EOF) {
		t.Errorf("err = %v, want the fresh connection's EOF after the request", err)
	}
	if got, want := s.accepted.Load(), int64(2); got != want {
		t.Errorf("the server accepted %d connections, want %d: one retry only", got, want)
	}
}

// TestClientNoRetryAfterAnswerStarted: a connection that breaks inside an answer gave a real,
// broken answer; sending again could hide a sidecar that crashes on every probe.
func TestClientNoRetryAfterAnswerStarted(t *testing.T) {
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		s.next(br)
		io.WriteString(c, live)
		s.next(br)
		io.WriteString(c, "HTTP/1.1 200 O") // and close
	})
	var c Client
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	if _, err := do(t, &c, p); err != nil {
		t.Fatal(err)
	}
	_, err := do(t, &c, p)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !ClosedAfterSend(err) {
		t.Errorf("err = %v, want io.ErrUnexpectedEOF after the request", err)
	}
	if got := s.accepted.Load(); got != 1 {
		t.Errorf("the server accepted %d connections, want 1: no retry", got)
	}
}

// TestClientUnsafeMethodsFresh: a POST always gets a connection of its own, so that it is
// never sent twice; it is never retried, and its failure keeps Do's classification.
func TestClientUnsafeMethodsFresh(t *testing.T) {
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		req := s.next(br)
		if req == nil || req.URL.Path == "/quitquitquit" {
			return // takes the request and exits, as a sidecar told to quit does
		}
		io.WriteString(c, live)
		keepAnswering(live)(s, c, br)
	})
	var c Client
	defer c.Close()
	get, post := s.prepare(t, "GET", "/ready"), s.prepare(t, "POST", "/quitquitquit")
	if _, err := do(t, &c, get); err != nil {
		t.Fatal(err)
	}
	_, err := do(t, &c, post)
	if !ClosedAfterSend(err) {
		t.Errorf("POST: err = %v, want ClosedAfterSend", err)
	}
	if got, want := s.accepted.Load(), int64(2); got != want {
		t.Errorf("the server accepted %d connections, want %d", got, want)
	}
	if got, want := s.requests.Load(), int64(2); got != want {
		t.Errorf("the server read %d requests, want %d: the POST exactly once", got, want)
	}
}

// TestClientCancel: ending the context closes the connection at once, while waiting for an
// answer on a kept connection and while it is idle.
func TestClientCancel(t *testing.T) {
	gone, waiting := make(chan struct{}), make(chan struct{})
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		s.next(br)
		io.WriteString(c, live)
		s.next(br) // the second request is never answered
		close(waiting)
		waitClose(c)
		close(gone)
	})
	var c Client
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	ctx, cancel := context.WithCancelCause(context.Background())
	if _, err := c.Do(ctx, p); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("SIGTERM")
	go func() {
		<-waiting
		cancel(cause)
	}()
	start := time.Now()
	_, err := c.Do(ctx, p)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) || Timeout(err) {
		t.Errorf("err = %v, want context.Canceled with the cause", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Do returned %v after the request, want at once", took)
	}
	select {
	case <-gone:
	case <-time.After(testTimeout):
		t.Fatal("the server never saw the connection close")
	}
	// A context that has ended sends nothing more.
	if _, err := c.Do(ctx, p); !errors.Is(err, context.Canceled) {
		t.Errorf("Do after the end: %v, want context.Canceled", err)
	}
	if got := s.requests.Load(); got != 2 {
		t.Errorf("the server read %d requests, want 2", got)
	}
}

// TestClientIdleOutlivesContext: a context that ends after its request, as a per-request one
// does, leaves the idle connection to the next request; Close closes it.
func TestClientIdleOutlivesContext(t *testing.T) {
	gone := make(chan struct{})
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		keepAnswering(live)(s, c, br)
		close(gone)
	})
	var c Client
	p := s.prepare(t, "GET", "/ready")
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := c.Do(ctx, p)
		cancel()
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if got, want := s.accepted.Load(), int64(1); got != want {
		t.Errorf("the server accepted %d connections, want %d", got, want)
	}
	c.Close()
	select {
	case <-gone:
	case <-time.After(testTimeout):
		t.Fatal("the connection stayed open after Close")
	}
}

// TestClientTimeout: Timeout bounds each request like a context deadline would, and a
// connection that timed out is not used again.
func TestClientTimeout(t *testing.T) {
	s := serveCounted(t, func(s *conns, c net.Conn, br *bufio.Reader) {
		if s.accepted.Load() == 1 {
			s.next(br)
			waitClose(c) // hung
			return
		}
		keepAnswering(live)(s, c, br)
	})
	c := Client{Timeout: 50 * time.Millisecond}
	defer c.Close()
	p := s.prepare(t, "GET", "/ready")
	_, err := c.Do(context.Background(), p)
	if !Timeout(err) || !errors.Is(err, context.DeadlineExceeded) || ClosedAfterSend(err) {
		t.Errorf("err = %v, want a timeout that is context.DeadlineExceeded", err)
	}
	if _, err := c.Do(context.Background(), p); err != nil {
		t.Errorf("Do after a timeout: %v", err)
	}
	if got, want := s.accepted.Load(), int64(2); got != want {
		t.Errorf("the server accepted %d connections, want %d", got, want)
	}
}

func TestClientRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := Prepare(&Request{URL: mustURL(t, "http://"+addr+"/ready")})
	if err != nil {
		t.Fatal(err)
	}
	var c Client
	defer c.Close()
	_, err = do(t, &c, p)
	var e *Error
	if !Refused(err) || !errors.As(err, &e) || e.Op != "dial" || e.Sent || ClosedAfterSend(err) || Timeout(err) {
		t.Errorf("err = %#v, want connection refused at dial", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("err = %v, want ECONNREFUSED", err)
	}
}

func TestPrepareRejectsBadRequests(t *testing.T) {
	for _, req := range []*Request{
		nil,
		{},
		{URL: mustURL(t, "https://h/")},
		{Method: "GE T", URL: mustURL(t, "http://h/")},
		{URL: mustURL(t, "http://h/"), Header: []Header{{"Connection", "close"}}},
	} {
		_, err := Prepare(req)
		var e *Error
		if !errors.As(err, &e) || e.Op != "request" || e.Sent {
			t.Errorf("Prepare(%+v) = %v, want *Error with Op request", req, err)
		}
	}
}
