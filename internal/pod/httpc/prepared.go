package httpc

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"
)

// Prepared is a request validated and serialised once, for a Client to send any number of times
// without building it again.
type Prepared struct {
	method     string
	addr       string // host:port to dial
	endpoint   string // addr and local address: requests with the same one can share a connection
	raw        []byte // the whole request, without "Connection: close"
	url        string // redacted, for errors
	local      net.IP
	dial       func(ctx context.Context, addr string) (net.Conn, error)
	idempotent bool
	fast       *Connector // for a loopback address without a Dial hook or a local address; else nil
	refused    *Error     // fast's refusal as a failure of p, built once: a refusal repeats
}

// Prepare validates req and serialises it for a Client. Like Do's, its errors are *Error with
// Op "request".
func Prepare(req *Request) (*Prepared, error) {
	if req == nil {
		return nil, &Error{Op: "request", Err: errors.New("nil request")}
	}
	out, err := buildRequest(req, keepOpen)
	if err != nil {
		return nil, requestError(req).with("request", err)
	}
	local := slices.Clone(req.LocalAddr)
	var fast *Connector
	if req.Dial == nil && local == nil {
		fast = NewConnector(out.addr)
	}
	return &Prepared{
		fast:     fast,
		method:   out.method,
		addr:     out.addr,
		endpoint: out.addr + " from " + local.String(),
		raw:      out.raw,
		url:      redact(req.URL),
		local:    local,
		dial:     req.Dial,
		// The safe methods (RFC 9110 section 9.2.1), which a client may send again on its own.
		idempotent: out.method == "GET" || out.method == "HEAD" || out.method == "OPTIONS" || out.method == "TRACE",
	}, nil
}

// fail returns the *Error of a failed exchange of p.
func (p *Prepared) fail(op string, sent bool, err error) *Error {
	return &Error{Op: op, URL: p.url, Sent: sent, Err: err, method: p.method}
}

// dialFailure is the *Error of a failed connect of p. A refusal that the Connector reported is
// the same error value every time, and so is this: a sidecar that is not listening yet is
// probed 50 times a second, and a new error each time would grow the heap with the wait.
func (p *Prepared) dialFailure(ctx context.Context, deadline time.Time, err error) *Error {
	if p.fast != nil && ctx.Err() == nil && err == error(p.fast.refused) {
		if p.refused == nil {
			p.refused = p.fail("dial", false, err)
		}
		return p.refused
	}
	return p.fail("dial", false, deadlineError(ctx, deadline, err))
}

// shares reports whether a connection made for p can carry q.
func (p *Prepared) shares(q *Prepared) bool {
	// A Dial hook cannot be compared: its connections serve only the request that made them.
	return p == q || p.dial == nil && q.dial == nil && p.endpoint == q.endpoint
}

// connect opens a connection for p, bounded by ctx and deadline (zero: ctx alone).
func (p *Prepared) connect(ctx context.Context, deadline time.Time) (net.Conn, error) {
	if p.fast != nil {
		if conn, err := p.fast.Conn(); err != ErrWouldWait {
			return conn, err
		}
	}
	if p.dial == nil {
		return dialUntil(ctx, p.addr, p.local, deadline)
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return p.dial(ctx, p.addr)
}
