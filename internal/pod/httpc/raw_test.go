package httpc

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDoScriptedResponses checks the parser against answers written byte by byte, including
// ones a well-behaved server would never send.
func TestDoScriptedResponses(t *testing.T) {
	tests := []struct {
		name    string
		answer  string
		method  string
		limit   int
		want    *Response // BodyErr is compared with wantBodyErr instead
		wantErr error     // for a response, the BodyErr
	}{
		{name: "status line without reason", answer: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
			want: &Response{StatusCode: 200, Status: "200", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "2"}}, Body: []byte("ok")}},
		{name: "empty reason after space", answer: "HTTP/1.0 503 \r\n\r\nINITIALIZING\n",
			want: &Response{StatusCode: 503, Status: "503", Proto: "HTTP/1.0", Body: []byte("INITIALIZING\n")}},
		{name: "interim responses skipped",
			answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "2"}}, Body: []byte("ok")}},
		{name: "header names as sent, values trimmed", answer: "HTTP/1.1 200 OK\r\nx-ONE:  a b \t\r\nEmpty:\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"x-ONE", "a b"}, {"Empty", ""}}}},
		{name: "bare LF line endings", answer: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "2"}}, Body: []byte("ok")}},
		{name: "body until EOF", answer: "HTTP/1.0 200 OK\r\n\r\nall of it",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.0", Body: []byte("all of it")}},
		{name: "body until EOF truncated", answer: "HTTP/1.0 200 OK\r\n\r\nall of it", limit: 3,
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.0", Body: []byte("all"), Truncated: true}},
		{name: "body until EOF exactly at limit", answer: "HTTP/1.0 200 OK\r\n\r\nall", limit: 3,
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.0", Body: []byte("all")}},
		{name: "chunk extensions and trailers",
			answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1 ; x\r\n!\r\n0\r\nX-T: 1\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Transfer-Encoding", "chunked"}}, Body: []byte("hello!")}},
		{name: "chunked ending exactly at limit", limit: 6,
			answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Transfer-Encoding", "chunked"}}, Body: []byte("hello!")}},
		{name: "chunked over limit at chunk boundary", limit: 5,
			answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Transfer-Encoding", "chunked"}}, Body: []byte("hello"), Truncated: true}},
		{name: "chunked wins over Content-Length",
			answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "1"}, {"Transfer-Encoding", "gzip, Chunked"}}, Body: []byte("ok")}},
		{name: "identical duplicate Content-Length",
			answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nokEXTRA",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "2"}, {"Content-Length", "2, 2"}}, Body: []byte("ok")}},
		{name: "body cut short by close", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "10"}}, Body: []byte("abc")},
			wantErr: io.ErrUnexpectedEOF},
		{name: "chunked body cut short by close",
			answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Transfer-Encoding", "chunked"}}, Body: []byte("hel")},
			wantErr: io.ErrUnexpectedEOF},
		{name: "no body for 304", answer: "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
			want: &Response{StatusCode: 304, Status: "304 Not Modified", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "5"}}}},
		{name: "no body for HEAD", method: "HEAD", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
			want: &Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1",
				Header: []Header{{"Content-Length", "5"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := mustServeRaw(t, answer(tt.answer))
			got, err := doURL(t, tt.method, "http://"+addr+"/ready", tt.limit)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if !errors.Is(got.BodyErr, tt.wantErr) {
				t.Errorf("BodyErr = %v, want %v", got.BodyErr, tt.wantErr)
			}
			got.BodyErr = nil
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(bytesEqual)); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// bytesEqual treats nil and empty bodies alike: both mean no body.
func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestDoBadBodyFraming checks that a body whose framing cannot be trusted is reported in
// BodyErr while the status stays available.
func TestDoBadBodyFraming(t *testing.T) {
	tests := []struct {
		name, answer, wantErr string
	}{
		{"conflicting Content-Length", "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "invalid Content-Length"},
		{"negative Content-Length", "Content-Length: -1\r\n\r\n", "invalid Content-Length"},
		{"signed Content-Length", "Content-Length: +1\r\n\r\nx", "invalid Content-Length"},
		{"malformed chunk size", "Transfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"},
		{"chunk longer than its size", "Transfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n", "data longer than its size"},
		{"chunk size line too long", "Transfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("x", 5000) + "\r\n", "too long"},
		{"huge trailers", "Transfer-Encoding: chunked\r\n\r\n0\r\nX: " + strings.Repeat("x", 20000) + "\r\n\r\n", "trailer section too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := mustServeRaw(t, answer("HTTP/1.1 502 Bad Gateway\r\n"+tt.answer))
			resp, err := doURL(t, "GET", "http://"+addr+"/", 0)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got, want := resp.StatusCode, 502; got != want {
				t.Errorf("StatusCode = %d, want %d", got, want)
			}
			if resp.BodyErr == nil || !strings.Contains(resp.BodyErr.Error(), tt.wantErr) {
				t.Errorf("BodyErr = %v, want one containing %q", resp.BodyErr, tt.wantErr)
			}
			if resp.Truncated {
				t.Errorf("Truncated = true with BodyErr set")
			}
		})
	}
}

// TestDoMalformedHead checks that an unusable status line or header section fails the exchange.
func TestDoMalformedHead(t *testing.T) {
	tests := []struct {
		name, answer, wantErr string
	}{
		{"garbage", "hello\r\n\r\n", "malformed status line"},
		{"HTTP/2 status line", "HTTP/2 200 OK\r\n\r\n", "malformed status line"},
		{"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", "malformed status code"},
		{"status below 100", "HTTP/1.1 099 Odd\r\n\r\n", "malformed status code"},
		{"non-numeric status", "HTTP/1.1 2x0 OK\r\n\r\n", "malformed status code"},
		{"missing status", "HTTP/1.1\r\n\r\n", "malformed status code"},
		{"header without colon", "HTTP/1.1 200 OK\r\nBroken\r\n\r\n", "malformed header line"},
		{"space before colon", "HTTP/1.1 200 OK\r\nName : v\r\n\r\n", "malformed header line"},
		{"obs-fold", "HTTP/1.1 200 OK\r\nA: b\r\n  c\r\n\r\n", "malformed header line"},
		{"control character in value", "HTTP/1.1 200 OK\r\nA: b\x00c\r\n\r\n", "invalid character"},
		{"101 switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "101"},
		{"head over 64 KiB", "HTTP/1.1 200 OK\r\nBig: " + strings.Repeat("x", 70<<10) + "\r\n\r\n", "larger than"},
		{"many small headers over 64 KiB", "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: b\r\n", 12<<10) + "\r\n", "larger than"},
		{"endless interim responses", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 3000), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := mustServeRaw(t, answer(tt.answer))
			resp, err := doURL(t, "GET", "http://"+addr+"/", 0)
			if err == nil {
				t.Fatalf("Do = %d %q, want error", resp.StatusCode, resp.Status)
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "read" || !e.Sent {
				t.Errorf("err = %#v, want *Error with Op read and Sent", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if ClosedAfterSend(err) {
				t.Errorf("ClosedAfterSend(%v) = true for a malformed answer", err)
			}
		})
	}
}

// TestDoServerGoesAway covers a sidecar that takes the request and exits without answering,
// which is what a quit request usually gets.
func TestDoServerGoesAway(t *testing.T) {
	tests := []struct {
		name    string
		script  func(c net.Conn)
		wantErr error
	}{
		{"close without answer", func(c net.Conn) { readRequest(c) }, io.EOF},
		{"close inside status line", answer("HTTP/1.1 2"), io.ErrUnexpectedEOF},
		{"close inside headers", answer("HTTP/1.1 200 OK\r\nContent-Le"), io.ErrUnexpectedEOF},
		{"reset without answer", func(c net.Conn) {
			readRequest(c)
			c.(*net.TCPConn).SetLinger(0) // Close now sends RST instead of FIN
		}, syscall.ECONNRESET},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := mustServeRaw(t, tt.script)
			_, err := doURL(t, "POST", "http://"+addr+"/quitquitquit", 0)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !ClosedAfterSend(err) {
				t.Errorf("ClosedAfterSend(%v) = false, want true", err)
			}
			var e *Error
			if !errors.As(err, &e) || !e.Sent || e.Op != "read" {
				t.Errorf("err = %#v, want *Error with Op read and Sent", err)
			}
			if Refused(err) || Timeout(err) {
				t.Errorf("Refused = %v, Timeout = %v, want both false", Refused(err), Timeout(err))
			}
		})
	}
}
