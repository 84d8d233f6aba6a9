package httpc

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// Error is a failed exchange.
type Error struct {
	Op   string // "request" (bad request: scheme, URL), "dial", "write" or "read"
	URL  string // redacted of userinfo
	Sent bool   // the whole request had been written when the failure happened
	Err  error  // the cause; errors.Is works through it (syscall.ECONNREFUSED, io.EOF, context.DeadlineExceeded, ...)

	method string // only for the message, so that it reads like a log line
}

// Error renders e as `METHOD URL: op: cause`, e.g.
// `GET http://127.0.0.1:15000/ready: dial: connect: connection refused`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.method != "" {
		b.WriteString(e.method)
		b.WriteByte(' ')
	}
	if e.URL != "" {
		b.WriteString(e.URL)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(brief(e.Op, e.Err))
	return b.String()
}

// Unwrap returns the cause, so errors.Is and errors.As see through an *Error.
func (e *Error) Unwrap() error { return e.Err }

// with sets the operation and cause of e and returns it, for one-line returns in Do.
func (e *Error) with(op string, err error) *Error {
	e.Op, e.Err = op, err
	return e
}

// brief shortens a cause for the message: the *net.OpError wrapper repeats the operation and both
// addresses, which the message already has, and a syscall name equal to op would say it twice
// ("read: read: connection reset by peer"). The full chain stays available through Unwrap.
func brief(op string, err error) string {
	if err == nil {
		return "<nil>"
	}
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		err = oe.Err
	}
	if se, ok := err.(*os.SyscallError); ok && se.Syscall == op && se.Err != nil {
		err = se.Err
	}
	return err.Error()
}

// Refused reports whether err means nothing was listening (connection refused), so the request
// certainly did not reach the server.
func Refused(err error) bool {
	// errors.AsType, not errors.As: the latter's target would escape to the heap, and this is
	// asked of every refused probe.
	if e, ok := errors.AsType[*Error](err); ok && e.Op != "dial" {
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// ClosedAfterSend reports whether err is a connection reset or EOF (clean or unexpected) that happened
// after the request had been fully sent and before a complete status line/headers arrived: the server
// took the request and went away. (A sidecar that exits right after a quit request does this.)
func ClosedAfterSend(err error) bool {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Op != "read" || !e.Sent {
		return false
	}
	return errors.Is(e.Err, io.EOF) || errors.Is(e.Err, io.ErrUnexpectedEOF) ||
		errors.Is(e.Err, syscall.ECONNRESET)
}

// timeoutError is an error that can tell it is a timeout, as net's errors can.
type timeoutError interface {
	error
	Timeout() bool
}

// Timeout reports whether err is a timeout / deadline (context deadline or net timeout).
func Timeout(err error) bool { return isTimeout(err) }

// isTimeout covers context.DeadlineExceeded, os.ErrDeadlineExceeded and net's own timeouts, which
// all implement Timeout; the errors.Is check is for wrappers that only implement Is.
func isTimeout(err error) bool {
	if te, ok := errors.AsType[timeoutError](err); ok && te.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}
