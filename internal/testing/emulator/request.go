package emulator

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
)

// Limits per request. They bound memory per connection; an admin endpoint
// never needs more.
const (
	// maxHeadBytes bounds the request line plus all header lines; above it
	// net/http answers 431.
	maxHeadBytes = 16 << 10
	// maxBodyBytes bounds a request body, which is read and discarded.
	maxBodyBytes = 1 << 20
)

// Request is one HTTP/1.x request as a Handler sees it.
type Request struct {
	// Method is the request method exactly as sent (methods are
	// case-sensitive, so "post" is not "POST").
	Method string
	// Path is the request-target as sent, without the query string and
	// without percent-decoding (ref §1.1: Envoy compares the raw path
	// without the query).
	Path string
	// RawQuery is the part of the request-target after the first '?',
	// without the '?'.
	RawQuery string
	// Header holds the request's header fields.
	Header http.Header
	// Peer is the address of the client as host:port, for endpoints that
	// answer only loopback peers (ref §12 item 2).
	Peer string
}

// newRequest returns the Request a Handler sees for hr.
func newRequest(hr *http.Request) *Request {
	path, query, _ := strings.Cut(hr.RequestURI, "?")
	return &Request{Method: hr.Method, Path: path, RawQuery: query, Header: hr.Header, Peer: hr.RemoteAddr}
}

// Get returns the value of the first header field named name, compared
// case-insensitively, or "" when there is none.
func (r *Request) Get(name string) string {
	return r.Header.Get(name)
}

// FromLoopback reports whether the peer is a loopback address, the test
// Istio (net.ParseIP(host).IsLoopback(), ref §3.3) and Linkerd
// (client_is_localhost, ref §4.2) make before shutting down. An
// IPv4-mapped loopback address such as ::ffff:127.0.0.1 counts, as it does
// for both.
func (r *Request) FromLoopback() bool {
	host, _, err := net.SplitHostPort(r.Peer)
	if err != nil {
		host = r.Peer
	}
	return net.ParseIP(host).IsLoopback()
}

// admit refuses what no admin endpoint takes, before the Handler sees it,
// and otherwise reads the body and throws it away. No admin endpoint
// looks at a body, but reading it all sends "100 Continue" to a client
// that waits for it (RFC 9110 §10.1.1) and keeps the connection usable.
// It returns the refusal, nil for none, or ok false when the peer went
// away or cut the body short: nobody to answer.
func admit(w http.ResponseWriter, hr *http.Request, req *Request) (refusal *Reply, ok bool) {
	switch {
	case !strings.HasPrefix(req.Path, "/"):
		// Only origin-form targets: admin clients never send the
		// absolute form, the authority form or "*".
		return refuse(400, "Bad Request"), true
	case hr.ContentLength > maxBodyBytes:
		return refuse(413, "Content Too Large"), true
	}
	_, err := io.Copy(io.Discard, http.MaxBytesReader(w, hr.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil, true
	case errors.As(err, &tooLarge):
		return refuse(413, "Content Too Large"), true
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, new(net.Error)):
		return nil, false
	}
	return refuse(400, "Bad Request"), true // malformed chunked framing
}

// refuse is the server's own answer to a request it does not pass on: the
// status and its reason phrase as plain text.
func refuse(status int, text string) *Reply {
	return &Reply{Response: Response{Status: status, Header: []Field{{"content-type", "text/plain"}}, Body: []byte(text)}}
}
