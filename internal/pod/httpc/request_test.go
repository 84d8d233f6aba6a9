package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestBuildRequest(t *testing.T) {
	const std = "User-Agent: sidesync\r\nAccept: */*\r\nConnection: close\r\n"
	tests := []struct {
		name     string
		req      Request
		wantAddr string
		wantRaw  string
	}{
		{name: "GET with default port and empty path",
			req:      Request{URL: &url.URL{Scheme: "http", Host: "sidecar"}},
			wantAddr: "sidecar:80",
			wantRaw:  "GET / HTTP/1.1\r\nHost: sidecar\r\n" + std + "\r\n"},
		{name: "POST without body sends Content-Length 0",
			req:      Request{Method: "POST", URL: &url.URL{Scheme: "http", Host: "127.0.0.1:15000", Path: "/quitquitquit"}},
			wantAddr: "127.0.0.1:15000",
			wantRaw:  "POST /quitquitquit HTTP/1.1\r\nHost: 127.0.0.1:15000\r\n" + std + "Content-Length: 0\r\n\r\n"},
		{name: "body and extra headers in order",
			req: Request{Method: "PUT", URL: &url.URL{Scheme: "HTTP", Host: "h:1", Path: "/p"},
				Header: []Header{{"X-B", "2"}, {"X-A", "1\t1"}}, Body: []byte("data")},
			wantAddr: "h:1",
			wantRaw:  "PUT /p HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: 4\r\nX-B: 2\r\nX-A: 1\t1\r\n\r\ndata"},
		{name: "IPv6 host stays bracketed, query kept, fragment and userinfo dropped",
			req: Request{Method: "HEAD", URL: &url.URL{Scheme: "http", User: url.UserPassword("u", "p"),
				Host: "[::1]:15000", Path: "/a b", RawQuery: "x=1&y", Fragment: "f"}},
			wantAddr: "[::1]:15000",
			wantRaw:  "HEAD /a%20b?x=1&y HTTP/1.1\r\nHost: [::1]:15000\r\n" + std + "\r\n"},
		{name: "IPv6 zone dialled but not sent",
			req:      Request{URL: &url.URL{Scheme: "http", Host: "[fe80::1%eth0]:8080"}},
			wantAddr: "[fe80::1%eth0]:8080",
			wantRaw:  "GET / HTTP/1.1\r\nHost: [fe80::1]:8080\r\n" + std + "\r\n"},
		{name: "path without leading slash",
			req:      Request{URL: &url.URL{Scheme: "http", Host: "h", Path: "ready"}},
			wantAddr: "h:80",
			wantRaw:  "GET /ready HTTP/1.1\r\nHost: h\r\n" + std + "\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildRequest(&tt.req, closeAfter)
			if err != nil {
				t.Fatalf("buildRequest: %v", err)
			}
			if got.addr != tt.wantAddr {
				t.Errorf("addr = %q, want %q", got.addr, tt.wantAddr)
			}
			if string(got.raw) != tt.wantRaw {
				t.Errorf("raw =\n%q\nwant\n%q", got.raw, tt.wantRaw)
			}
		})
	}
}

func TestDoRejectsBadRequests(t *testing.T) {
	ok := &url.URL{Scheme: "http", Host: "127.0.0.1:1", Path: "/"}
	tests := []struct {
		name string
		req  *Request
	}{
		{"nil request", nil},
		{"nil URL", &Request{}},
		{"https", &Request{URL: &url.URL{Scheme: "https", Host: "h"}}},
		{"no scheme", &Request{URL: &url.URL{Host: "h"}}},
		{"empty host", &Request{URL: &url.URL{Scheme: "http", Path: "/ready"}}},
		{"port only", &Request{URL: &url.URL{Scheme: "http", Host: ":80"}}},
		{"bad port", &Request{URL: &url.URL{Scheme: "http", Host: "h:http"}}},
		{"port out of range", &Request{URL: &url.URL{Scheme: "http", Host: "h:65536"}}},
		{"CRLF in host", &Request{URL: &url.URL{Scheme: "http", Host: "h\r\nX: y"}}},
		{"opaque URL", &Request{URL: &url.URL{Scheme: "http", Host: "h", Opaque: "x"}}},
		{"CRLF in query", &Request{URL: &url.URL{Scheme: "http", Host: "h", RawQuery: "a\r\nX: y"}}},
		{"space in query", &Request{URL: &url.URL{Scheme: "http", Host: "h", RawQuery: "a b"}}},
		{"space in method", &Request{Method: "GE T", URL: ok}},
		{"CRLF in method", &Request{Method: "GET\r\n", URL: ok}},
		{"empty header name", &Request{URL: ok, Header: []Header{{"", "v"}}}},
		{"space in header name", &Request{URL: ok, Header: []Header{{"X A", "v"}}}},
		{"colon in header name", &Request{URL: ok, Header: []Header{{"X:", "v"}}}},
		{"CRLF in header value", &Request{URL: ok, Header: []Header{{"X", "v\r\nY: z"}}}},
		{"LF in header value", &Request{URL: ok, Header: []Header{{"X", "v\nY: z"}}}},
		{"NUL in header value", &Request{URL: ok, Header: []Header{{"X", "v\x00"}}}},
		{"second Host", &Request{URL: ok, Header: []Header{{"host", "evil"}}}},
		{"own Content-Length", &Request{URL: ok, Header: []Header{{"Content-Length", "5"}}}},
		{"Transfer-Encoding", &Request{URL: ok, Header: []Header{{"Transfer-Encoding", "chunked"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Do(context.Background(), tt.req, 0)
			var e *Error
			if !errors.As(err, &e) || e.Op != "request" || e.Sent {
				t.Fatalf("err = %v, want *Error with Op request", err)
			}
			if Refused(err) || ClosedAfterSend(err) || Timeout(err) {
				t.Errorf("a predicate is true for %v", err)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	readReset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"dial keeps the syscall", &Error{Op: "dial", URL: "http://127.0.0.1:15000/ready", method: "GET",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
			"GET http://127.0.0.1:15000/ready: dial: connect: connection refused"},
		{"read does not repeat itself", &Error{Op: "read", URL: "http://h/", method: "POST", Sent: true, Err: readReset},
			"POST http://h/: read: connection reset by peer"},
		{"context error", &Error{Op: "read", URL: "http://h/", method: "GET", Err: context.DeadlineExceeded},
			"GET http://h/: read: context deadline exceeded"},
		{"zero value parts", &Error{Op: "request", Err: errors.New("nil request")}, "request: nil request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	reset := &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	refused := &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name                                 string
		err                                  error
		wantRefused, wantClosed, wantTimeout bool
	}{
		{"nil", nil, false, false, false},
		{"refused dial", &Error{Op: "dial", Err: refused}, true, false, false},
		{"refused wrapped", fmt.Errorf("probe: %w", &Error{Op: "dial", Err: refused}), true, false, false},
		{"EOF after send", &Error{Op: "read", Sent: true, Err: io.EOF}, false, true, false},
		{"unexpected EOF after send", &Error{Op: "read", Sent: true, Err: io.ErrUnexpectedEOF}, false, true, false},
		{"reset after send", &Error{Op: "read", Sent: true, Err: reset}, false, true, false},
		{"reset while writing", &Error{Op: "write", Err: reset}, false, false, false},
		{"EOF before send", &Error{Op: "read", Err: io.EOF}, false, false, false},
		{"malformed answer", &Error{Op: "read", Sent: true, Err: errors.New("malformed status line")}, false, false, false},
		{"context deadline", &Error{Op: "read", Sent: true, Err: context.DeadlineExceeded}, false, false, true},
		{"socket deadline", &Error{Op: "read", Sent: true, Err: os.ErrDeadlineExceeded}, false, false, true},
		{"cancel", &Error{Op: "read", Sent: true, Err: context.Canceled}, false, false, false},
		{"plain errors too", syscall.ECONNREFUSED, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Refused(tt.err); got != tt.wantRefused {
				t.Errorf("Refused = %v, want %v", got, tt.wantRefused)
			}
			if got := ClosedAfterSend(tt.err); got != tt.wantClosed {
				t.Errorf("ClosedAfterSend = %v, want %v", got, tt.wantClosed)
			}
			if got := Timeout(tt.err); got != tt.wantTimeout {
				t.Errorf("Timeout = %v, want %v", got, tt.wantTimeout)
			}
		})
	}
}
