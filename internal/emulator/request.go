package emulator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/httpc"
)

// Limits of the hand-written server. They bound memory per connection; an
// admin endpoint never needs more.
const (
	// maxHeadBytes bounds the request line plus all header lines.
	maxHeadBytes = 16 << 10
	// maxBodyBytes bounds a request body, which is read and discarded.
	maxBodyBytes = 1 << 20
)

// Request is one parsed HTTP/1.x request as a Handler sees it.
type Request struct {
	// Method is the request method exactly as sent (methods are
	// case-sensitive, so "post" is not "POST").
	Method string
	// Target is the request-target exactly as sent, e.g. "/ready?x=1".
	Target string
	// Path is Target without the query string (ref §1.1: routing ignores
	// the query).
	Path string
	// RawQuery is the part of Target after the first '?', without the '?'.
	RawQuery string
	// Proto is "HTTP/1.1" or "HTTP/1.0".
	Proto string
	// Header holds the header fields in the order they arrived.
	Header []Field
	// Peer is the address of the client, for endpoints that answer only
	// loopback peers (ref §12 item 2).
	Peer net.Addr

	contentLength int64 // -1 when the request has no Content-Length
	chunked       bool  // Transfer-Encoding: chunked
}

// Get returns the value of the first header field named name, compared
// case-insensitively, or "" when there is none.
func (r *Request) Get(name string) string {
	v, _ := lookup(r.Header, name)
	return v
}

// FromLoopback reports whether the peer is a loopback address, the test
// Istio (net.ParseIP(host).IsLoopback(), ref §3.3) and Linkerd
// (client_is_localhost, ref §4.2) make before shutting down. An
// IPv4-mapped loopback address such as ::ffff:127.0.0.1 counts, as it does
// for both.
func (r *Request) FromLoopback() bool {
	return net.ParseIP(peerHost(r.Peer)).IsLoopback()
}

// peerHost is the host part of a peer address, "" when there is none.
func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// statusError is a request the server refuses; status is the answer.
type statusError struct {
	status int
	reason string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, statusText(e.status), e.reason)
}

func refuse(status int, format string, args ...any) error {
	return &statusError{status: status, reason: fmt.Sprintf(format, args...)}
}

// readHead reads the request line and header fields. It returns a partial
// Request alongside a *statusError so that the event for a refused request
// can still name the method and path when they were readable. io.EOF means
// the peer sent nothing at all.
func readHead(br *bufio.Reader) (*Request, error) {
	req := &Request{contentLength: -1}
	total := 0
	line, err := readLine(br, &total)
	if err == nil && line == "" {
		// RFC 9112 §2.2: ignore at least one empty line before the request-line.
		line, err = readLine(br, &total)
	}
	if err != nil {
		return req, err
	}
	if err := parseRequestLine(req, line); err != nil {
		return req, err
	}
	for {
		line, err := readLine(br, &total)
		if err != nil {
			return req, err
		}
		if line == "" {
			break
		}
		f, err := parseField(line)
		if err != nil {
			return req, err
		}
		req.Header = append(req.Header, f)
	}
	return req, framing(req)
}

// readLine reads one line ending in LF (a preceding CR is dropped) while
// keeping the running total of head bytes under maxHeadBytes. br must be
// at least maxHeadBytes large, so that a full buffer means the limit hit.
func readLine(br *bufio.Reader, total *int) (string, error) {
	b, err := br.ReadSlice('\n')
	*total += len(b)
	if errors.Is(err, bufio.ErrBufferFull) || *total > maxHeadBytes {
		return "", refuse(431, "request head larger than %d bytes", maxHeadBytes)
	}
	if err != nil {
		if *total > 0 && errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	for _, c := range b {
		// RFC 9112 §2.2: a bare CR is invalid; NUL never belongs in a head.
		if c == '\r' || c == 0 {
			return "", refuse(400, "control character in request head")
		}
	}
	return string(b), nil
}

// parseRequestLine parses "METHOD SP request-target SP HTTP-version"
// (RFC 9112 §3). Only origin-form targets are accepted: admin clients
// never send anything else.
func parseRequestLine(req *Request, line string) error {
	parts := strings.Split(line, " ")
	if len(parts) != 3 {
		return refuse(400, "malformed request line")
	}
	req.Method, req.Target, req.Proto = parts[0], parts[1], parts[2]
	if !httpc.IsToken(req.Method) {
		return refuse(400, "malformed method")
	}
	if req.Target == "" || req.Target[0] != '/' || !isVisible(req.Target) {
		return refuse(400, "malformed request target")
	}
	req.Path, req.RawQuery, _ = strings.Cut(req.Target, "?")
	switch req.Proto {
	case "HTTP/1.1", "HTTP/1.0":
		return nil
	}
	if len(req.Proto) == 8 && strings.HasPrefix(req.Proto, "HTTP/") && req.Proto[6] == '.' {
		return refuse(505, "unsupported version %s", req.Proto)
	}
	return refuse(400, "malformed HTTP version")
}

// parseField parses "name: value". A name with surrounding whitespace is
// rejected, which also rejects obsolete line folding (RFC 9112 §5.1, §5.2).
func parseField(line string) (Field, error) {
	name, value, ok := strings.Cut(line, ":")
	if !ok || !httpc.IsToken(name) {
		return Field{}, refuse(400, "malformed header field")
	}
	value = strings.Trim(value, " \t")
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return Field{}, refuse(400, "control character in header field %s", name)
		}
	}
	return Field{Name: name, Value: value}, nil
}

// framing checks Host and works out how the body is framed
// (RFC 9112 §3.2, §6).
func framing(req *Request) error {
	hosts := 0
	var lengths, codings []string
	for _, f := range req.Header {
		switch strings.ToLower(f.Name) {
		case "host":
			hosts++
		case "content-length":
			lengths = append(lengths, f.Value)
		case "transfer-encoding":
			codings = append(codings, f.Value)
		}
	}
	if req.Proto == "HTTP/1.1" && hosts != 1 {
		return refuse(400, "HTTP/1.1 request needs exactly one Host header")
	}
	if len(codings) > 0 {
		if len(lengths) > 0 {
			return refuse(400, "both Transfer-Encoding and Content-Length")
		}
		if !strings.EqualFold(strings.TrimSpace(strings.Join(codings, ",")), "chunked") {
			return refuse(501, "transfer coding %q not implemented", strings.Join(codings, ","))
		}
		req.chunked = true
		return nil
	}
	for _, v := range lengths {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || !isDigits(v) || (req.contentLength >= 0 && n != req.contentLength) {
			return refuse(400, "invalid Content-Length")
		}
		req.contentLength = n
	}
	return nil
}

// isVisible reports whether s holds only visible US-ASCII characters.
func isVisible(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
