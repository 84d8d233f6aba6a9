package sidecar

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// Header is one HTTP header field sent with a probe or a quit call.
type Header struct {
	Name, Value string
}

// CheckKind says how a Check decides that a sidecar is ready.
type CheckKind int

const (
	// HTTPStatus sends Method to URL; any 2xx answer means ready (Dapr answers 204, Envoy 200).
	HTTPStatus CheckKind = iota
	// EnvoyAdmin treats URL as an Envoy admin base URL: GET <URL>/ready must answer 200 (which
	// Envoy does only in state LIVE); an Envoy too old to have /ready answers 404, and then
	// GET <URL>/server_info must report "state": "LIVE" (docs/SIDECARS.md 1.3, 1.4).
	EnvoyAdmin
	// TCP is ready once URL's host and port (tcp://HOST:PORT) accept a connection.
	TCP
)

// Check describes how to tell whether a sidecar is ready.
type Check struct {
	Kind   CheckKind
	URL    string // http:// URL; for EnvoyAdmin the admin base, e.g. http://127.0.0.1:15000; tcp://HOST:PORT for TCP
	Method string // HTTPStatus only; empty means GET
	Status int    // HTTPStatus only: the one status that means ready; zero means any 2xx
	Header []Header
}

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	URL        string        // the URL that gave the verdict
	Ready      bool          // the sidecar is ready
	StatusCode int           // 0 when no answer came
	Body       string        // a short excerpt of the answer, for logs
	Err        error         // why it is not ready; nil when Ready
	Took       time.Duration // how long the probe took
}

// bodyExcerptLimit bounds what a probe reads: Envoy's /server_info is a few KiB of JSON.
const bodyExcerptLimit = 64 << 10

// Probe checks once whether the sidecar is ready; ctx bounds the probe.
func Probe(ctx context.Context, c Check) ProbeResult {
	p := newProber(c, 0)
	defer p.close()
	return p.probe(ctx)
}

// request builds the httpc request for method and rawURL with headers h.
func request(method, rawURL string, h []Header) (*httpc.Request, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	req := &httpc.Request{Method: method, URL: u}
	for _, x := range h {
		req.Header = append(req.Header, httpc.Header{Name: x.Name, Value: x.Value})
	}
	return req, nil
}

// joinPath appends elem to base's path with exactly one slash, so that both
// "http://127.0.0.1:15000" and the article's "http://127.0.0.1:15000/" give ".../ready"
// (scuttle's fmt.Sprintf("%s/server_info") gives "//server_info", which Envoy answers 404).
func joinPath(base, elem string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/" + elem
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + elem
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// excerpt turns a body into one short printable line for logs.
func excerpt(b []byte) string { return string(excerptOf(b)) }

// excerptOf is the part of b that excerpt keeps.
func excerptOf(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > 4096 {
		b = b[:4096]
	}
	return b
}

// StatusError is an answer whose status code means "not ready" or "refused".
type StatusError struct {
	Code   int
	Status string // e.g. "503 Service Unavailable"
	Body   string // excerpt
}

func (e *StatusError) Error() string {
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.Code)
	}
	if e.Body == "" {
		return status
	}
	return fmt.Sprintf("%s: %s", status, shorten(e.Body, 200))
}

// shorten quotes s if it has control characters and cuts it to n bytes for one log line.
func shorten(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}
