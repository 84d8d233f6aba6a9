package httpc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// outgoing is a validated request, ready to dial and write.
type outgoing struct {
	method string // never empty
	addr   string // host:port to dial
	raw    []byte // the whole request, written in one go
}

// Connection handling of a serialised request.
const (
	closeAfter = true  // "Connection: close": one request per connection (Do)
	keepOpen   = false // no Connection field: HTTP/1.1's default, a persistent connection (Client)
)

// reservedHeaders are set by Do itself; a second copy from the caller would make the framing or
// the target ambiguous (servers answer 400 to two Host fields or conflicting lengths).
var reservedHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}

// buildRequest validates req and serialises it, asking the server to close the connection
// after the response when closeConn is set. Everything a caller controls is checked for CR, LF
// and other characters that would let one field spill into the next.
func buildRequest(req *Request, closeConn bool) (outgoing, error) {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	if !IsToken(method) {
		return outgoing{}, fmt.Errorf("invalid method %q", method)
	}
	addr, target, err := checkURL(req)
	if err != nil {
		return outgoing{}, err
	}
	for _, h := range req.Header {
		if err := checkHeader(h); err != nil {
			return outgoing{}, err
		}
	}
	b := make([]byte, 0, 128+len(target)+len(req.Body)+headersLen(req.Header))
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, hostField(req.URL.Host)...)
	b = append(b, "\r\nUser-Agent: sidesync\r\nAccept: */*\r\n"...)
	if closeConn {
		b = append(b, "Connection: close\r\n"...)
	}
	if req.Body != nil || sendsBody(method) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	for _, h := range req.Header {
		b = append(b, h.Name...)
		b = append(b, ": "...)
		b = append(b, h.Value...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, req.Body...)
	return outgoing{method: method, addr: addr, raw: b}, nil
}

// sendsBody lists the methods whose requests carry content, where a missing Content-Length
// would make some servers wait for a body or answer 411 Length Required.
func sendsBody(method string) bool {
	return method == "POST" || method == "PUT" || method == "PATCH"
}

func headersLen(hs []Header) int {
	n := 0
	for _, h := range hs {
		n += len(h.Name) + len(h.Value) + 4
	}
	return n
}

// checkURL returns the address to dial and the request target. Userinfo is allowed in the URL
// (it may come from configuration) but never sent: there is no auth support.
func checkURL(req *Request) (addr, target string, err error) {
	u := req.URL
	switch {
	case u == nil:
		return "", "", errors.New("missing URL")
	case strings.ToLower(u.Scheme) == "https" && req.Dial != nil:
		// The Dial hook speaks TLS; httpc itself never links crypto/tls.
	case strings.ToLower(u.Scheme) != "http":
		return "", "", fmt.Errorf("unsupported scheme %q (only http, or https with a Dial hook)", u.Scheme)
	case u.Opaque != "":
		return "", "", errors.New("opaque URL not supported")
	case !validHost(u.Host):
		return "", "", fmt.Errorf("invalid host %q", u.Host)
	}
	defaultPort := "80"
	if strings.ToLower(u.Scheme) == "https" {
		defaultPort = "443"
	}
	host, port, err := splitHostPort(u.Host, defaultPort)
	if err != nil {
		return "", "", err
	}
	target = u.RequestURI()
	if target != "*" && !strings.HasPrefix(target, "/") {
		// Matches what u.String() shows for a hand-built URL whose Path lacks the slash.
		target = "/" + target
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return "", "", fmt.Errorf("invalid character %q in request target", c)
		}
	}
	return net.JoinHostPort(host, port), target, nil
}

// hostField is the Host value: the authority as given, minus any IPv6 zone ("[fe80::1%eth0]"),
// which only means something on this machine and which servers reject (RFC 6874, section 4).
func hostField(authority string) string {
	if !strings.HasPrefix(authority, "[") {
		return authority
	}
	zone := strings.IndexByte(authority, '%')
	end := strings.IndexByte(authority, ']')
	if zone < 0 || end < zone {
		return authority
	}
	return authority[:zone] + authority[end:]
}

// splitHostPort splits an authority such as "h", "h:80" or "[::1]:80", defaulting the port to
// 80. It is stricter than url.URL.Port, which silently drops a malformed port.
func splitHostPort(authority, defaultPort string) (host, port string, err error) {
	host, rest := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", "", fmt.Errorf("invalid host %q", authority)
		}
		host, rest = authority[1:end], authority[end+1:]
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		host, rest = authority[:i], authority[i:]
	}
	if host == "" {
		return "", "", errors.New("missing host")
	}
	if rest != "" && rest[0] != ':' {
		return "", "", fmt.Errorf("invalid host %q", authority)
	}
	port = strings.TrimPrefix(rest, ":")
	if port == "" {
		return host, defaultPort, nil
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", "", fmt.Errorf("invalid port %q", port)
	}
	return host, port, nil
}

// validHost accepts what may appear in a Host field: printable ASCII without the delimiters that
// would end the authority. url.Parse already ensures this; a hand-built URL might not.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("/?#@\\", c) >= 0 {
			return false
		}
	}
	return true
}

func checkHeader(h Header) error {
	if !IsToken(h.Name) {
		return fmt.Errorf("invalid header name %q", h.Name)
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(h.Name, r) {
			return fmt.Errorf("header %q is set by httpc", h.Name)
		}
	}
	for i := 0; i < len(h.Value); i++ {
		if c := h.Value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("invalid character %q in header %q", c, h.Name)
		}
	}
	return nil
}

// IsToken reports whether s is an RFC 9110 token, the syntax of methods and field names. The
// emulator's server uses it too.
func IsToken(s string) bool { return isToken(s) }

// isToken is IsToken for strings and for bytes still in the read buffer.
func isToken[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
