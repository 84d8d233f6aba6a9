package httpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Client sends Prepared requests over one connection, which it keeps open from one request to
// the next when the server allows it (RFC 9112 section 9.3, persistent connections): the answer
// was HTTP/1.1 without "Connection: close", and its body was read to the end its
// Content-Length or chunked framing gave (not truncated, not cut short, not delimited by the
// server closing). Otherwise the connection is closed after the response, as it is on any
// failure and by Close. The end of a request's context closes the connection at once when it
// interrupts the request; one that ends after Do returned, as a per-request context does,
// leaves the idle connection to the next request.
//
// A server may close an idle connection at any time. When a request sent again on a kept
// connection meets a closed one (the write fails, or EOF or a reset comes before any byte of an
// answer), a Client sends it once more on a fresh connection, but only a safe method (GET,
// HEAD, OPTIONS, TRACE: RFC 9110 section 9.2.1), which the server may see twice without harm
// (section 9.2.2). Other methods always go out on a fresh connection, so that they are never
// retried: a POST that meets a closed connection fails as it would with Do.
//
// Once the connection is open and the answers repeat, Do allocates nothing: the request bytes
// are the Prepared's, the read buffer and the Response are the Client's own, a status or header
// field that reads as it did in the previous response keeps its string, per-request deadlines
// are the connection's, and the context is watched once for all the requests made under it.
//
// The zero value is ready to use. A Client is not safe for concurrent use, must not be copied
// after first use, and should be closed when no longer needed.
type Client struct {
	// Timeout bounds each request, connecting included, in addition to the context given to
	// Do. Zero means the context alone.
	Timeout time.Duration
	// BodyLimit is the most of a body a response keeps; <= 0 means 64 KiB. A longer body is
	// Truncated, and the connection closed rather than drained.
	BodyLimit int

	conn net.Conn  // the open connection, idle between calls; nil when there is none
	from *Prepared // the request conn was made for
	in   counter   // conn, counting the bytes of the current answer
	br   *bufio.Reader
	resp Response

	guard guard           // shared with the watch of the context
	stop  func() bool     // stops the watch of the context of the last request
	done  <-chan struct{} // that context's Done channel
}

// guard is what the watch of a context shares with its Client: the end of a context closes the
// connection when a request made under that context is in flight, and only then.
type guard struct {
	mu       sync.Mutex
	conn     net.Conn
	inflight <-chan struct{} // the Done channel of the request in flight; nil when idle
	fired    bool            // that context ended during the request
}

// fire is the watch of the context whose Done channel is done.
func (g *guard) fire(done <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight != done {
		return // idle, or a request under another context
	}
	g.fired = true
	if g.conn != nil {
		g.conn.Close() // the only way to interrupt a blocked Read or Write at once
	}
}

// begin marks a request under the context whose Done channel is done as in flight.
func (g *guard) begin(done <-chan struct{}) {
	g.mu.Lock()
	g.inflight, g.fired = done, false
	g.mu.Unlock()
}

// end marks the request done and reports whether its context's end closed the connection.
func (g *guard) end() (fired bool) {
	g.mu.Lock()
	fired = g.fired
	g.inflight, g.fired = nil, false
	g.mu.Unlock()
	return fired
}

// setConn puts conn under watch; one made after the context ended is closed at once.
func (g *guard) setConn(conn net.Conn) {
	g.mu.Lock()
	g.conn = conn
	if g.fired && conn != nil {
		conn.Close()
	}
	g.mu.Unlock()
}

// counter counts what is read through it, to tell a connection that gave no answer at all.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Do sends p and reads the response, reusing the open connection when it can carry p. ctx
// bounds the exchange as in Do, as does Timeout: cancelling ctx closes the connection at once.
// Every failure is an *Error, classified as Do's are (Refused, ClosedAfterSend, Timeout).
//
// The Response belongs to the Client: it is valid until the next call of Do or Close, after
// which its Body and Header may hold the next answer.
func (c *Client) Do(ctx context.Context, p *Prepared) (*Response, error) {
	if p == nil {
		return nil, &Error{Op: "request", Err: errors.New("nil request")}
	}
	c.watch(ctx)
	c.guard.begin(ctx.Done())
	defer c.finish()
	// Checked once the request is in flight: from here on the end of ctx closes the connection.
	if err := ctx.Err(); err != nil {
		return nil, p.fail("dial", false, contextError(ctx, err))
	}
	deadline := c.deadline(ctx)
	reused := c.keepFor(p)
	if !reused {
		if err := c.dial(ctx, p, deadline); err != nil {
			return nil, err
		}
	}
	resp, err := c.roundTrip(ctx, p, deadline)
	if err != nil && reused && p.idempotent && c.stale(ctx, err) {
		// The server had closed the idle connection: the request never reached it.
		if err := c.dial(ctx, p, deadline); err != nil {
			return nil, err
		}
		resp, err = c.roundTrip(ctx, p, deadline)
	}
	return resp, err
}

// Close closes the open connection, if any, stops watching the last context and gives back the
// read buffer. The Client can be used again afterwards.
func (c *Client) Close() error {
	if c.stop != nil {
		c.stop()
	}
	c.stop, c.done = nil, nil
	c.drop()
	if c.br != nil {
		c.br.Reset(nil)
		readers.Put(c.br)
		c.br = nil
	}
	return nil
}

// watch makes the end of ctx close the connection of a request in flight under it. It sets up
// one watch per context, which serves every request made under it; a context that never ends
// needs none.
func (c *Client) watch(ctx context.Context) {
	done := ctx.Done()
	if done == c.done {
		return
	}
	if c.stop != nil {
		c.stop() // a watch that has fired or is firing finds no request of its context in flight
	}
	c.stop, c.done = nil, done
	if done != nil {
		g := &c.guard
		c.stop = context.AfterFunc(ctx, func() { g.fire(done) })
	}
}

// finish ends the request in flight; a connection closed by the end of its context is dropped.
func (c *Client) finish() {
	if c.guard.end() {
		c.drop()
	}
}

// deadline is the earlier of ctx's deadline and Timeout from now; zero when there is neither.
func (c *Client) deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	if c.Timeout > 0 {
		if own := time.Now().Add(c.Timeout); d.IsZero() || own.Before(d) {
			d = own
		}
	}
	return d
}

// keepFor reports whether the open connection can carry p, closing it when it cannot.
func (c *Client) keepFor(p *Prepared) bool {
	if c.conn == nil {
		return false
	}
	if !p.idempotent || !c.from.shares(p) {
		c.drop()
		return false
	}
	return true
}

// dial replaces the connection by a new one for p.
func (c *Client) dial(ctx context.Context, p *Prepared, deadline time.Time) error {
	c.drop()
	conn, err := p.connect(ctx, deadline)
	if err != nil {
		return p.dialFailure(ctx, deadline, err)
	}
	c.conn, c.from, c.in.r = conn, p, conn
	c.guard.setConn(conn)
	if c.br == nil {
		c.br = readers.Get().(*bufio.Reader)
	}
	c.br.Reset(&c.in)
	return nil
}

// drop closes the connection.
func (c *Client) drop() {
	if c.conn != nil {
		c.guard.setConn(nil)
		c.conn.Close()
	}
	c.conn, c.from, c.in.r = nil, nil, nil
}

// roundTrip sends p on the open connection and reads the answer into c.resp. It closes the
// connection unless the answer allows another request on it.
func (c *Client) roundTrip(ctx context.Context, p *Prepared, deadline time.Time) (*Response, error) {
	// Set on every request: it also clears the previous request's deadline from a kept connection.
	if err := c.conn.SetDeadline(deadline); err != nil {
		c.drop()
		return nil, p.fail("write", false, deadlineError(ctx, deadline, err))
	}
	c.in.n = 0
	if _, err := c.conn.Write(p.raw); err != nil {
		c.drop()
		return nil, p.fail("write", false, deadlineError(ctx, deadline, err))
	}
	limit := c.BodyLimit
	if limit <= 0 {
		limit = defaultBodyLimit
	}
	resp := &c.resp
	framed, err := readResponse(c.br, resp, p.method, limit)
	if err != nil {
		c.drop()
		return nil, p.fail("read", true, deadlineError(ctx, deadline, err))
	}
	if resp.BodyErr != nil {
		resp.BodyErr = deadlineError(ctx, deadline, resp.BodyErr)
	}
	if !framed || !persistent(resp, c.br) {
		c.drop()
	}
	return resp, nil
}

// stale reports whether err, from a kept connection, means that the server had closed it before
// the request arrived: the write failed, or EOF or a reset came before any byte of an answer.
// A timeout, a malformed answer or one cut short are real answers and are never retried.
func (c *Client) stale(ctx context.Context, err error) bool {
	e, ok := errors.AsType[*Error](err)
	if ctx.Err() != nil || c.in.n > 0 || !ok || e.Op == "dial" {
		return false
	}
	return errors.Is(e.Err, io.EOF) || errors.Is(e.Err, syscall.ECONNRESET) || errors.Is(e.Err, syscall.EPIPE)
}

// persistent reports whether the connection can carry another request after resp, whose body
// was framed (RFC 9112 section 9.3): an HTTP/1.1 answer without "Connection: close", read to its
// end, with nothing more from the server waiting in the buffer (which could only be garbage).
func persistent(resp *Response, br *bufio.Reader) bool {
	return resp.Proto == "HTTP/1.1" && !resp.Truncated && resp.BodyErr == nil && br.Buffered() == 0 &&
		!hasToken(resp, "Connection", "close")
}

// hasToken reports whether a comma-separated list in the named fields holds token, ignoring case.
func hasToken(resp *Response, name, token string) bool {
	for _, h := range resp.Header {
		if !strings.EqualFold(h.Name, name) {
			continue
		}
		for rest, more := h.Value, true; more; {
			var t string
			t, rest, more = strings.Cut(rest, ",")
			if strings.EqualFold(strings.Trim(t, " \t"), token) {
				return true
			}
		}
	}
	return false
}
