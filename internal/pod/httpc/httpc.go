// Package httpc is a minimal HTTP/1.1 client for talking to sidecars on loopback: plain http
// only, bounded reads, no dependency on net/http. Do sends one request on a connection of its
// own; a Client sends prepared requests again and again over one persistent connection, without
// allocating once the answers repeat, which is what a long wait for a sidecar does.
//
// Why not net/http: the sidesync release build with net/http in the probe path measured
// 7.02 MB and a peak RSS of 10.2 MiB while waiting for a sidecar, against 5.93 MB and 6.8 MiB
// with this package.
package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// defaultBodyLimit is used when Do is given bodyLimit <= 0. Sidecar readiness and quit endpoints
// answer a few bytes; 64 KiB leaves room for a verbose error page without letting one grow RSS.
const defaultBodyLimit = 64 << 10

// readBufSize is the bufio buffer for the response. It also caps one chunk-size line, so it must
// stay comfortably above any real chunk header.
const readBufSize = 4 << 10

// readers recycles the read buffers: a waiting sidesync probes 50 times a second, and a fresh
// 4 KiB buffer per probe was most of what it allocated.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// Header is one header field: the name as sent or received, and its value.
type Header struct{ Name, Value string }

// Request is one HTTP/1.1 request. Do closes the connection after the response; a Client
// keeps it open for the next request when the server allows.
type Request struct {
	Method string   // "GET", "POST", "HEAD", ...; empty means GET
	URL    *url.URL // scheme must be "http"; host may be a name, IPv4 or [IPv6] literal; default port 80
	Header []Header // extra headers, sent in order after the standard ones
	Body   []byte   // sent with Content-Length; a POST/PUT/PATCH with nil Body sends "Content-Length: 0"
	// LocalAddr, when set, is the local IP the connection is made from (used by tests that need a
	// non-loopback peer address).
	LocalAddr net.IP
	// Dial, when set, makes the connection to addr (host:port) instead of a plain TCP dial; it
	// also allows https URLs, for which it must return a connection that speaks TLS. It keeps
	// crypto/tls out of this package and out of programs that never need it.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Response is what the server answered.
type Response struct {
	StatusCode int      // e.g. 503
	Status     string   // code and reason phrase as sent, e.g. "503 Service Unavailable"
	Proto      string   // e.g. "HTTP/1.1"
	Header     []Header // in order received; names as sent
	Body       []byte   // at most bodyLimit bytes (after chunked decoding)
	Truncated  bool     // the body was longer than bodyLimit (the rest was not read)
	// BodyErr is the error that cut the body short (e.g. io.ErrUnexpectedEOF, a reset, a malformed chunk),
	// nil when the body was read completely or Truncated. The status line and headers were received,
	// so the status is still authoritative.
	BodyErr error
}

// Get returns the first header value with that name (case-insensitive), or "".
func (r *Response) Get(name string) string {
	for _, h := range r.Header {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// Do sends req on a new connection and reads the response. The context bounds everything (dial,
// write, read): its deadline becomes the connection deadline, and cancelling it closes the
// connection at once. Do never reads more than bodyLimit bytes of body (bodyLimit <= 0 means 64 KiB).
// Every failure is an *Error.
func Do(ctx context.Context, req *Request, bodyLimit int) (*Response, error) {
	if bodyLimit <= 0 {
		bodyLimit = defaultBodyLimit
	}
	if req == nil {
		return nil, &Error{Op: "request", Err: errors.New("nil request")}
	}
	e := requestError(req)
	out, err := buildRequest(req, closeAfter)
	if err != nil {
		return nil, e.with("request", err)
	}
	var conn net.Conn
	if req.Dial != nil {
		conn, err = req.Dial(ctx, out.addr)
	} else {
		conn, err = dial(ctx, out.addr, req.LocalAddr)
	}
	if err != nil {
		return nil, e.with("dial", contextError(ctx, err))
	}
	return exchange(ctx, conn, out.method, out.raw, bodyLimit, e)
}

// requestError is the *Error of a failure of req, to be completed with its Op and cause.
func requestError(req *Request) *Error {
	e := &Error{Op: "request", URL: redact(req.URL), method: req.Method}
	switch {
	case e.method == "":
		e.method = "GET"
	case !IsToken(e.method):
		e.method = "" // keep a CR or LF out of log lines; the cause quotes it
	}
	return e
}

// dial connects to addr. The name "localhost" is the loopback interface itself, never looked
// up: 127.0.0.1 is tried, then ::1, whatever /etc/hosts or DNS say (RFC 6761 section 6.3), so
// that a sidecar on either family is reached and a quit meant for this pod's own sidecar can
// never be sent elsewhere by an odd hosts file. Other names go through the normal resolver, and
// the dialer tries every address they resolve to.
func dial(ctx context.Context, addr string, local net.IP) (net.Conn, error) {
	return dialUntil(ctx, addr, local, time.Time{})
}

// Dial connects to addr as dial does ("localhost" is never looked up), within deadline (zero:
// ctx alone bounds it). It is for the TCP readiness check, which needs a connection and no HTTP.
func Dial(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
	return dialUntil(ctx, addr, nil, deadline)
}

// dialUntil is dial with a deadline of its own (zero: ctx alone bounds it).
func dialUntil(ctx context.Context, addr string, local net.IP, deadline time.Time) (net.Conn, error) {
	// TCP keep-alive probes only matter on connections that idle for minutes; a Do connection
	// carries one request and a Client's is used every few milliseconds, so skip setting them up.
	d := net.Dialer{KeepAlive: -1, Deadline: deadline}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !IsLocalhost(host) {
		return d.DialContext(ctx, "tcp", addr)
	}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
	if err == nil || ctx.Err() != nil {
		return conn, err
	}
	if conn6, err6 := d.DialContext(ctx, "tcp", net.JoinHostPort("::1", port)); err6 == nil {
		return conn6, nil
	}
	return nil, err // 127.0.0.1's failure: ::1 may not even exist here
}

// IsLocalhost reports whether host is the name "localhost" (any case, with or without the
// final dot), which dial takes to mean the loopback addresses without a lookup.
func IsLocalhost(host string) bool {
	return strings.EqualFold(strings.TrimSuffix(host, "."), "localhost")
}

// exchange writes raw on conn, reads the response and closes conn. It is separate from Do so the
// response parser can be exercised over any net.Conn (the fuzz test uses net.Pipe). e carries
// the method and URL for errors.
func exchange(ctx context.Context, conn net.Conn, method string, raw []byte, limit int, e *Error) (*Response, error) {
	defer conn.Close()
	// Closing the connection is the only way to interrupt a blocked Read or Write at once; the
	// deadline alone would not notice a plain cancel.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(d); err != nil {
			return nil, e.with("write", contextError(ctx, err))
		}
	}
	// One Write so a server never sees a half request from us unless the connection breaks.
	if _, err := conn.Write(raw); err != nil {
		return nil, e.with("write", contextError(ctx, err))
	}
	e.Sent = true
	br := readers.Get().(*bufio.Reader)
	br.Reset(conn)
	defer func() { br.Reset(nil); readers.Put(br) }()
	resp := new(Response)
	if _, err := readResponse(br, resp, method, limit); err != nil {
		return nil, e.with("read", contextError(ctx, err))
	}
	if resp.BodyErr != nil {
		resp.BodyErr = contextError(ctx, resp.BodyErr)
	}
	return resp, nil
}

// readResponse reads one response from br into resp, reusing resp's buffers. A failure to read
// the head is the error; one inside the body goes to resp.BodyErr. framed reports whether the
// body ended where the message said (see readBody).
func readResponse(br *bufio.Reader, resp *Response, method string, limit int) (framed bool, err error) {
	if err := readHead(br, resp); err != nil {
		return false, err
	}
	framed, resp.BodyErr = readBody(br, resp, method, limit)
	return framed, nil
}

// contextError replaces err by the context's error when the context is what ended the exchange:
// the caller then sees context.Canceled or context.DeadlineExceeded instead of "use of closed
// network connection" or "i/o timeout". A custom cause is kept alongside the standard error so
// that errors.Is works for both.
func contextError(ctx context.Context, err error) error {
	return deadlineError(ctx, time.Time{}, err)
}

// deadlineError is contextError for an exchange that also had a deadline of its own (a
// Client's Timeout): a timeout at or after it is context.DeadlineExceeded too, as it would be
// had the deadline come from a context.
func deadlineError(ctx context.Context, deadline time.Time, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, ctxErr) {
			return cause
		}
		return fmt.Errorf("%w: %w", ctxErr, cause)
	}
	// The connection deadline equals the context deadline, and the socket may report it a hair
	// before the context's own timer fires.
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if !deadline.IsZero() && isTimeout(err) && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return err
}

// redact renders u without userinfo, which is never sent and must not end up in logs.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	return c.String()
}
