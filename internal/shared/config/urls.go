package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"

	"github.com/sidesync/sidesync/internal/shared/redact"
)

// Addresses are parsed strictly, and a refused one is answered with the address to write
// instead: url.Parse alone takes "http://127.0.0.1:" for port 80 and answers a bare
// "127.0.0.1:9901" with "first path segment in URL cannot contain colon".

// parseURL accepts absolute http URLs only: the sidecar endpoints are plain HTTP on loopback,
// and sidesync's client does not speak TLS. The host must be there; a port, if any, is 1-65535.
func parseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, noScheme(s)
	}
	// url.Parse keeps a space of the query as it is, so "http://h/?a #f", its fragment dropped,
	// would be kept as "http://h/?a ", which reads back as another URL (found by FuzzAddress).
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return nil, fmt.Errorf("has a space at byte %d: write a space in a URL as %%20", i)
	}
	if !strings.EqualFold(scheme, "http") {
		return nil, errors.New("must be an http:// URL (like http://127.0.0.1:15000)")
	}
	authority, tail := splitAuthority(rest)
	if err := checkHostPort("http", authority, tail, false); err != nil {
		return nil, err
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %v", errors.Unwrap(err))
	}
	u.Fragment = ""
	// The Config keeps u.String(), which must read back: an IPv6 zone of bytes that are not
	// ASCII ("http://[::%25\x93]") is written escaped, and then refused by url.Parse.
	if again, err := url.Parse(u.String()); err != nil || again.String() != u.String() {
		return nil, errors.New("not a URL: its host does not read back")
	}
	return u, nil
}

// parseTCP accepts tcp://HOST:PORT and nothing more (no user, no path): the address of a
// readiness check that only connects. It returns the address in its canonical form.
func parseTCP(s string) (string, error) {
	authority, tail := splitAuthority(strings.TrimPrefix(strings.TrimSpace(s), "tcp://"))
	user, hostport := cutUserinfo(authority)
	if tail != "" || user != "" {
		return "", fmt.Errorf("must be tcp://HOST:PORT with nothing else: write tcp://%s", hostport)
	}
	if err := checkHostPort("tcp", hostport, "", true); err != nil {
		return "", err
	}
	host, port, _ := cutPort(hostport)
	// A colon in the host is an IPv6 literal's, or the address would not read back: url.Parse
	// takes "tcp://a:b:5432" for host "a:b", which net.JoinHostPort writes as "[a:b]:5432".
	badColon := strings.Contains(host, ":") && net.ParseIP(host) == nil
	if _, err := url.Parse("tcp://" + hostport); err != nil || strings.ContainsAny(host, " %") || badColon {
		return "", fmt.Errorf("%q is not a host name or IP address", host)
	}
	return "tcp://" + net.JoinHostPort(host, port), nil
}

// splitAuthority splits what follows "scheme://" into the authority and the rest (path, query,
// fragment).
func splitAuthority(rest string) (authority, tail string) {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[:i], rest[i:]
	}
	return rest, ""
}

// cutUserinfo splits "user:pw@host:port" at its last "@", as net/url does.
func cutUserinfo(authority string) (userinfo, hostport string) {
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		return authority[:i+1], authority[i+1:]
	}
	return "", authority
}

// cutPort splits "host:port" or "[v6]:port"; colon reports whether a ":" introduced a port.
func cutPort(hostport string) (host, port string, colon bool) {
	if strings.HasPrefix(hostport, "[") {
		if end := strings.Index(hostport, "]"); end >= 0 {
			host, rest := hostport[1:end], hostport[end+1:]
			port, colon = strings.CutPrefix(rest, ":")
			return host, port, colon
		}
	}
	if i := strings.LastIndex(hostport, ":"); i >= 0 {
		return hostport[:i], hostport[i+1:], true
	}
	return hostport, "", false
}

// checkHostPort checks the authority of a scheme:// address: a host, and a port from 1 to
// 65535 after any colon (required if needPort). Each error says what to write instead.
func checkHostPort(scheme, authority, tail string, needPort bool) error {
	user, hostport := cutUserinfo(authority)
	host, port, colon := cutPort(hostport)
	write := func(h, p string) string {
		if p != "" {
			h = net.JoinHostPort(h, p)
		}
		return scheme + "://" + user + h + tail
	}
	switch {
	case host == "":
		return fmt.Errorf("has no host: write %s", write("127.0.0.1", cmp.Or(port, "PORT")))
	case colon && port == "":
		return fmt.Errorf("empty port after the colon: write %s", write(host, "PORT"))
	case colon && !validPort(port):
		return fmt.Errorf("port %q is not in 1-65535", port)
	case needPort && !colon:
		return fmt.Errorf("has no port: write %s", write(host, "PORT"))
	}
	return nil
}

// validPort reports whether p is a port number from 1 to 65535, in digits only.
func validPort(p string) bool {
	if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n := 0
	for _, c := range p {
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

// noScheme explains an address without "scheme://", with the http:// URL to write when s is a
// host and port ("127.0.0.1:9901", "localhost:15000/ready", "http:127.0.0.1:9901").
func noScheme(s string) error {
	if fix, ok := suggestHTTP(s); ok {
		return fmt.Errorf("must be an http:// URL: write %s", fix)
	}
	return errors.New("must be an http:// URL (like http://127.0.0.1:15000)")
}

// suggestHTTP returns s written as an http:// URL, if s is HOST:PORT with an optional path and
// that URL is valid.
func suggestHTTP(s string) (string, bool) {
	rest := s
	if len(s) >= 5 && strings.EqualFold(s[:5], "http:") {
		rest = strings.TrimLeft(s[5:], "/")
	}
	authority, _ := splitAuthority(rest)
	_, hostport := cutUserinfo(authority)
	host, port, colon := cutPort(hostport)
	if host == "" || !colon || !validPort(port) {
		return "", false
	}
	fix := "http://" + rest
	if _, err := parseURL(fix); err != nil {
		return "", false
	}
	return fix, true
}

// maskUserinfo hides a user and password in a value echoed in a message even when it has no
// scheme ("user:pw@127.0.0.1:9901"), which redact.String does not take for a URL.
func maskUserinfo(v string) string {
	if !strings.Contains(v, "@") {
		return v
	}
	parts := strings.Split(v, ",")
	for i, part := range parts {
		at := strings.LastIndex(part, "@")
		if at < 0 || strings.Contains(part, "://") {
			continue // none, or redact.String's business
		}
		start := strings.LastIndexAny(part[:at], " \t\"'") + 1
		parts[i] = part[:start] + redact.Mask + part[at:]
	}
	return strings.Join(parts, ",")
}

// IsLoopback reports whether rawURL names a loopback host: "localhost" or a loopback IP
// literal (127.0.0.0/8, ::1). Other names would need DNS, which could point anywhere.
func IsLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
