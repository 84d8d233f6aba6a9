package httpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzReadResponse feeds arbitrary bytes to exchange as the server's answer over net.Pipe. It
// must never panic, hang or keep more than the body limit; when both we and net/http accept an
// answer in full, the status and body must agree. Read into a Response that holds a previous
// answer, as a Client reads, it must read exactly as into a fresh one.
func FuzzReadResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nLIVE\n",
		"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nINITIALIZING\n",
		"HTTP/1.1 200\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\nTransfer-Encoding: chunked\n\n1\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nabc",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed), uint16(16), false)
		f.Add([]byte(seed), uint16(4), true)
	}
	f.Fuzz(func(t *testing.T, answer []byte, limit uint16, head bool) {
		lim := int(limit%4096) + 1
		method := "GET"
		if head {
			method = "HEAD"
		}
		resp, err := pipeExchange(t, method, answer, lim)
		checkFuzzResult(t, method, answer, lim, resp, err)
		checkReuse(t, method, answer, lim)
	})
}

// checkReuse reads answer into a Response that holds a previous answer, and into a fresh one,
// and compares them.
func checkReuse(t *testing.T, method string, answer []byte, limit int) {
	const previous = "HTTP/1.1 503 Service Unavailable\r\nServer: envoy\r\nX-A: 1\r\nContent-Type: text/plain\r\n" +
		"Content-Length: 13\r\n\r\nINITIALIZING\n"
	fresh, reused := new(Response), new(Response)
	if _, err := readResponse(bufio.NewReader(strings.NewReader(previous)), reused, "GET", defaultBodyLimit); err != nil {
		t.Fatal(err)
	}
	_, errFresh := readResponse(bufio.NewReader(bytes.NewReader(answer)), fresh, method, limit)
	_, errReused := readResponse(bufio.NewReader(bytes.NewReader(answer)), reused, method, limit)
	if fmt.Sprint(errFresh) != fmt.Sprint(errReused) {
		t.Fatalf("reused Response: err %v, fresh one: %v", errReused, errFresh)
	}
	if errFresh != nil {
		return
	}
	if d := diffResponses(fresh, reused); d != "" {
		t.Fatalf("reused Response differs from a fresh one: %s", d)
	}
}

// pipeExchange runs exchange against a scripted server on net.Pipe: the server reads the whole
// request, writes answer and closes.
func pipeExchange(t *testing.T, method string, answer []byte, limit int) (*Response, error) {
	out, err := buildRequest(&Request{Method: method, URL: mustURL(t, "http://sidecar/ready")}, closeAfter)
	if err != nil {
		t.Fatal(err)
	}
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		if _, err := io.ReadFull(server, make([]byte, len(out.raw))); err != nil {
			return
		}
		server.Write(answer) // fails once the client stops reading and closes: that is fine
	}()
	defer func() { <-done }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exchange(ctx, client, method, out.raw, limit, &Error{})
}

func checkFuzzResult(t *testing.T, method string, answer []byte, limit int, resp *Response, err error) {
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Op != "read" || !e.Sent {
			t.Fatalf("err = %#v, want *Error with Op read and Sent", err)
		}
		if Timeout(err) {
			t.Fatalf("exchange hung until the deadline: %v", err)
		}
		return
	}
	if len(resp.Body) > limit {
		t.Fatalf("len(Body) = %d, over the limit %d", len(resp.Body), limit)
	}
	if resp.Truncated && (len(resp.Body) != limit || resp.BodyErr != nil) {
		t.Fatalf("Truncated with len(Body) = %d (limit %d), BodyErr %v", len(resp.Body), limit, resp.BodyErr)
	}
	if Timeout(resp.BodyErr) {
		t.Fatalf("body read hung until the deadline: %v", resp.BodyErr)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 999 || !strings.HasPrefix(resp.Status, strconv.Itoa(resp.StatusCode)) {
		t.Fatalf("StatusCode %d, Status %q", resp.StatusCode, resp.Status)
	}
	if method == "HEAD" && len(resp.Body) > 0 {
		t.Fatalf("HEAD response has a body %q", resp.Body)
	}
	if resp.BodyErr == nil && !resp.Truncated {
		compareNetHTTP(t, method, answer, resp)
	}
}

// compareNetHTTP checks a fully read response against net/http's reading of the same bytes,
// when net/http accepts them too. Cases where RFC 9112 and net/http knowingly differ are skipped.
func compareNetHTTP(t *testing.T, method string, answer []byte, resp *Response) {
	if _, te := joined(resp, "Transfer-Encoding"); te && resp.Proto == "HTTP/1.0" {
		return // net/http ignores Transfer-Encoding in HTTP/1.0; RFC 9112 reads until close
	}
	req, _ := http.NewRequest(method, "http://sidecar/ready", nil)
	br := bufio.NewReader(bytes.NewReader(answer))
	want, err := http.ReadResponse(br, req)
	if err != nil {
		return
	}
	defer want.Body.Close()
	wantBody, err := io.ReadAll(want.Body)
	if err != nil || want.StatusCode < 200 {
		return // net/http returns interim responses instead of skipping them
	}
	if got := resp.StatusCode; got != want.StatusCode {
		t.Fatalf("StatusCode = %d, net/http says %d", got, want.StatusCode)
	}
	if !bytes.Equal(resp.Body, wantBody) {
		t.Fatalf("Body = %q, net/http says %q", resp.Body, wantBody)
	}
}
